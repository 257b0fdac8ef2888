"""Turn `harness eval` arguments into one inspect `eval_set` call and a summary table.

The summary is computed from each log's per-sample data, read by `harness.logs` and summarised
by `harness.report.scores` (the same rows `harness report` and the leaderboard print), never
from metric names: one row per task, model and metric, with n, the errored problems, the score
and its 95% interval with the method named. Errored samples stay in n and count as wrong.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cli.eval_checks import (
    check_distinct,
    check_hub_reachable,
    check_samples,
    one_line,
    provider_start_error,
    set_aside_unreadable_logs,
)
from harness.cli.typed_args import typed
from harness.errors import HarnessUsageError
from harness.paths import cache_dir, writable_dir
from harness.report.scores import SummaryRow
from harness.suites.catalog import Suite, get_suite


@dataclass(frozen=True)
class EvalRequest:
    """What `harness eval` was asked to do."""

    suite: str  # suite name
    models: tuple[str, ...]  # model specs, for example ("local/tiny-arith",)
    limit: int | None = None  # samples per task
    epochs: int = 1  # samples per problem
    seed: int | None = None  # generation seed passed to every model
    log_dir: str = "logs"  # where inspect writes (and resumes) logs
    data_dir: str | None = None  # local data folder, else HARNESS_DATA_DIR, else the hub
    task_args: dict[str, Any] = field(default_factory=dict)  # -T
    model_args: dict[str, Any] = field(default_factory=dict)  # -M
    # inspect's retry, timeout and connection settings, under its names; None is inspect's default
    max_retries: int | None = None  # retries per model call (inspect: unbounded)
    timeout: int | None = None  # seconds per model call, retries included
    attempt_timeout: int | None = None  # seconds per attempt before it is abandoned and retried
    max_connections: int | None = None  # concurrent calls per model (else the provider's own)
    display: str | None = None  # inspect display: full, rich, plain, log, none
    until: str | None = None  # "decided": stop asking a model once its pairs are resolved
    margin: float = 0.05  # equivalence margin of --until decided
    budget: int | None = None  # items per model at most, with --until decided
    order_seed: int = 0  # the shared random order of items, with --until decided
    width: float | None = None  # with --until decided and one model: stop below this width
    active: bool = False  # with --until decided: add one model to --history, items chosen actively
    history: tuple[str, ...] = ()  # past logs of other models, for --active
    model_cost_config: str | None = None  # inspect's price file (YAML or JSON of ModelCost)
    cost_limit: float | None = None  # inspect's per-sample cost limit in dollars
    only_task: str | None = None  # run this one of the suite's tasks (`harness reproduce`)
    max_work: float | None = None  # a task's work limit, in its own unit (else its default)


def build_tasks(
    suite: Suite, task_args: dict[str, Any], data_dir: str | None, max_work: float | None = None
) -> list[Any]:
    """Instantiate the suite's tasks, checking every -T key against the tasks' parameters.

    A key goes to each task that takes it; one that no task of the suite takes is an error.
    Each task checks its arguments' ranges and its work estimate (against `max_work`, else its
    default limit) before it builds a sample (`harness.suites.arg_ranges`).
    """
    from harness.suites.arg_ranges import work_limit

    functions = suite.tasks
    params = {fn: inspect.signature(fn).parameters for fn in functions}
    known = dict.fromkeys(p for ps in params.values() for p in ps)  # in signature order
    unknown = sorted(set(task_args) - set(known))
    if unknown:
        names = "', '".join(fn.__name__ for fn in functions)
        raise HarnessUsageError(
            f"suite '{suite.name}' task '{names}' has no argument "
            f"{', '.join(repr(u) for u in unknown)}; its -T arguments are: "
            f"{', '.join(p for p in known if p != 'data_dir') or '(none)'}"
        )
    tasks = []
    for fn in functions:
        args = typed(fn, {k: v for k, v in task_args.items() if k in params[fn]}, "-T")
        if "data_dir" in params[fn] and data_dir is not None:
            args["data_dir"] = data_dir
        try:
            with work_limit(max_work):
                tasks.append(fn(**args))
        except ValueError as ex:  # inspect's "dataset is empty", a task's own range check
            raise HarnessUsageError(
                f"suite '{suite.name}' task '{fn.__name__}' cannot be built from its -T "
                f"arguments: {one_line(str(ex))}"
            ) from None
    return tasks


def build_models(specs: tuple[str, ...], model_args: dict[str, Any], seed: int | None) -> list[Any]:
    """Resolve model specs to inspect `Model`s, turning unknown providers into usage errors."""
    from inspect_ai.model import GenerateConfig, get_model

    check_distinct(specs)
    models = []
    for spec in specs:
        provider, sep, name = spec.partition("/")
        if not sep or not provider or not name:
            raise HarnessUsageError(
                f"model spec '{spec}' needs the form PROVIDER/NAME, for example local/tiny-arith"
            )
        args = provider_args(provider, spec, model_args)
        if provider == "replay" and Path(name).expanduser().exists():
            # the identity is the absolute path: a retry or `inspect score` from another folder
            # finds the file, and one relative name used in two folders is not one model
            spec = f"replay/{Path(name).expanduser().resolve()}"
        if provider == "hf":
            check_hub_reachable(spec)
        try:
            models.append(get_model(spec, config=GenerateConfig(seed=seed), **args))
        except ValueError as ex:
            if "not recognized" not in str(ex) and "Model name" not in str(ex):
                raise
            raise HarnessUsageError(
                f"unknown model provider '{provider}' in '{spec}'; use local/, replay/, "
                f"scripted/ or an inspect-ai provider such as openai/, anthropic/, hf/, vllm/"
            ) from None
        except TypeError as ex:
            raise HarnessUsageError(f"bad -M argument for {spec}: {ex}") from None
        except HarnessUsageError:
            raise
        except Exception as ex:  # an API key, a package or a connection missing
            from harness.models.providers import provider_class

            if provider_class(provider) is not None:
                raise  # our own providers check their input; anything else is a bug
            raise provider_start_error(spec, ex) from None
    return models


def provider_args(provider: str, spec: str, model_args: dict[str, Any]) -> dict[str, Any]:
    """-M arguments typed by a harness provider's constructor; unknown keys listed as errors.

    inspect-ai's own providers take their arguments as read.
    """
    from harness.models.providers import provider_class

    cls = provider_class(provider)
    if cls is None:
        return model_args
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    valid = [k for k in params if k not in ("self", "model_name", "config", "base_url", "api_key")]
    unknown = sorted(set(model_args) - set(params))
    if unknown and not takes_any:
        raise HarnessUsageError(
            f"{spec} has no -M argument {', '.join(repr(u) for u in unknown)}; "
            f"its -M arguments are: {', '.join(valid) or '(none)'}"
        )
    return typed(cls, model_args, "-M")


def check_model_needed(tasks: list[Any], specs: tuple[str, ...]) -> None:
    """A task whose metadata says `harness_needs_model` (why) is not run on `none/none`."""
    for task in tasks:
        why = (task.metadata or {}).get("harness_needs_model")
        if why and "none/none" in specs:
            raise HarnessUsageError(
                f"{why}, and the model is none/none; give one with --model, for example "
                "openai/gpt-4o-mini"
            )


def check_replay_ids(models: list[Any], tasks: list[Any], limit: int | None) -> None:
    """Recorded outputs against each task's sample ids, before anything runs.

    None matching in any task is a usage error showing the ids each side has; a partial match
    is said on stderr as a count (samples without an output will error and count as wrong).
    """
    for model in models:
        recorded = getattr(model.api, "recorded", None)
        if recorded is None:
            continue
        counts = []
        for task in tasks:
            ids = [str(s.id) for s in list(task.dataset)[:limit]]
            counts.append((task.name, ids, sum(1 for i in ids if i in recorded.by_id)))
        if not any(found for _, _, found in counts):
            theirs = ", ".join(list(recorded.by_id)[:3])
            ours = "; ".join(f"'{name}': {', '.join(ids[:3])}" for name, ids, _ in counts)
            raise HarnessUsageError(
                f"{recorded.source}: none of its ids ({theirs}, ...) is a sample id of the "
                f'suite\'s tasks, whose ids are like {ours}; write those in the "id" field'
            )
        for name, ids, found in counts:
            if found < len(ids):
                print(
                    f"harness: {recorded.source}: {found} of {len(ids)} samples of '{name}' "
                    f"have an output; the other {len(ids) - found} will error",
                    file=sys.stderr,
                )


def method_descriptions(models: list[Any]) -> dict[str, dict[str, Any]]:
    """Settings (prompt version, what is reconstructed) of each method-wrapped model, by name."""
    return {str(m): m.api.describe() for m in models if callable(getattr(m.api, "describe", None))}


def with_budget_recording(task: Any) -> Any:
    """The task with a last solver step that copies the sample's method budgets to metadata."""
    from inspect_ai import task_with
    from inspect_ai.solver import chain

    from harness.models.methods.record import record_method_budgets

    return task_with(task, solver=chain(task.solver, record_method_budgets()))


