"""Read eval logs for the leaderboard: headers and per-sample score summaries, never full samples.

A log that cannot be used (errored, cancelled, still running or half-written, unreadable, or
with no scored sample) becomes a `BadLog` with its reason; every other log is kept. When several
usable logs share a task and model, the newest (by the eval's creation time) is used and the
others are listed as superseded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError


@dataclass(frozen=True)
class LogEntry:
    """One usable log: a model's per-sample scores on one task."""

    path: str  # the log file
    suite: str  # harness suite (task metadata `harness_suite`), else the task name
    task: str  # task name, without a package prefix
    model: str  # model spec
    created: str  # when the eval was created (ISO time)
    values: dict[str, float]  # sample id -> score (mean over epochs), errored samples as 0
    errors: int  # samples whose solver or model call raised
    judge: tuple[dict[str, int], ...] = ()  # calibrated-judge verdicts {"judge", "human"}, if any


@dataclass(frozen=True)
class BadLog:
    """A log left out of the site, and why."""

    path: str  # the log file
    reason: str  # one line


@dataclass(frozen=True)
class Collected:
    """What a folder of logs holds."""

    entries: tuple[LogEntry, ...]  # newest usable log per task and model
    bad: tuple[BadLog, ...]  # logs left out, each with its reason


def _value(value: Any) -> float:
    """A score value as a float: a judge verdict's `judge`, else as `harness eval` reads it."""
    from harness.run import score_to_float

    if isinstance(value, dict):
        return float(value.get("judge", 0.0))
    return score_to_float(value)


def _judge(value: Any) -> dict[str, int] | None:
    if isinstance(value, str) and value.startswith("{"):
        value = json.loads(value)
    if isinstance(value, dict) and "judge" in value and "human" in value:
        return {"judge": int(value["judge"]), "human": int(value["human"])}
    return None


def _read_fast(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and sample summaries of a finished .eval log as plain JSON, without validation.

    A finished .eval log is a zip holding `header.json` and `summaries.json` (zstd-compressed;
    the `zipfile_zstd` patch that inspect-ai depends on lets the standard zipfile read them).
    Parsing the JSON directly is ~10x faster than building inspect's pydantic models, which is
    what keeps a 50-log build within seconds. Anything else raises, and the caller falls back to
    inspect's own reader.
    """
    import zipfile

    import zipfile_zstd  # noqa: F401  (registers zstd with zipfile; a dependency of inspect-ai)

    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("header.json"))
        if header.get("status") != "success":
            return header, []
        return header, json.loads(z.read("summaries.json"))


def _read_slow(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The same through inspect's reader: .json logs, and .eval logs of other layouts."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    header = read_eval_log(path, header_only=True).model_dump(mode="json", exclude={"samples"})
    if header.get("status") != "success":
        return header, []
    return header, [s.model_dump(mode="json") for s in read_eval_log_sample_summaries(path)]


def read_entry(path: str) -> LogEntry | BadLog:
    """One log as a `LogEntry`, or a `BadLog` saying why it cannot be used."""
    try:
        try:
            header, summaries = _read_fast(path)
        except Exception:
            header, summaries = _read_slow(path)
    except Exception as ex:  # a truncated zip, invalid JSON, a foreign file
        return BadLog(path, f"unreadable: {type(ex).__name__}: {str(ex)[:160]}")
    status = header.get("status")
    if status != "success":
        error = (header.get("error") or {}).get("message") or ""
        detail = f": {error.splitlines()[0][:160]}" if error else ""
        what = {"started": "unfinished (still running or half-written)"}.get(status, status)
        return BadLog(path, f"{what}{detail}")
    per_id: dict[str, list[float]] = {}
    judge: list[dict[str, int]] = []
    errors = 0
    for s in summaries:
        errors += bool(s.get("error"))
        scores = s.get("scores") or {}
        score = next(iter(scores.values()), None)
        raw = score.get("value") if score else None
        verdict = _judge(raw)
        if verdict is not None:
            judge.append(verdict)
        per_id.setdefault(str(s["id"]), []).append(0.0 if s.get("error") else _value(raw))
    if not per_id:
        return BadLog(path, "no samples")
    spec = header["eval"]
    meta = spec.get("metadata") or {}
    task = str(spec["task"]).split("/")[-1]
    return LogEntry(
        path=path,
        suite=str(meta.get("harness_suite") or task),
        task=task,
        model=str(spec["model"]),
        created=str(spec.get("created", "")),
        values={sid: sum(v) / len(v) for sid, v in per_id.items()},
        errors=errors,
        judge=tuple(judge),
    )


# JSON files that eval_set, inspect's viewer bundle and the leaderboard write next to logs
NOT_LOGS = {"logs.json", "eval-set.json", "listing.json", "leaderboard.json"}


def log_files(dirs: Iterable[str]) -> list[str]:
    """Every log file under the folders (.eval, and .json other than known non-logs), sorted.

    Files are listed by name, not opened, so that an unreadable log is reported by
    `read_entry` with its reason instead of silently skipped.
    """
    paths: set[str] = set()
    for d in dirs:
        if not Path(d).is_dir():
            raise HarnessUsageError(f"log folder '{d}' does not exist")
        for p in Path(d).rglob("*"):
            if "_journal" in p.parts or not p.is_file() or p.name in NOT_LOGS:
                continue
            if p.suffix == ".eval" or (p.suffix == ".json" and p.parent.name != "assets"):
                paths.add(str(p))
    return sorted(paths)


def collect(dirs: Iterable[str], threads: int = 4) -> Collected:
    """Read every log under `dirs`; keep the newest usable one per task and model."""
    paths = log_files(dirs)
    if not paths:
        raise HarnessUsageError(f"no inspect logs under {', '.join(dirs)}; run `harness eval`")
    with ThreadPoolExecutor(max_workers=threads) as pool:  # zip reads release the GIL
        results = list(pool.map(read_entry, paths))
    bad = [r for r in results if isinstance(r, BadLog)]
    newest: dict[tuple[str, str], LogEntry] = {}
    for entry in sorted((r for r in results if isinstance(r, LogEntry)), key=lambda e: e.created):
        key = (entry.task, entry.model)
        if key in newest:
            bad.append(BadLog(newest[key].path, f"superseded by the newer {entry.path}"))
        newest[key] = entry
    entries = sorted(newest.values(), key=lambda e: (e.suite, e.task, e.model))
    return Collected(tuple(entries), tuple(sorted(bad, key=lambda b: b.path)))
