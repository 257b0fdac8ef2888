"""The accuracy-cost frontier as a PNG for `harness report`: both axes with 95% intervals."""

from __future__ import annotations

import math
from pathlib import Path

from harness.report._frontier import Frontier

PLOT_LIMIT = 1e100  # |value| drawn at most; the tables show any finite value


def plottable(x: float) -> bool:
    """Whether a value can be drawn: finite, and far from the float limit.

    An axis spanning 1e308 overflows (a log's score of 1e308 broke matplotlib's ticks); the
    tables still show the value.
    """
    return math.isfinite(x) and abs(x) < PLOT_LIMIT


def _bars(estimate: float, low: float, high: float) -> list[list[float]]:
    """Error-bar lengths, never negative (a bound rounded past its estimate by 1e-17 is 0)."""
    return [[max(0.0, estimate - low)], [max(0.0, high - estimate)]]


def _drawn(low: float, high: float) -> bool:
    return plottable(low) and plottable(high)


def frontier_png(frontier: Frontier, path: Path) -> str:
    """Accuracy against cost for each model with a known cost, intervals on both axes.

    The frontier's points are ringed and joined; models of unknown cost are named in the title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    known = [p for p in frontier.points if p.cost is not None
             and plottable(p.cost.estimate) and plottable(p.accuracy.estimate)]  # fmt: skip
    for p in known:
        c, a = p.cost, p.accuracy  # type: ignore[union-attr]
        xerr = _bars(c.estimate, c.low, c.high) if _drawn(c.low, c.high) else None
        yerr = _bars(a.estimate, a.low, a.high) if _drawn(a.low, a.high) else None
        ax.errorbar([c.estimate], [a.estimate], xerr=xerr, yerr=yerr, fmt="o", capsize=3,
                    label=f"{p.model} (P={p.probability:.2f})")  # fmt: skip
        if p.on_frontier:
            ax.plot([c.estimate], [a.estimate], "o", ms=14, mfc="none", mec="#000000")
    front = sorted((p.cost.estimate, p.accuracy.estimate) for p in known if p.on_frontier)  # type: ignore[union-attr]
    if len(front) > 1:
        ax.plot(*zip(*front, strict=True), "--", color="#555555", linewidth=1)
    unknown = [p.model for p in frontier.points if p not in known]
    title = f"{frontier.task}: accuracy against {frontier.axis} per {frontier.unit}"
    if unknown:
        title += f"\ncost unknown or off scale (not drawn): {', '.join(unknown)}"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"{frontier.axis} per {frontier.unit} (95% interval)")
    ax.set_ylabel("accuracy (95% interval)")
    ax.grid(alpha=0.3)
    if known:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