def run_eval(req: EvalRequest) -> tuple[bool, list[SummaryRow]]:
    """Run the suite on every model through `eval_set`; whether all finished, and the rows."""
    ok, rows, _ = run_eval_records(req)
    return ok, rows


def run_eval_records(req: EvalRequest) -> tuple[bool, list[SummaryRow], list[Any]]:
    """Run the suite on every model through `eval_set` and summarise each log.

    Re-running the same request after a crash reuses the finished samples in `log_dir` and
    runs only the missing ones.

    Returns:
        Whether every task finished, the summary rows, and the logs read (`LogRecord`s).

    """
    from inspect_ai import Epochs, eval_set
    from inspect_ai.scorer import pass_at

    from harness.data import resolve_data_dir
    from harness.logs import BadLog, read_log
    from harness.report.scores import score_rows

    if req.epochs < 1:
        raise HarnessUsageError(f"--epochs must be at least 1, got {req.epochs}")
    if req.limit is not None and req.limit < 1:
        raise HarnessUsageError(f"--limit must be at least 1, got {req.limit}")
    suite = get_suite(req.suite)
    writable_dir(req.log_dir, "--log-dir")
    cache_dir()  # a HARNESS_CACHE_DIR that cannot be a folder is named before any work
    specs = req.models or ((suite.default_model,) if suite.default_model else ())
    if not specs:
        raise HarnessUsageError(f"suite '{suite.name}' needs --model, for example local/tiny-arith")
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
    if req.max_retries is not None and req.max_retries < 0:
        raise HarnessUsageError(f"--max-retries must be at least 0, got {req.max_retries}")
    for flag, value in (
        ("--timeout", req.timeout),
        ("--attempt-timeout", req.attempt_timeout),
        ("--max-connections", req.max_connections),
    ):
        if value is not None and value < 1:
            raise HarnessUsageError(f"{flag} must be at least 1, got {value}")
    if req.model_cost_config is not None or req.cost_limit is not None:
        from harness.eval.pricing import apply_prices

        apply_prices(req.model_cost_config, req.cost_limit, models)
    connections = req.max_connections or max(m.api.max_connections() for m in models)
    epochs = Epochs(req.epochs, ["mean", pass_at(req.epochs)]) if req.epochs > 1 else None
    set_aside_unreadable_logs(req.log_dir)
    from harness.eval.manifest import MANIFEST_KEY, data_identity, run_manifest, write_outputs

    manifest = run_manifest(tasks, functions, models, req.task_args, req.limit)
    # the identity's data hash over the samples' full content (never the log's thinned copy)
    extra: dict[str, Any] = {MANIFEST_KEY: manifest, "harness_data_hash": data_identity(manifest)}
    if req.until is not None:
        from harness.board.live_run import decided_tasks

        score_type = suite.design.score
        if score_type == "unbounded":
            raise HarnessUsageError(
                f"--until decided needs scores in [0, 1]; suite '{suite.name}' declares "
                "unbounded scores"
            )

        def fresh() -> list[Any]:
            return build_tasks(suite, req.task_args, str(folder) if folder else None, req.max_work)

        tasks, decided = decided_tasks(fresh, models, req, cluster=suite.design.cluster)
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
            "harness_suite": suite.name,
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
    records = []
    for log in logs:
        if log.location:
            if log.status == "success":
                write_outputs(log.location)  # the outputs' hash exists only now
            record = read_log(log.location)
            if isinstance(record, BadLog):
                raise HarnessUsageError(f"cannot read the log just written: {record.reason}")
            rows.extend(score_rows(record))  # all of them: `harness eval` prints the headline
            records.append(record)
    return ok, rows, records
