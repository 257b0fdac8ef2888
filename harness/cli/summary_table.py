"""Render `harness eval` summary rows as a terminal table.

Models are shown by short labels, so that a table piped to a file or a CI log still tells them
apart: the name given with `--model-name`, or else the shortest run of trailing path segments of
the spec that no other model's spec ends with (`replay//home/me/runs/r_1` and `.../r_2` become
`r_1` and `r_2`). The full specs are printed once, below the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.cli.run import SummaryRow
from harness.terminal import printable


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


def _number(x: float) -> str:
    """A score for the table: three decimals, or "-" where there is none (nan)."""
    return f"{x:.3f}" if x == x else "-"


def print_headless(records: Sequence[Any], console: Console | None = None) -> None:
    """One line per log whose suite declares no headline metric: where its result is."""
    out = console or Console(width=max(100, Console().width))
    for record in records:
        if record.design.headline == ():
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
