"""`harness reproduce LOG`: run a log's configuration again and say what drifted, field by field.

The configuration comes from the log itself (suite, task arguments, model and its arguments,
epochs, seed, the samples' limit); the comparison from the two manifests (`harness.eval.manifest`):

- data, prompt, code (scorer, solver, task, model provider), judge, sandbox and packages: the
  hashes (and versions) before and after; any difference is a drift, named with what changed;
- outputs: the per-sample output digests on the sample-epochs both runs have; a deterministic
  model (`scripted/`, greedy `local/` models) reproduces them exactly;
- harness (version, commit, dirty) and hardware are shown, not counted: a later commit whose
  code hashes are the same is the same experiment;
- the score: the new one inside or outside the old 95% interval.

With `--limit N` below the old run's samples, the data and outputs are compared on the samples
both runs have. The new log goes to a folder of its own, never one holding logs: `eval_set`
would otherwise reuse the old log and report a reproduction that never ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessUsageError
from harness.eval.manifest import Manifest, manifest_of

Status = Literal["same", "drifted", "differs", "not compared"]
DRIFTS = ("data", "prompt", "code", "judge", "sandbox", "packages", "outputs")
SHOWN = ("harness", "hardware")  # shown, never counted as drift


@dataclass(frozen=True)
class FieldDrift:
    """One field of the manifest, old against new."""

    field: str  # data, prompt, code, judge, sandbox, packages, outputs, harness, hardware
    status: Status  # "same", "drifted" (counted), "differs" (shown only), "not compared"
    detail: str  # what changed, or what was compared


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

    def lines(self) -> list[str]:
        """The report, one line per field, then the score and the verdict."""
        out = [f"reproduced {self.old_log}", f"      as {self.new_log}"]
        out += [f"{f.field:<9} {f.status:<12} {f.detail}" for f in self.fields]
        low, high = self.old_score[1], self.old_score[2]
        where = "inside" if self.inside else "OUTSIDE"
        out.append(f"score     {self.metric} {self.new_score:.3f}, {where} the old 95% interval "
                   f"[{low:.3f}, {high:.3f}] (old {self.old_score[0]:.3f})")  # fmt: skip
        out.append("drifted: " + (", ".join(self.drifted) or "nothing"))
        return out


def _short(h: Any) -> str:
    return str(h)[:12] if h else "none"


def _compare_hash(name: str, old: Any, new: Any) -> FieldDrift:
    if old is None or new is None:
        return FieldDrift(name, "not compared", "not in both manifests")
    if old == new:
        return FieldDrift(name, "same", f"sha256 {_short(old)}")
    return FieldDrift(name, "drifted", f"{_short(old)} -> {_short(new)}")


def _compare_dict(name: str, old: dict[str, Any], new: dict[str, Any]) -> FieldDrift:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if not keys:
        return FieldDrift(name, "same", ", ".join(sorted(old)) or "(none)")
    shown = "; ".join(f"{k} {_short(old.get(k))} -> {_short(new.get(k))}" for k in keys)
    return FieldDrift(name, "drifted", shown)


def _compare_samples(name: str, old: dict[str, str], new: dict[str, str], what: str) -> FieldDrift:
    shared = sorted(set(old) & set(new))
    if not shared:
        return FieldDrift(name, "not compared", f"no {what} in both runs")
    differ = [k for k in shared if old[k] != new[k]]
    if differ:
        return FieldDrift(name, "drifted", f"{len(differ)} of {len(shared)} {what} differ "
                          f"(first: {differ[0]})")  # fmt: skip
    whole = "" if len(shared) == len(old) else f" (of the old run's {len(old)})"
    return FieldDrift(name, "same", f"exact on {len(shared)} {what}{whole}")


def compare_manifests(old: Manifest, new: Manifest) -> tuple[FieldDrift, ...]:
    """Every field of two manifests: drifts first, then what is shown only."""
    fields = [
        _compare_samples("data", old.data.get("per_sample") or {},
                         new.data.get("per_sample") or {}, "samples"),
        _compare_hash("prompt", old.prompt, new.prompt),
        _compare_dict("code", old.code, new.code),
        _compare_dict("judge", old.judge, new.judge),
        _compare_dict("sandbox", old.sandbox, new.sandbox),
        _compare_dict("packages", old.packages, new.packages),
        _compare_samples("outputs", old.output_samples, new.output_samples, "sample-epochs"),
    ]  # fmt: skip
    for name, a, b in (("harness", old.harness, new.harness),
                       ("hardware", old.hardware, new.hardware)):  # fmt: skip
        drift = _compare_dict(name, a, b)
        fields.append(FieldDrift(name, "differs" if drift.status == "drifted" else "same",
                                 drift.detail + (" (shown, not a drift)" if drift.status ==
                                                 "drifted" else "")))  # fmt: skip
    return tuple(fields)


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

    if not Path(path).exists():
        raise HarnessUsageError(f"{path}: no such log")
    record = read_log(path)
    if isinstance(record, BadLog):
        raise HarnessUsageError(f"{path}: cannot be used ({record.reason})")
    manifest = manifest_of(record)
    if manifest is None:
        raise HarnessUsageError(no_manifest_message(path, record))
    return record, manifest


def request_for(path: str, limit: int | None, log_dir: str) -> Any:
    """The `EvalRequest` that runs the log's configuration again."""
    from inspect_ai.log import read_eval_log

    from harness.cli.run import EvalRequest

    spec = read_eval_log(path, header_only=True).eval
    suite = (spec.metadata or {}).get("harness_suite")
    if not suite:
        raise HarnessUsageError(f"{path}: not written by `harness eval` (no harness_suite)")
    task_args = dict(spec.task_args or {})
    data_dir = task_args.pop("data_dir", None)
    return EvalRequest(
        suite=str(suite),
        models=(str(spec.model),),
        limit=limit if limit is not None else spec.config.limit,  # type: ignore[arg-type]
        epochs=int(spec.config.epochs or 1),
        seed=spec.model_generate_config.seed,
        log_dir=log_dir,
        data_dir=data_dir,
        task_args=task_args,
        model_args=dict(spec.model_args or {}),
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


def reproduce(path: str, limit: int | None = None, log_dir: str | None = None) -> Reproduction:
    """Run the configuration of the log at `path` again and compare the two manifests."""
    from harness.cli.run import run_eval_records
    from harness.report.scores import score_rows

    if limit is not None and limit < 1:
        raise HarnessUsageError(f"--limit must be at least 1, got {limit}")
    record, old = load(path)
    req = request_for(path, limit, fresh_log_dir(path, log_dir))
    ok, rows, records = run_eval_records(req)
    mine = [r for r in records if r.task == record.task]
    if not ok or not mine:
        raise HarnessUsageError(f"the new run of {path} did not finish; see {req.log_dir}")
    new_record = mine[0]
    new = manifest_of(new_record)
    if new is None:
        raise ValueError(f"the new log {new_record.path} has no manifest")
    [old_row, *_] = score_rows(record)
    new_row = next(r for r in rows if r.task == record.task and r.metric == old_row.metric)
    inside = old_row.ci_low <= new_row.value <= old_row.ci_high
    return Reproduction(
        old_log=path, new_log=new_record.path, fields=compare_manifests(old, new),
        metric=old_row.metric, old_score=(old_row.value, old_row.ci_low, old_row.ci_high),
        new_score=new_row.value, inside=inside,
    )  # fmt: skip
