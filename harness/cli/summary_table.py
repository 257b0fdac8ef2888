"""Render `harness eval` summary rows as a terminal table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from harness.cli.run import SummaryRow


def print_rows(rows: Sequence[SummaryRow], console: Console | None = None) -> None:
    """One line per task, model and metric: score, 95% interval with its method, errors."""
    table = Table(title="harness eval", title_justify="left")
    flags = any(r.flagged for r in rows)  # integrity flags (SWE) beside the errors, where any
    names = ("suite", "task", "model", "metric", "n", "errors", *(("flagged",) if flags else ()),
             "score", "95% CI", "method")  # fmt: skip
    for name in names:
        right = name in ("n", "errors", "flagged", "score")
        table.add_column(name, justify="right" if right else "left")
    for r in rows:
        cells = (
            r.suite,
            r.task,
            r.model,
            r.metric,
            str(r.n),
            str(r.errors),
            *((str(r.flagged),) if flags else ()),
            f"{r.value:.3f}",
            f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
            r.ci_method,
        )
        table.add_row(*cells)
    (console or Console(width=max(100, Console().width))).print(table)
