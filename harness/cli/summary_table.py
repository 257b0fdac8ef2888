"""Print `harness eval` summary rows as a terminal table (labels: `harness.eval._summary`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from harness.eval import headless, short_labels
from harness.terminal import printable

if TYPE_CHECKING:
    from harness.compare import SummaryRow


def _number(x: float) -> str:
    """A score for the table: three decimals, or "-" where there is none (nan)."""
    return f"{x:.3f}" if x == x else "-"


def print_headless(records: Sequence[Any], console: Console | None = None) -> None:
    """One line per log whose suite declares no headline metric: where its result is."""
    out = console or Console(width=max(100, Console().width))
    for record in headless(records):
        suite, task, model, path = (
            printable(x) for x in (record.suite, record.task, record.model, record.path)
        )
        out.print(
            f"{suite} {task} ({model}): the result is a table, not one score: "
            f"`harness report {path}` gives the {suite} section",
            highlight=False,
            soft_wrap=True,
        )


def print_rows(
    rows: Sequence[SummaryRow],
    console: Console | None = None,
    names: Mapping[str, str] | None = None,
) -> None:
    """One line per task, model and metric: score, 95% interval with its method, errors."""
    labels = short_labels([r.model for r in rows], names)
    table = Table(title="harness eval", title_justify="left")
    flags = any(r.flagged for r in rows)  # integrity flags (SWE) beside the errors, where any
    names = ("suite", "task", "model", "metric", "n", "errors", *(("flagged",) if flags else ()),
             "score", "95% CI", "method")  # fmt: skip
    for name in names:
        right = name in ("n", "errors", "flagged", "score")
        table.add_column(name, justify="right" if right else "left", overflow="fold")  # never "…"
    for r in rows:
        cells = (
            r.suite,
            r.task,
            labels[r.model],
            r.metric,
            str(r.n),
            str(r.errors),
            *((str(r.flagged),) if flags else ()),
            _number(r.value),
            f"[{_number(r.ci_low)}, {_number(r.ci_high)}]" if r.ci_low == r.ci_low else "-",
            r.ci_method,
        )
        table.add_row(*(printable(c) for c in cells))  # names come from logs: no escapes
    out = console or Console(width=max(100, Console().width))
    out.print(table)
    shown = [(printable(label), printable(spec)) for spec, label in labels.items() if label != spec]
    if shown:
        out.print("models: " + "; ".join(f"{label} = {spec}" for label, spec in shown),
                  highlight=False, soft_wrap=True)  # fmt: skip
