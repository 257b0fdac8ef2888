"""`harness eval`'s second table: each log's cost and latency per unit, with intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def print_costs(records: Sequence[Any], console: Console | None = None) -> None:
    """One line per log: tokens, dollars (or why unknown), $ per correct, working seconds."""
    from harness.report.cost import cost_row, cost_table

    if not records:
        return
    caption, head, body = cost_table([cost_row([r]) for r in records])
    table = Table(title="cost and latency", title_justify="left", caption=caption,
                  caption_justify="left")  # fmt: skip
    for name in head:
        table.add_column(name, justify="right" if name == "n" else "left")
    for row in body:
        table.add_row(*row)
    (console or Console(width=max(100, Console().width))).print(table)
