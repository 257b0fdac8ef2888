"""Every eval log the harness reads goes through this module.

`harness eval`'s summary, `harness report`, the leaderboard, the token budgets and the runs of
suites that train all read logs here, so they see the same samples, the same errors and the
same identity.

- `read_log(path)` gives a `LogRecord` (the header and one `SampleScore` per sample and epoch),
  or a `BadLog` with its reason. It parses a finished `.eval` zip directly (fast), and falls
  back to inspect-ai's own reader for `.json` logs and other layouts; a file neither can read is
  a `BadLog`, never skipped.
- A log's `LogIdentity` is its suite, task, task arguments, a hash of its dataset's sample ids,
  and its model and model arguments. Two logs are compared only when all but the model agree
  (`LogIdentity.comparable`). `select_logs` keeps the newest finished log of each identity and
  lists the others as superseded.
- `read_full_log`, `read_samples` and `load_training_runs` read whole samples (outputs, and
  metadata beyond the summaries' thinned copy): for replayed outputs, SuCo's trajectories and
  the suites that train.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError

# Task arguments that say where data lives or where and how much runs at once, not what is
# measured: two logs that differ only in these are the same run (a data folder differs between
# machines; a sweep may move from local workers to a Ray cluster).
SETTING_ONLY_TASK_ARGS = frozenset({"data_dir", "workers", "executor", "cpus_per_run"})

# JSON files that eval_set, inspect's viewer bundle and the leaderboard write next to logs
NOT_LOGS = frozenset({"logs.json", "eval-set.json", "listing.json", "leaderboard.json"})

LETTER_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


@dataclass(frozen=True)
class LogIdentity:
    """What a log measured: two logs are comparable when all but the model agree."""

    suite: str  # harness suite (eval metadata `harness_suite`), else the task name
    task: str  # task name, without a package prefix
    task_args: tuple[tuple[str, str], ...]  # sorted (name, JSON value), settings left out
    sample_hash: str  # first 12 hex digits of the SHA-256 of the sorted sample ids
    n_ids: int  # how many sample ids the dataset had
    model: str  # model spec
    model_args: tuple[tuple[str, str], ...]  # sorted (name, JSON value)

    @property
    def comparable(self) -> tuple[str, str, tuple[tuple[str, str], ...], str]:
        """The key two logs must share to be compared: everything but the model."""
        return (self.suite, self.task, self.task_args, self.sample_hash)

    @property
    def model_label(self) -> str:
        """The model spec, with its arguments where it has any."""
        if not self.model_args:
            return self.model
        return f"{self.model} ({', '.join(f'{k}={v}' for k, v in self.model_args)})"

    def args_text(self) -> str:
        """The task arguments as `k=v, ...` (empty when there are none)."""
        return ", ".join(f"{k}={v}" for k, v in self.task_args)


@dataclass(frozen=True)
class SampleScore:
    """One sample and epoch of a log, as every reader sees it."""

    id: str  # sample id
    epoch: int  # 1-based epoch
    raw: tuple[tuple[str, Any], ...]  # (scorer, score value as logged), in the log's order
    error: str  # why the sample errored ("" when it did not)
    metadata: dict[str, Any]  # the sample's metadata (the summaries' thinned copy)
    usage: dict[str, Any]  # model_usage: tokens by model


@dataclass(frozen=True)
class LogRecord:
    """One finished log: its identity, header fields and samples."""

    path: str  # the log file
    identity: LogIdentity  # what it measured
    created: str  # when the eval was created (ISO time)
    metadata: dict[str, Any]  # the eval's metadata (harness_suite, harness_methods, preset...)
    samples: tuple[SampleScore, ...]  # one per sample and epoch

    @property
    def suite(self) -> str:
        """The harness suite."""
        return self.identity.suite

    @property
    def task(self) -> str:
        """The task name."""
        return self.identity.task

    @property
    def model(self) -> str:
        """The model as tables show it (spec and arguments)."""
        return self.identity.model_label

    @property
    def scorers(self) -> tuple[str, ...]:
        """The scorers' names, in the log's order."""
        names: dict[str, None] = {}
        for s in self.samples:
            names.update(dict.fromkeys(name for name, _ in s.raw))
        return tuple(names)


@dataclass(frozen=True)
class BadLog:
    """A log that is not used, and why."""

    path: str  # the log file
    reason: str  # one line


@dataclass(frozen=True)
class Selection:
    """The logs under some folders: those used, and the others with their reasons."""

    used: tuple[LogRecord, ...]  # newest finished log of each identity, sorted
    left_out: tuple[BadLog, ...]  # unreadable, unfinished or superseded, sorted by path


def parse_score(value: Any) -> tuple[float, str]:
    """A logged score value as (float, ""), or (0.0, reason) when it cannot be read as one.

    C/I/P/N letters, booleans, numbers and numeric strings are read; a calibrated judge's
    `{"judge", "human"}` verdict reads as its `judge`. None, NaN and any other string are
    unscored: 0.0 with the reason, which callers count as an error.
    """
    if isinstance(value, dict):
        if "judge" in value:
            return float(value["judge"]), ""
        return 0.0, f"unparseable score {json.dumps(value)[:60]}"
    if isinstance(value, str):
        if value in LETTER_SCORES:
            return LETTER_SCORES[value], ""
        if value.startswith("{") and '"judge"' in value:
            return parse_score(json.loads(value))
        try:
            number = float(value)
        except ValueError:
            return 0.0, f"unparseable score {value[:60]!r}"
        return (number, "") if math.isfinite(number) else (0.0, f"unscored ({value})")
    if value is None:
        return 0.0, "unscored (no value)"
    if isinstance(value, bool | int | float):
        number = float(value)
        return (number, "") if math.isfinite(number) else (0.0, f"unscored ({value})")
    return 0.0, f"unparseable score of type {type(value).__name__}"


def judge_verdict(value: Any) -> dict[str, int] | None:
    """A calibrated judge's `{"judge", "human"}` verdict, else None."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, dict) and "judge" in value and "human" in value:
        return {"judge": int(value["judge"]), "human": int(value["human"])}
    return None


