"""`harness reproduce LOG`: run a log's configuration again and say, field by field, what drifted.

The configuration comes from the log itself (suite, task arguments, model, its arguments and
base URL, epochs, seed, the samples' limit); the comparison from the two manifests, field by
field (`harness.eval._drift`): data (every sample's full content, the whole hash and the count),
prompt, code (every harness file the task, scorers, solvers and model provider import), judge,
sandbox, packages (every distribution imported, with its dependencies) and outputs. harness
(version, commit) and hardware are shown, not counted.

The verdict: "nothing drifted" only when all of those match (exit 0); any drift is named and
exits 1 (outputs alone: said so, a nondeterministic model's expected drift, with whether the
new score lies in the old interval); nothing drifted in what could be compared, but an older
manifest left something unchecked: named, exit 3.

The flow is small steps (`load`, `request_for`, `fresh_log_dir`, `plan`, `run_again`, `compare`)
so that a step can go between them. A log is someone else's file: `plan` says what will run
(provider, endpoint, keys, paths, limits, time) before anything does, and refuses an endpoint
or a path the user did not name, or a wait past `--max-wait` (`harness.eval._reproduce_plan`).
The new log goes to a folder of its own, never one holding logs: `eval_set` would otherwise
reuse the old log and report a reproduction that never ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError
from harness.eval._drift import DRIFTS, SHOWN, FieldDrift, compare_manifests
from harness.eval._manifest import Manifest, manifest_of
from harness.eval._reproduce_plan import MAX_WAIT, Consent, Plan, plan_of
from harness.eval._request import EvalRequest

__all__ = [
    "DRIFTS", "MAX_WAIT", "SHOWN", "Consent", "FieldDrift", "Plan", "Reproduction",
    "compare_manifests", "plan", "prepare", "refuse", "reproduce",
]  # fmt: skip

EXIT_DRIFTED = 1  # something drifted
EXIT_UNCHECKED = 3  # nothing drifted in what was compared, but something could not be


@dataclass(frozen=True)
class Reproduction:
    """What `harness reproduce` found."""

    old_log: str  # the log reproduced
    new_log: str  # the log of the new run
    fields: tuple[FieldDrift, ...]  # DRIFTS then SHOWN
    metric: str  # the score compared (the first score row)
    old_score: tuple[float, float, float]  # value, low, high of the old run
    new_score: float  # the new run's value
    inside: bool  # whether the new score lies in the old interval

    @property
    def drifted(self) -> tuple[str, ...]:
        """The fields that drifted."""
        return tuple(f.field for f in self.fields if f.status == "drifted")

    @property
    def unchecked(self) -> tuple[str, ...]:
        """The counted fields that could not be compared, or only in part."""
        partial = ("not compared", "partly compared")
        return tuple(f.field for f in self.fields if f.field in DRIFTS and f.status in partial)

    @property
    def exit_code(self) -> int:
        """0: nothing drifted; 1: something drifted; 3: nothing drifted, not all checked."""
        if self.drifted:
            return EXIT_DRIFTED
        return EXIT_UNCHECKED if self.unchecked else 0

    def verdict(self) -> list[str]:
        """The last lines: what drifted, or that nothing did, and what was not checked."""
        where = "inside" if self.inside else "OUTSIDE"
        if self.drifted == ("outputs",):
            out = [f"drifted: outputs only: the same data, prompt, code, packages, judge and "
                   f"sandbox gave other outputs (a nondeterministic model or provider: the one "
                   f"drift to expect); the new score is {where} the old 95% interval"]  # fmt: skip
        elif self.drifted:
            out = ["drifted: " + ", ".join(self.drifted)]
        elif self.unchecked:
            out = ["drifted: none found in what could be compared"]
        else:
            out = ["nothing drifted"]
        if self.unchecked:
            out.insert(0, "not checked: " + ", ".join(self.unchecked) + " (see above)")
        return out

    def lines(self) -> list[str]:
        """The report, one line per field, then the score and the verdict."""
        out = [f"reproduced {self.old_log}", f"      as {self.new_log}"]
        out += [f"{f.field:<9} {f.status:<15} {f.detail}" for f in self.fields]
        low, high = self.old_score[1], self.old_score[2]
        where = "inside" if self.inside else "OUTSIDE"
        out.append(f"score     {self.metric} {self.new_score:.3f}, {where} the old 95% interval "
                   f"[{low:.3f}, {high:.3f}] (old {self.old_score[0]:.3f})")  # fmt: skip
        return out + self.verdict()


def no_manifest_message(path: str, record: Any) -> str:
    """The one line for a log without a manifest: what can still be compared."""
    ident = record.identity
    return (
        f"{path} has no manifest (written before `harness eval` wrote manifests, or by plain "
        f"inspect); what can still be compared: its identity (task {ident.task}, model "
        f"{ident.model_label}, data #{ident.sample_hash} over {ident.n_ids} samples) and its "
        "scores, by running the same `harness eval` and `harness report` on both logs"
    )


def load(path: str) -> tuple[Any, Manifest]:
    """The log's record and manifest, or a usage error that says why not."""
    from harness.logs import BadLog, read_log
    from harness.suites.catalog import catalog_design

    if not Path(path).exists():
        raise HarnessUsageError(f"{path}: no such log")
    record = read_log(path, catalog_design)
    if isinstance(record, BadLog):
        raise HarnessUsageError(f"{path}: cannot be used ({record.reason})")
    manifest = manifest_of(record)
    if manifest is None:
        raise HarnessUsageError(no_manifest_message(path, record))
    return record, manifest


