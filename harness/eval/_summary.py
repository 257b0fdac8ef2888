"""What `harness eval`'s tables show, as data; `harness.cli` only prints it.

Models are shown by short labels, so that a table piped to a file or a CI log still tells them
apart: the name given with `--model-name`, or else the shortest run of trailing path segments of
the spec that no other model's spec ends with (`replay//home/me/runs/r_1` and `.../r_2` become
`r_1` and `r_2`). The full specs are printed once, below the table.

The cost table shows only the columns that hold a number for some model: a column that no model
has (reasoning tokens, dollars without a price, time to first token inspect's providers do not
report) becomes one line saying why, so the table fits a terminal or a CI log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from harness.stats import Interval

Row = TypeVar("Row")


def short_labels(specs: Sequence[str], names: Mapping[str, str] | None = None) -> dict[str, str]:
    """Per model spec, a short label unique among `specs` (`names` overrides, by spec)."""
    names = dict(names or {})
    unique = list(dict.fromkeys(specs))
    parts = {s: [p for p in s.split("/") if p] or [s] for s in unique}
    labels: dict[str, str] = {}
    for spec in unique:
        if spec in names:
            labels[spec] = names[spec]
            continue
        segs = parts[spec]
        for k in range(1, len(segs) + 1):
            tail = segs[-k:]
            if not any(o != spec and parts[o][-k:] == tail for o in unique):
                labels[spec] = "/".join(tail)
                break
        else:
            labels[spec] = spec
    taken = [v for v in labels.values()]
    for spec, label in labels.items():  # a label equal to another's (a name given twice): spec
        if taken.count(label) > 1:
            labels[spec] = spec
    return labels


def headless(records: Sequence[Any]) -> list[Any]:
    """The logs whose suite declares no headline metric: their result is a table, not a score."""
    return [record for record in records if record.design.headline == ()]


Column = tuple[str, Callable[[Row], Interval], Callable[[Interval], str]]


def split_columns(
    columns: Sequence[Column[Row]], rows: Sequence[Row]
) -> tuple[list[Column[Row]], list[str]]:
    """The columns some row has a number in, and for each other one a line saying why not."""
    shown, missing = [], []
    for column in columns:
        name, get, _ = column
        values = [get(r) for r in rows]
        if all(math.isnan(v.estimate) for v in values):
            reasons = sorted({v.method for v in values})
            missing.append(f"{name}: {'; '.join(reasons)}")
        else:
            shown.append(column)
    return shown, missing
