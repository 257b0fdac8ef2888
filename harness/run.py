"""Turn `harness eval` arguments into one inspect `eval_set` call and a summary table.

The summary is computed from per-sample data (`inspect_ai.analysis.samples_df`), never from
metric names: one row per task, model and metric, with n, the errored samples, the score and its
95% interval with the method named. Binary scores get Wilson intervals; per-problem means over
epochs get t intervals. Errored samples stay in n and count as wrong.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.errors import HarnessUsageError
from harness.stats.intervals import Interval, t_interval, wilson
from harness.stats.pass_at_k import pass_at_k
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
    display: str | None = None  # inspect display: full, rich, plain, log, none


@dataclass(frozen=True)
class SummaryRow:
    """One score line of `harness eval`."""

    suite: str  # suite name
    task: str  # task name
    model: str  # model spec
    metric: str  # "accuracy", "pass@K", or "mean"
    n: int  # problems scored (errored ones included)
    errors: int  # samples whose model call or solver raised
    value: float  # the score
    ci_low: float  # lower end of the 95% interval
    ci_high: float  # upper end of the 95% interval
    ci_method: str  # how the interval was made
    log: str  # the inspect log it came from

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (nan becomes None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def build_tasks(suite: Suite, task_args: dict[str, Any], data_dir: str | None) -> list[Any]:
    """Instantiate the suite's tasks, checking every -T key against the tasks' parameters.

    A key goes to each task that takes it; one that no task of the suite takes is an error.
    """
    params = {fn: inspect.signature(fn).parameters for fn in suite.tasks}
    known = dict.fromkeys(p for ps in params.values() for p in ps)  # in signature order
    unknown = sorted(set(task_args) - set(known))
    if unknown:
        names = "', '".join(fn.__name__ for fn in suite.tasks)
        raise HarnessUsageError(
            f"suite '{suite.name}' task '{names}' has no argument "
            f"{', '.join(repr(u) for u in unknown)}; its -T arguments are: "
            f"{', '.join(p for p in known if p != 'data_dir') or '(none)'}"
        )
    tasks = []
    for fn in suite.tasks:
        args = {k: v for k, v in task_args.items() if k in params[fn]}
        if "data_dir" in params[fn] and data_dir is not None:
            args["data_dir"] = data_dir
        tasks.append(fn(**args))
    return tasks


def build_models(specs: tuple[str, ...], model_args: dict[str, Any], seed: int | None) -> list[Any]:
    """Resolve model specs to inspect `Model`s, turning unknown providers into usage errors."""
    from inspect_ai.model import GenerateConfig, get_model

    models = []
    for spec in specs:
        provider, sep, name = spec.partition("/")
        if not sep or not provider or not name:
            raise HarnessUsageError(
                f"model spec '{spec}' needs the form PROVIDER/NAME, for example local/tiny-arith"
            )
        try:
            models.append(get_model(spec, config=GenerateConfig(seed=seed), **model_args))
        except ValueError as ex:
            if "not recognized" not in str(ex) and "Model name" not in str(ex):
                raise
            raise HarnessUsageError(
                f"unknown model provider '{provider}' in '{spec}'; use local/, replay/, "
                f"scripted/ or an inspect-ai provider such as openai/, anthropic/, hf/, vllm/"
            ) from None
        except TypeError as ex:
            raise HarnessUsageError(f"bad -M argument for {spec}: {ex}") from None
    return models


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
    """Run the suite on every model through `eval_set` and summarise each log.

    Re-running the same request after a crash reuses the finished samples in `log_dir` and
    runs only the missing ones.

    Returns:
        Whether every task finished, and the summary rows.

    """
    from inspect_ai import Epochs, eval_set
    from inspect_ai.scorer import pass_at

    from harness.data import resolve_data_dir

    if req.epochs < 1:
        raise HarnessUsageError(f"--epochs must be at least 1, got {req.epochs}")
    if req.limit is not None and req.limit < 1:
        raise HarnessUsageError(f"--limit must be at least 1, got {req.limit}")
    suite = get_suite(req.suite)
    specs = req.models or ((suite.default_model,) if suite.default_model else ())
    if not specs:
        raise HarnessUsageError(f"suite '{suite.name}' needs --model, for example local/tiny-arith")
    folder = resolve_data_dir(req.data_dir)
    tasks = build_tasks(suite, req.task_args, str(folder) if folder else None)
    models = build_models(specs, req.model_args, req.seed)
    methods = method_descriptions(models)
    if methods:
        tasks = [with_budget_recording(t) for t in tasks]
    connections = max(m.api.max_connections() for m in models)
    epochs = Epochs(req.epochs, ["mean", pass_at(req.epochs)]) if req.epochs > 1 else None
    ok, logs = eval_set(
        tasks,
        log_dir=req.log_dir,
        model=models,
        limit=req.limit,
        epochs=epochs,
        score_on_error=True,
        fail_on_error=False,
        retry_attempts=1,
        log_dir_allow_dirty=True,
        max_connections=connections,
        max_samples=connections,
        display=req.display,  # type: ignore[arg-type]
        metadata={"harness_suite": suite.name, **({"harness_methods": methods} if methods else {})},
        # the realtime event buffer costs ~25% of inspect's per-sample time on 2 cores (measured
        # with scripted/, 500 samples: 8.3 s vs 6.3 s); resume after SIGKILL works without it,
        # from the samples already flushed to the .eval file (tests/test_resume.py)
        log_realtime=False,
    )
    rows: list[SummaryRow] = []
    for log in logs:
        if log.location:
            task = log.eval.task.split("/")[-1]
            rows.extend(summarize_log(log.location, suite.name, task, str(log.eval.model)))
    return ok, rows


def summarize_log(location: str, suite: str, task: str, model: str) -> list[SummaryRow]:
    """Summary rows for one log, computed from its per-sample data."""
    from inspect_ai.analysis import samples_df

    df = samples_df(location, quiet=True)
    if df.empty:
        return []
    score_cols = [c for c in df.columns if c.startswith("score_")]
    n_errors = int(((df["error"].fillna("") != "").sum()))
    rows = []
    for col in score_cols:
        judged = _judge_columns(df[col])
        if judged is not None:
            base = {"suite": suite, "task": task, "model": model, "errors": n_errors}
            rows += _judge_rows(judged, base, location)
            continue
        per_id = df.groupby("id")[col].apply(list)
        values = {sid: [score_to_float(v) for v in vs] for sid, vs in per_id.items()}
        binary = all(v in (0.0, 1.0) for vs in values.values() for v in vs)
        n = len(values)
        base = {"suite": suite, "task": task, "model": model, "n": n, "errors": n_errors}
        metric = "accuracy" if binary else col.removeprefix("score_")
        epochs = max(len(vs) for vs in values.values())
        if epochs == 1 and binary:
            correct = int(sum(vs[0] for vs in values.values()))
            rows.append(_row(base, metric, wilson(correct, n), location))
            continue
        means = [sum(vs) / len(vs) for vs in values.values()]
        rows.append(_row(base, metric, t_interval(means), location))
        if binary and epochs > 1:
            passes = [pass_at_k(len(vs), int(sum(vs)), epochs) for vs in values.values()]
            rows.append(_row(base, f"pass@{epochs}", t_interval(passes), location))
    return rows


def _judge_columns(column: Any) -> list[dict] | None:
    """Parsed `{"judge", "human"}` values of a calibrated-judge score column, else None."""
    first = column.dropna().iloc[0] if column.notna().any() else None
    if not (isinstance(first, str) and first.startswith("{") and '"human"' in first):
        return None
    return [json.loads(v) if isinstance(v, str) else {"judge": 0, "human": -1} for v in column]


def _judge_rows(values: list[dict], base: dict[str, Any], location: str) -> list[SummaryRow]:
    """The naive judge share (Wilson) and the Rogan-Gladen corrected one, or why it is refused."""
    from harness.scorers.calibrated_judge import split_verdicts
    from harness.stats.judge_calibration import CalibrationError, rogan_gladen_from_labels

    test, human, judge = split_verdicts(values)
    naive = wilson(sum(test), len(test))
    rows = [_row({**base, "n": len(test)}, "judge (naive)", naive, location)]
    try:
        est = rogan_gladen_from_labels(test, human, judge)
        ci = Interval(est.estimate, est.low, est.high, 0.95, "rogan-gladen", len(test))
    except (CalibrationError, ValueError) as ex:
        ci = Interval(math.nan, math.nan, math.nan, 0.95, f"refused: {ex}", len(test))
    rows.append(_row({**base, "n": len(test)}, "judge (corrected)", ci, location))
    return rows


def _row(base: dict[str, Any], metric: str, ci: Interval, location: str) -> SummaryRow:
    return SummaryRow(
        metric=metric,
        value=ci.estimate,
        ci_low=ci.low,
        ci_high=ci.high,
        ci_method=ci.method,
        log=location,
        **base,
    )


def score_to_float(value: Any) -> float:
    """Inspect's score values as floats: C/I/P/N letters, booleans or numbers."""
    letters = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
    if isinstance(value, str):
        if value in letters:
            return letters[value]
        if value.startswith("{") and '"judge"' in value:  # a calibrated judge's verdict
            return float(json.loads(value)["judge"])
        try:
            return float(value)
        except ValueError:
            return 0.0
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return 0.0  # an unscored sample counts as wrong
    return float(value)
