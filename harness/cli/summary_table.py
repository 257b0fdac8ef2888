"""Render `harness eval` summary rows as a terminal table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from harness.cli.run import SummaryRow


def print_rows(rows: Sequence[SummaryRow], console: Console | None = None) -> None:
    """One line per task, model and metric: score, 95% interval with its method, errors."""
    table = Table(title="harness eval", title_justify="left")
    for name in ("suite", "task", "model", "metric", "n", "errors", "score", "95% CI", "method"):
        table.add_column(name, justify="right" if name in ("n", "errors", "score") else "left")
    for r in rows:
        table.add_row(
            r.suite,
            r.task,
            r.model,
            r.metric,
            str(r.n),
            str(r.errors),
            f"{r.value:.3f}",
            f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
            r.ci_method,
        )
    (console or Console(width=max(100, Console().width))).print(table)
