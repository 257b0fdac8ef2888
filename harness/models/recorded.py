"""Recorded outputs keyed by sample: from a JSONL file or from an inspect log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.data import iter_jsonl
from harness.errors import HarnessUsageError


@dataclass(frozen=True)
class RecordedOutputs:
    """Outputs by sample id, and by (sample id, epoch) where the source knows epochs."""

    source: str  # the file they came from
    by_id: dict[str, str]  # sample id -> output text (the first epoch seen)
    by_epoch: dict[tuple[str, int], str]  # (sample id, epoch) -> output text

    def lookup(self, sample_id: str, epoch: int) -> str | None:
        """The output for this sample and epoch, falling back to the sample's first output."""
        found = self.by_epoch.get((sample_id, epoch))
        return found if found is not None else self.by_id.get(sample_id)


def load_recorded(path: str) -> RecordedOutputs:
    """Read `{"id", "output"}` JSONL lines, or the samples of an inspect log (.eval / .json).

    Raises:
        HarnessUsageError: the file is missing, or a line is malformed (named by number).

    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise HarnessUsageError(
            f"recorded outputs '{path}' not found; give a JSONL file of "
            '{"id": ..., "output": ...} lines or an inspect log'
        )
    if file.suffix in (".eval", ".json"):
        return _from_log(file)
    by_id: dict[str, str] = {}
    by_epoch: dict[tuple[str, int], str] = {}
    seen: dict[tuple[str, int], int] = {}  # (id, epoch or 0) -> line
    for number, item in iter_jsonl(file):
        if "id" not in item or not isinstance(item.get("output"), str):
            raise HarnessUsageError(
                f'{file} line {number}: expected {{"id": ..., "output": "text"}}; fix the line'
            )
        sid = str(item["id"])
        epoch = item.get("epoch")
        if "epoch" in item and (type(epoch) is not int or epoch < 1):
            raise HarnessUsageError(
                f'{file} line {number}: "epoch" must be a whole number from 1, got '
                f"{json.dumps(epoch)[:40]}; fix the line"
            )
        key = (sid, epoch) if isinstance(epoch, int) else (sid, 0)
        if key in seen:
            where = f" epoch {key[1]}" if key[1] else ""
            raise HarnessUsageError(
                f"{file} line {number}: id '{sid}'{where} again (first at line {seen[key]}); "
                "keep one output per id (and epoch)"
            )
        seen[key] = number
        by_id.setdefault(sid, item["output"])
        if isinstance(epoch, int):
            by_epoch[(sid, epoch)] = item["output"]
    if not seen:
        raise HarnessUsageError(f"{file}: no recorded outputs (the file is empty)")
    return RecordedOutputs(str(file), by_id, by_epoch)


def _from_log(file: Path) -> RecordedOutputs:
    from harness.logs import read_full_log

    log = read_full_log(str(file))
    by_id: dict[str, str] = {}
    by_epoch: dict[tuple[str, int], str] = {}
    for sample in log.samples or []:
        if sample.error is not None or sample.output is None:
            continue  # an errored sample has nothing to replay
        sid = str(sample.id)
        text = sample.output.completion
        by_id.setdefault(sid, text)
        by_epoch[(sid, sample.epoch)] = text
    return RecordedOutputs(str(file), by_id, by_epoch)