def request_for(path: str, limit: int | None, log_dir: str) -> EvalRequest:
    """The `EvalRequest` that runs the log's configuration again."""
    from inspect_ai.log import read_eval_log

    from harness.logs import SUITE_KEY

    spec = read_eval_log(path, header_only=True).eval
    suite = (spec.metadata or {}).get(SUITE_KEY)
    if not suite:
        raise HarnessUsageError(f"{path}: not written by `harness eval` (no {SUITE_KEY})")
    task_args = dict(spec.task_args or {})
    data_dir = task_args.pop("data_dir", None)
    model_args = dict(spec.model_args or {})
    if spec.model_base_url:  # the endpoint the model was asked at
        model_args.setdefault("base_url", spec.model_base_url)
    return EvalRequest(
        suite=str(suite),
        models=(str(spec.model),),
        limit=limit if limit is not None else spec.config.limit,  # type: ignore[arg-type]
        epochs=int(spec.config.epochs or 1),
        seed=spec.model_generate_config.seed,
        log_dir=log_dir,
        data_dir=data_dir,
        task_args=task_args,
        model_args=model_args,
        display="none",
        only_task=str(spec.task).split("/")[-1],
    )


def fresh_log_dir(path: str, log_dir: str | None) -> str:
    """A folder for the new log that holds no log (made new when not given)."""
    from datetime import datetime, timezone

    if log_dir is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        log_dir = str(Path("reproduced") / f"{Path(path).stem}-{stamp}")
    folder = Path(log_dir)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise HarnessUsageError(
            f"--log-dir {log_dir} is not empty: give a new folder (inspect would reuse a log "
            "there instead of running again)"
        )
    return log_dir


def plan(path: str, req: EvalRequest, old: Manifest, consent: Consent) -> Plan:
    """What the request will run, read before it runs (see `harness.eval._reproduce_plan`)."""
    from inspect_ai.log import read_eval_log

    spec = read_eval_log(path, header_only=True).eval
    whole = old.data.get("dataset") if isinstance(old.data.get("dataset"), dict) else {}
    n = whole.get("n") if isinstance(whole, dict) else None
    n = n if isinstance(n, int) and not isinstance(n, bool) else spec.dataset.samples
    return plan_of(req, spec, n, consent)


def refuse(steps: Plan) -> None:
    """A usage error naming everything the user has not consented to, or nothing."""
    if steps.refusals:
        raise HarnessUsageError("reproduce refused, nothing ran: " + "; ".join(steps.refusals))


def prepare(path: str, limit: int | None, log_dir: str | None,
            consent: Consent) -> tuple[Any, Manifest, EvalRequest, Plan]:  # fmt: skip
    """The log's record and manifest, the request that runs it again, and its plan."""
    if limit is not None and limit < 1:
        raise HarnessUsageError(f"--limit must be at least 1, got {limit}")
    if not (consent.max_wait >= 0):  # NaN included
        raise HarnessUsageError(f"--max-wait must be a number of seconds >= 0, got "
                                f"{consent.max_wait}")  # fmt: skip
    record, old = load(path)
    req = request_for(path, limit, fresh_log_dir(path, log_dir))
    return record, old, req, plan(path, req, old, consent)


def run_again(path: str, record: Any, req: EvalRequest) -> tuple[Any, list[Any]]:
    """Run the request; the new log's record and the summary rows, or a usage error."""
    from harness.eval._runner import run

    ok, rows, records = run(req)
    mine = [r for r in records if r.task == record.task]
    if not ok or not mine:
        raise HarnessUsageError(f"the new run of {path} did not finish; see {req.log_dir}")
    return mine[0], rows


def compare(path: str, record: Any, old: Manifest, new_record: Any, rows: list[Any],
            limited: bool) -> Reproduction:  # fmt: skip
    """The two manifests and scores compared."""
    from harness.compare import score_rows

    new = manifest_of(new_record)
    if new is None:
        raise ValueError(f"the new log {new_record.path} has no manifest")
    [old_row, *_] = score_rows(record)
    new_row = next(r for r in rows if r.task == record.task and r.metric == old_row.metric)
    inside = old_row.ci_low <= new_row.value <= old_row.ci_high
    return Reproduction(
        old_log=path, new_log=new_record.path, fields=compare_manifests(old, new, limited),
        metric=old_row.metric, old_score=(old_row.value, old_row.ci_low, old_row.ci_high),
        new_score=new_row.value, inside=inside,
    )  # fmt: skip


def reproduce(path: str, limit: int | None = None, log_dir: str | None = None,
              consent: Consent | None = None,
              show: Callable[[str], None] | None = None) -> Reproduction:  # fmt: skip
    """Run the configuration of the log at `path` again and compare the two manifests.

    The plan is given to `show` line by line before anything runs; what the user has not
    consented to (`consent`: endpoints, paths, the longest wait) is refused in one line.
    """
    record, old, req, steps = prepare(path, limit, log_dir, consent or Consent())
    if show is not None:
        for line in steps.lines():
            show(line)
    refuse(steps)
    new_record, rows = run_again(path, record, req)
    limited = limit is not None and limit < int(old.data.get("n") or 0)
    return compare(path, record, old, new_record, rows, limited)
