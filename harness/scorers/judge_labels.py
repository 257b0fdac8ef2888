"""Read the judge-calibration files of `harness judge estimate`, checking every line.

- Test file: one `{"id": ..., "judge": 0|1}` per line.
- Calibration file: one `{"id": ..., "human": 0|1, "judge": 0|1}` per line.

A malformed line, a missing field, a label other than 0 or 1, or a repeated id is a usage error
that names the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data import iter_jsonl
from harness.errors import HarnessUsageError


@dataclass(frozen=True)
class LabelFile:
    """The ids and 0/1 columns of one file."""

    path: str  # where it came from
    ids: tuple[str, ...]  # item ids, in file order
    columns: dict[str, np.ndarray]  # field -> int array of 0/1


def read_labels(path: str, fields: tuple[str, ...]) -> LabelFile:
    """Read a JSONL file of `id` plus 0/1 `fields`, or raise a one-line usage error."""
    file = Path(path)
    if file.is_dir():
        raise HarnessUsageError(f"'{path}' is a folder; give a JSONL file of labels")
    if not file.is_file():
        raise HarnessUsageError(f"file '{path}' not found (or not a regular file)")
    ids: list[str] = []
    seen: dict[str, int] = {}
    values: dict[str, list[int]] = {f: [] for f in fields}
    for number, row in iter_jsonl(file):
        if "id" not in row:
            raise HarnessUsageError(f"{path} line {number}: missing 'id'")
        item = str(row["id"])
        if item in seen:
            raise HarnessUsageError(
                f"{path} line {number}: id '{item}' repeats line {seen[item]}; ids must be unique"
            )
        seen[item] = number
        ids.append(item)
        for f in fields:
            value = row.get(f)
            if isinstance(value, bool) or value not in (0, 1):
                raise HarnessUsageError(
                    f"{path} line {number}: '{f}' must be 0 or 1, got {value!r}"
                )
            values[f].append(int(value))
    if not ids:
        raise HarnessUsageError(f"{path}: no rows")
    return LabelFile(str(file), tuple(ids), {f: np.array(v, dtype=int) for f, v in values.items()})


def check_disjoint(test: LabelFile, calibration: LabelFile) -> None:
    """Calibration items must not also be test items: that double-counts them."""
    both = set(test.ids) & set(calibration.ids)
    if both:
        example = sorted(both)[0]
        raise HarnessUsageError(
            f"{len(both)} id(s) appear in both {test.path} and {calibration.path} "
            f"(e.g. '{example}'); keep calibration items out of the test file"
        )
