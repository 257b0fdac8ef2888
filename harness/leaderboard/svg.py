"""SVG plots for the leaderboard: a forest plot and a heat map of p-values.

No plotting library, so a site of many suites builds in well under a second and the files stay
small: this module computes the geometry and the Jinja2 templates `forest.svg.j2` and
`heatmap.svg.j2` draw it, autoescaped like the pages (model and task names come from logs).
Each SVG carries a <title> and <desc> for screen readers; the pages embed them as <img> with
alt text.

Colours: every text colour meets WCAG AA (4.5:1) on the fill it is drawn on, the cell labels of
the heat map included (`tests/leaderboard/test_templates.py` checks the drawn files).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.leaderboard.labels import short_labels
from harness.leaderboard.pages import render
from harness.leaderboard.ranking import TaskTable

COLOURS = {
    "page": "#ffffff",  # the plot's background
    "text": "#000000",  # labels, ticks and the legend
    "grid": "#dddddd",  # the forest plot's vertical grid lines
    "mark": "#1f5fa8",  # the forest plot's dots and interval bars
    "legend_edge": "#999999",  # the outline of the heat map's legend swatches
}
UNTESTED = "#eeeeee"  # a heat-map cell with no test (the diagonal); it has no label
# The heat map's scale, darkest first: (p below this, cell fill, label colour on that fill)
HEAT_SCALE = (
    (0.001, "#08306b", "#ffffff"),
    (0.01, "#2171b5", "#ffffff"),
    (0.05, "#6baed6", "#000000"),
    (math.inf, "#f7fbff", "#000000"),
)


def p_label(p: float) -> str:
    """A p-value in a few characters that never reads as 0: "<.001", ".004", "0.23"."""
    if math.isnan(p):
        return "not tested"
    if p < 0.001:
        return "<.001"
    if p < 0.01:
        return f"{p:.3f}".removeprefix("0")
    return f"{p:.2f}"


def p_class(p: float) -> str:
    """The heat map's class of a p-value, as its legend names it: "p<.001" ... "n.s.".

    A cell prints its class, not a rounded number: p = 0.00977 rounds to ".010" but is drawn
    in the p < .01 colour, and the two must not disagree.
    """
    if math.isnan(p):
        return "not tested"
    return next(label for bound, label in P_CLASSES if p < bound)


P_CLASSES = ((0.001, "<.001"), (0.01, "<.01"), (0.05, "<.05"), (math.inf, "n.s."))


def heat_colours(p: float) -> tuple[str, str]:
    """The heat map's (cell fill, label colour) for a Holm-corrected p-value."""
    if math.isnan(p):
        return UNTESTED, COLOURS["text"]
    return next((fill, ink) for bound, fill, ink in HEAT_SCALE if p < bound)


@dataclass(frozen=True)
class _ForestRow:
    y: float  # centre of the row
    label: str  # the model, shortened
    low: float | None  # x of the interval's ends; None: no interval
    high: float | None  # (the other end)
    dot: float  # x of the score


def forest_svg(table: TaskTable) -> str:
    """Each model's score and 95% interval, best first, on a shared axis."""
    rows = table.rows
    label_w, plot_w, row_h, top = 260, 360, 22, 30
    lows = [r.score.low for r in rows if not math.isnan(r.score.low)]
    highs = [r.score.high for r in rows if not math.isnan(r.score.high)]
    lo, hi = (0.0, 1.0)
    if lows and (min(lows) < 0 or max(highs) > 1):
        lo, hi = min(lows), max(highs)
        if hi <= lo:
            hi = lo + 1.0

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    marks = []
    for i, (r, label) in enumerate(
        zip(rows, short_labels([r.model for r in rows], 36), strict=True)
    ):
        has_ci = not math.isnan(r.score.low)
        marks.append(
            _ForestRow(
                y=top + row_h * i + row_h / 2,
                label=label,
                low=x(r.score.low) if has_ci else None,
                high=x(r.score.high) if has_ci else None,
                dot=x(r.score.estimate),
            )
        )
    ticks = [(x(lo + (hi - lo) * k / 5), f"{lo + (hi - lo) * k / 5:.2f}") for k in range(6)]
    height = top + row_h * len(rows) + 40
    return render(
        "forest.svg.j2",
        colours=COLOURS,
        task=table.task,
        width=label_w + plot_w + 30,
        height=height,
        ticks=ticks,
        grid_top=top - 8,
        grid_bottom=top + row_h * len(rows),
        rows=marks,
        label_x=label_w - 8,
        axis_x=label_w + plot_w / 2,
    )


@dataclass(frozen=True)
class _HeatCell:
    x: int  # top-left corner
    y: int
    fill: str  # the cell's colour
    ink: str  # its label's colour
    title: str  # the tooltip: the two models and the p-value
    label: str  # the p-value printed in the cell; "" where the cell is too small or untested


def heatmap_svg(table: TaskTable) -> str:
    """Holm-corrected p-values of every pair of models; darker is more significant."""
    models = [r.model for r in table.rows]
    n = len(models)
    cell, label_w, top = (36 if n <= 12 else 18), 240, 150
    labels = []  # (the model, shortened; y of its row's label; x of its column's label)
    for i, short in enumerate(short_labels(models, 30)):
        labels.append((short, top + cell * i + cell / 2 + 4, label_w + cell * i + cell / 2 + 4))
    cells = []
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            p = math.nan if i == j else table.p_holm(a, b)
            fill, ink = heat_colours(p)
            shown = cell >= 30 and not math.isnan(p)
            cells.append(
                _HeatCell(
                    x=label_w + cell * j,
                    y=top + cell * i,
                    fill=fill,
                    ink=ink,
                    title=f"{a} vs {b}: p = {p:.3g}",
                    label=p_class(p) if shown else "",
                )
            )
    legend = [
        (label, label_w + 80 * k, heat_colours(p)[0])
        for k, (label, p) in enumerate(
            [("p<.001", 0.0005), ("p<.01", 0.005), ("p<.05", 0.02), ("n.s.", 0.5)]
        )
    ]
    return render(
        "heatmap.svg.j2",
        colours=COLOURS,
        task=table.task,
        width=label_w + max(cell * n, 330) + 20,  # room for the legend
        height=top + cell * n + 50,
        top=top,
        cell=cell,
        label_x=label_w - 6,
        labels=labels,
        cells=cells,
        legend=legend,
        legend_y=top + cell * n + 20,
    )