SECRET_WORDS = ("key", "token", "secret", "password", "auth", "credential")


def _canonical(args: dict[str, Any] | None, drop: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """Sorted (name, JSON value) pairs; a value whose name looks secret becomes a short hash.

    The hash keeps two runs with different keys apart without printing the key in a table.
    """
    out = []
    for k, v in sorted((args or {}).items()):
        if k in drop:
            continue
        text = json.dumps(v, sort_keys=True, default=str)
        if any(word in k.lower() for word in SECRET_WORDS) and v not in (None, ""):
            text = "<redacted #" + hashlib.sha256(text.encode()).hexdigest()[:6] + ">"
        out.append((k, text))
    return tuple(out)


def identity_of(spec: dict[str, Any], ids: Iterable[str]) -> LogIdentity:
    """The identity of a log from its `eval` header and its sample ids."""
    meta = spec.get("metadata") or {}
    task = str(spec["task"]).split("/")[-1]
    listed = (spec.get("dataset") or {}).get("sample_ids")
    sample_ids = sorted({str(i) for i in (listed if listed else ids)})
    digest = hashlib.sha256("\n".join(sample_ids).encode()).hexdigest()[:12]
    return LogIdentity(
        suite=str(meta.get("harness_suite") or task),
        task=task,
        task_args=_canonical(spec.get("task_args"), SETTING_ONLY_TASK_ARGS),
        sample_hash=digest,
        n_ids=len(sample_ids),
        model=str(spec["model"]),
        model_args=_canonical(spec.get("model_args"), frozenset()),
    )


def _read_fast(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and sample summaries of a finished `.eval` zip, parsed as plain JSON.

    About 10x faster than building inspect's pydantic models, which keeps a 50-log leaderboard
    build within seconds. Its members are zstd-compressed: `zipfile_zstd` (declared in
    pyproject.toml for Pythons before 3.14, whose zipfile reads zstd itself) registers that.
    """
    import sys
    import zipfile

    if sys.version_info < (3, 14):
        import zipfile_zstd  # noqa: F401

    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("header.json"))
        if header.get("status") != "success":
            return header, []
        return header, json.loads(z.read("summaries.json"))


def _read_inspect(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The same through inspect's reader: `.json` logs, and `.eval` logs of other layouts."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    header = read_eval_log(path, header_only=True).model_dump(mode="json", exclude={"samples"})
    if header.get("status") != "success":
        return header, []
    return header, [s.model_dump(mode="json") for s in read_eval_log_sample_summaries(path)]


def _read_header_and_summaries(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import zipfile

    if path.endswith(".eval") and "://" not in path:  # a remote log (s3://...): inspect's reader
        try:
            return _read_fast(path)
        except (KeyError, zipfile.BadZipFile, json.JSONDecodeError, NotImplementedError):
            pass  # another layout or a damaged zip: inspect's reader decides, with its reason
    return _read_inspect(path)


def _error_text(error: Any) -> str:
    if not error:
        return ""
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    return (message or "error").splitlines()[0][:160] if message else "error"


def read_log(path: str) -> LogRecord | BadLog:
    """One log as a `LogRecord`, or a `BadLog` saying why it cannot be used."""
    if "://" not in path and not Path(path).is_file():  # a FIFO would block the reader
        return BadLog(path, "not a regular file")
    try:
        header, summaries = _read_header_and_summaries(path)
    except Exception as ex:  # a truncated zip, invalid JSON, a foreign file: listed, not raised
        return BadLog(path, f"unreadable: {type(ex).__name__}: {str(ex)[:160]}")
    status = header.get("status")
    if status != "success":
        error = _error_text(header.get("error"))
        detail = f": {error}" if error else ""
        what = {"started": "unfinished (still running or half-written)"}.get(status, status)
        return BadLog(path, f"{what}{detail}")
    try:
        samples = tuple(
            SampleScore(
                id=str(s["id"]),
                epoch=int(s.get("epoch") or 1),
                raw=tuple(
                    (name, (score or {}).get("value"))
                    for name, score in (s.get("scores") or {}).items()
                ),
                error=_error_text(s.get("error")),
                metadata=s.get("metadata") or {},
                usage=s.get("model_usage") or {},
            )
            for s in summaries
        )
        if not samples:
            return BadLog(path, "no samples")
        spec = header["eval"]
        return LogRecord(
            path=path,
            identity=identity_of(spec, (s.id for s in samples)),
            created=str(spec.get("created", "")),
            metadata=spec.get("metadata") or {},
            samples=samples,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as ex:
        return BadLog(path, f"malformed log: {type(ex).__name__}: {str(ex)[:160]}")


def log_files(dirs: Iterable[str]) -> list[str]:
    """Every log file under the folders (.eval, and .json other than known non-logs), sorted.

    Files are listed by name, not opened, so that an unreadable log is reported by `read_log`
    with its reason instead of skipped.
    """
    paths: set[str] = set()
    dirs = list(dirs)
    for d in dirs:
        if not Path(d).is_dir():
            raise HarnessUsageError(f"log folder '{d}' does not exist")
        for p in Path(d).rglob("*"):
            if "_journal" in p.parts or p.is_dir() or p.name in NOT_LOGS:
                continue
            if p.suffix == ".eval" or (p.suffix == ".json" and p.parent.name != "assets"):
                paths.add(str(p))
    return sorted(paths)


def select_logs(results: Iterable[LogRecord | BadLog]) -> Selection:
    """The newest log of each identity; older ones of the same identity are superseded."""
    results = list(results)
    left_out = [r for r in results if isinstance(r, BadLog)]
    newest: dict[LogIdentity, LogRecord] = {}
    records = sorted((r for r in results if isinstance(r, LogRecord)), key=lambda r: r.created)
    for record in records:
        if record.identity in newest:
            old = newest[record.identity]
            left_out.append(BadLog(old.path, f"superseded by the newer {record.path}"))
        newest[record.identity] = record
    used = sorted(newest.values(), key=lambda r: (r.suite, r.task, r.identity.task_args, r.model))
    return Selection(tuple(used), tuple(sorted(left_out, key=lambda b: b.path)))


def read_logs(dirs: Iterable[str], threads: int = 4) -> Selection:
    """Read every log under `dirs` and select the ones to use."""
    dirs = list(dirs)
    paths = log_files(dirs)
    if not paths:
        raise HarnessUsageError(f"no inspect logs under {', '.join(dirs)}; run `harness eval`")
    with ThreadPoolExecutor(max_workers=threads) as pool:  # zip reads release the GIL
        return select_logs(pool.map(read_log, paths))


def read_full_log(location: str) -> Any:
    """A whole log (inspect's `EvalLog`, samples included), or a usage error saying why not.

    Read in a worker thread: inspect's reader runs its own event loop, which must not share the
    caller's thread state with a later in-process eval (that corrupts the next eval's loop).
    """
    from inspect_ai.log import read_eval_log

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(read_eval_log, location).result()
    except Exception as ex:  # inspect raises many types for a file that is not a log
        raise HarnessUsageError(f"{location}: not a readable inspect log ({ex})") from None


def read_samples(location: str) -> list[Any]:
    """The whole samples of a log (inspect's `EvalSample`), for metadata the summaries thin."""
    return list(read_full_log(location).samples or [])


def load_training_runs(location: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """One dict per finished sample: `metadata.<key>` for each key, then the run's own fields.

    Reads the full metadata (a run's curves exceed what the summaries keep); errored or
    unfinished samples, which have no run, are left out.
    """
    runs = []
    for sample in read_samples(location):
        meta = sample.metadata or {}
        run = meta.get("run")
        run = json.loads(run) if isinstance(run, str) else run
        if isinstance(run, dict) and not sample.error:
            runs.append({**{key: meta.get(key) for key in keys}, **run})
    return runs
