"""The accuracy-cost frontier of a task as an SVG: both axes with 95% intervals.

The numbers are the frontier's (`harness.report._frontier`); this module only places them. Filled
points are on the frontier, hollow ones are not; a model of unknown cost is named under the plot
and in its description, never drawn at 0. Colours are the forest plot's (`svg.COLOURS`), which
meet WCAG AA on the white page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.leaderboard.labels import short_labels
from harness.leaderboard.pages import render
from harness.leaderboard.svg import COLOURS
from harness.report import Frontier


@dataclass(frozen=True)
class _Point:
    x: float  # the cost's position
    y: float  # the accuracy's position
    x_low: float | None  # the cost interval's ends (None: no interval)
    x_high: float | None
    y_low: float | None  # the accuracy interval's ends
    y_high: float | None
    front: bool  # on the frontier
    label: str  # the model, shortened
    title: str  # the tooltip: every number


def _ticks(lo: float, hi: float, digits: int) -> list[tuple[float, str]]:
    return [(lo + (hi - lo) * k / 4, f"{lo + (hi - lo) * k / 4:.{digits}g}") for k in range(5)]


def frontier_svg(frontier: Frontier) -> str:
    """The frontier plot of one task."""
    left, right, top, bottom = 70, 590, 20, 300
    known = [p for p in frontier.points if p.cost is not None and not math.isnan(p.cost.estimate)]
    xs = [v for p in known for v in (p.cost.low, p.cost.high, p.cost.estimate)  # type: ignore[union-attr]
          if not math.isnan(v)]  # fmt: skip
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    pad = (x_hi - x_lo) * 0.1 or max(abs(x_hi) * 0.1, 1e-9)
    x_lo, x_hi = max(0.0, x_lo - pad), x_hi + pad

    def x(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * (right - left)

    def y(v: float) -> float:
        return bottom - min(1.0, max(0.0, v)) * (bottom - top)

    labels = short_labels([p.model for p in known], 28)
    points = []
    for p, label in zip(known, labels, strict=True):
        c, a = p.cost, p.accuracy  # type: ignore[union-attr]
        prob = "–" if math.isnan(p.probability) else f"{p.probability:.2f}"
        points.append(_Point(
            x=x(c.estimate), y=y(a.estimate),
            x_low=x(c.low) if c.estimable else None, x_high=x(c.high) if c.estimable else None,
            y_low=y(a.low) if a.estimable else None, y_high=y(a.high) if a.estimable else None,
            front=p.on_frontier, label=label,
            title=(f"{p.model}: accuracy {a.text('.3f')}, {frontier.axis} per {frontier.unit} "
                   f"{c.text('.6g')}, P(on frontier) {prob}"),
        ))  # fmt: skip
    front = sorted((q for q in points if q.front), key=lambda q: q.x)
    line = [(a.x, a.y, b.x, b.y) for a, b in zip(front, front[1:], strict=False)]
    unknown = [p.model for p in frontier.points if p not in known]
    legend_lines = [f"{label}: P(on frontier) = "
                    f"{'–' if math.isnan(p.probability) else f'{p.probability:.2f}'}"
                    for p, label in zip(known, labels, strict=True)]  # fmt: skip
    if unknown:
        legend_lines.append("cost unknown (not drawn): " + ", ".join(short_labels(unknown, 28)))
    legend = [(bottom + 56 + 15 * i, text) for i, text in enumerate(legend_lines)]
    return render(
        "frontier.svg.j2",
        colours=COLOURS, task=frontier.task, axis=frontier.axis, unit=frontier.unit,
        width=right + 30, height=bottom + 64 + 15 * len(legend_lines),
        left=left, right=right, top=top, bottom=bottom,
        xticks=[(x(v), t) for v, t in _ticks(x_lo, x_hi, 3)],
        yticks=[(y(k / 4), f"{k / 4:.2f}") for k in range(5)],
        points=points, line=line, unknown=unknown,
        legend=legend,
    )  # fmt: skip
