"""Print `harness eval`'s second table: each log's cost and latency per unit, with intervals.

Which columns show, and why the others do not, is `harness.eval._summary.split_columns`; models
are shown by the summary table's short labels. `harness report` keeps the full table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.stats import Interval
from harness.terminal import printable


def print_costs(records: Sequence[Any], console: Console | None = None,
                names: Mapping[str, str] | None = None) -> None:  # fmt: skip
    """One line per log: tokens, dollars (or why unknown), $ per correct, working seconds."""
    from harness.eval import short_labels, split_columns
    from harness.report import TOKEN_KINDS, cost_row, money

    if not records:
        return
    rows = [cost_row([r]) for r in records]
    unit = rows[0].unit if len({r.unit for r in rows}) == 1 else "unit"

    def tokens(ci: Interval) -> str:
        return ci.text(".1f")

    def seconds(ci: Interval) -> str:
        return ci.text(".3f")

    columns: list[tuple[str, Callable[[Any], Interval], Callable[[Interval], str]]] = [
        *((f"{kind} tokens", lambda r, k=kind: r.tokens[k], tokens) for kind in TOKEN_KINDS),
        (f"$ per {unit}", lambda r: r.dollars, money),
        ("$ per correct", lambda r: r.per_correct, money),
        ("working s", lambda r: r.seconds, seconds),
        ("first token s", lambda r: r.ttft, seconds),
    ]
    shown, missing = split_columns(columns, rows)
    labels = short_labels([r.model for r in rows], names)
    table = Table(title=f"cost and latency per {unit} (95% intervals over {unit}s: t on the log "
                  "scale of the mean, never below 0)", title_justify="left")  # fmt: skip
    widest = max(map(len, labels.values()))
    for name in ("task", "model", "n", *(s[0] for s in shown), "manifest"):
        whole = name in ("model", "n", "manifest")  # never cut: the row must say whose it is
        table.add_column(name, justify="right" if name == "n" else "left", no_wrap=whole,
                         overflow="fold",
                         min_width=widest if name == "model" else None)  # fmt: skip
    for r in rows:
        cells = []
        for _, get, fmt in shown:
            ci = get(r)
            cells.append(ci.method if math.isnan(ci.estimate) else fmt(ci))
        row = (r.task, labels[r.model], str(r.n), *cells, r.manifest or "none")
        table.add_row(*(printable(c) for c in row))  # names come from logs: no escapes
    out = console or Console(width=max(100, Console().width))
    out.print(table)
    for line in missing:
        out.print(f"  {printable(line)}", highlight=False, soft_wrap=True)
