"""`harness.eval.run(request)`: the suite on every model through one inspect `eval_set` call.

The summary is computed from each log's per-sample data, read by `harness.logs` and summarised
by `harness.compare._scores` (the same rows `harness report` and the leaderboard print), never
from metric names: one row per task, model and metric, with n, the errored problems, the score
and its 95% interval with the method named. Errored samples stay in n and count as wrong.

`--until NAME` shapes the tasks with the stopping rule registered under that name (kind
`until` in `harness.registry`; `decided` is `harness.board._live_run.decided_tasks`).
"""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

from harness.compare import SummaryRow
from harness.errors import HarnessUsageError
from harness.eval._build import (
    build_models,
    build_tasks,
    method_descriptions,
    with_budget_recording,
)
from harness.eval._checks import (
    check,
    check_model_needed,
    check_replay_ids,
    check_samples,
    model_specs,
    set_aside_unreadable_logs,
)
from harness.eval._request import EvalRequest
from harness.logs import SUITE_KEY, LogRecord
from harness.paths import cache_dir, writable_dir
from harness.suites.catalog import catalog_design, get_suite


class EvalResult(NamedTuple):
    """What a run gives: whether every task finished, the summary rows, and the logs read."""

    ok: bool
    rows: list[SummaryRow]
    records: list[LogRecord]


def run(req: EvalRequest) -> EvalResult:
    """Run the suite on every model through `eval_set` and summarise each log.

    Re-running the same request after a crash reuses the finished samples in `log_dir` and
    runs only the missing ones.
    """
    from inspect_ai import Epochs, eval_set
    from inspect_ai.scorer import pass_at

    from harness import registry
    from harness.compare import score_rows
    from harness.data import resolve_data_dir
    from harness.logs import BadLog, read_log

    suite = get_suite(req.suite)
    check(req, suite)
    writable_dir(req.log_dir, "--log-dir")
    cache_dir()  # a HARNESS_CACHE_DIR that cannot be a folder is named before any work
    specs = model_specs(req, suite)
    # only a suite that loads data checks the data folder (arith makes its own from a seed)
    takes_data = any("data_dir" in inspect.signature(fn).parameters for fn in suite.tasks)
    if req.data_dir is not None and not takes_data:
        resolve_data_dir(req.data_dir)  # named, so checked, though this suite makes its data
    folder = resolve_data_dir(req.data_dir) if takes_data else None
    tasks = build_tasks(suite, req.task_args, str(folder) if folder else None, req.max_work)
    functions = list(suite.tasks)
    if req.only_task is not None:
        keep = [str(t.name).split("/")[-1] == req.only_task for t in tasks]
        tasks = [t for t, k in zip(tasks, keep, strict=True) if k]
        functions = [f for f, k in zip(functions, keep, strict=True) if k]
        if not tasks:
            raise HarnessUsageError(f"suite '{suite.name}' has no task '{req.only_task}'")
    check_samples(tasks, req.limit, req.epochs)
    models = build_models(specs, req.model_args, req.seed)
    check_model_needed(tasks, specs)
    check_replay_ids(models, tasks, req.limit)
    methods = method_descriptions(models)
    if methods:
        tasks = [with_budget_recording(t) for t in tasks]
    if req.model_cost_config is not None or req.cost_limit is not None:
        from harness.eval._pricing import apply_prices

        apply_prices(req.model_cost_config, req.cost_limit, models)
    connections = req.max_connections or max(m.api.max_connections() for m in models)
    epochs = Epochs(req.epochs, ["mean", pass_at(req.epochs)]) if req.epochs > 1 else None
    set_aside_unreadable_logs(req.log_dir)
    from harness.eval._manifest import MANIFEST_KEY, data_identity, run_manifest, write_outputs

    manifest = run_manifest(tasks, functions, models, req.task_args, req.limit)
    # the identity's data hash over the samples' full content (never the log's thinned copy)
    extra: dict[str, Any] = {MANIFEST_KEY: manifest, "harness_data_hash": data_identity(manifest)}
    if req.until is not None:

        def fresh() -> list[Any]:
            return build_tasks(suite, req.task_args, str(folder) if folder else None, req.max_work)

        shape = registry.get("until", req.until)  # checked: a name registered for `until`
        tasks, decided = shape(
            fresh, models, req, designs=catalog_design, cluster=suite.design.cluster
        )
        extra.update(decided)
    ok, logs = eval_set(
        tasks,
        log_dir=req.log_dir,
        model=None if req.until is not None else models,
        max_tasks=len(tasks) if req.until is not None else None,
        limit=req.limit,
        epochs=epochs,
        score_on_error=True,
        fail_on_error=False,
        retry_attempts=1,
        log_dir_allow_dirty=True,
        max_connections=connections,
        max_samples=1 if req.active else connections,  # active: one item at a time
        display=req.display,  # type: ignore[arg-type]
        max_retries=req.max_retries,
        timeout=req.timeout,
        attempt_timeout=req.attempt_timeout,
        metadata={
            SUITE_KEY: suite.name,
            **({"harness_methods": methods} if methods else {}),
            **extra,
        },  # fmt: skip
        # the realtime event buffer costs ~25% of inspect's per-sample time on 2 cores (measured
        # with scripted/, 500 samples: 8.3 s vs 6.3 s); resume after SIGKILL works without it,
        # from the samples already flushed to the .eval file (tests/api/test_resume_faults.py)
        log_realtime=False,
        model_cost_config=req.model_cost_config,
        cost_limit=req.cost_limit,
    )
    rows: list[SummaryRow] = []
    records: list[LogRecord] = []
    for log in logs:
        if log.location:
            if log.status == "success":
                write_outputs(log.location)  # the outputs' hash exists only now
            record = read_log(log.location, catalog_design)
            if isinstance(record, BadLog):
                raise HarnessUsageError(f"cannot read the log just written: {record.reason}")
            rows.extend(score_rows(record))  # all of them: `harness eval` prints the headline
            records.append(record)
    return EvalResult(ok, rows, records)
