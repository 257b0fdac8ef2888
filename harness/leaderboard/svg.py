"""Hand-written SVG plots for the leaderboard: a forest plot and a heat map of p-values.

Written as text (no plotting library) so a site of many suites builds in well under a second and
the files stay small. Each SVG carries a <title> and <desc> for screen readers; the pages embed
them as <img> with alt text.
"""

from __future__ import annotations

import math
from html import escape

from harness.leaderboard.ranking import TaskTable

_FONT = 'font-family="sans-serif" font-size="12"'


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def p_label(p: float) -> str:
    """A p-value in a few characters that never reads as 0: "<.001", ".004", "0.23"."""
    if math.isnan(p):
        return "not tested"
    if p < 0.001:
        return "<.001"
    if p < 0.01:
        return f"{p:.3f}".removeprefix("0")
    return f"{p:.2f}"


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

    height = top + row_h * len(rows) + 40
    width = label_w + plot_w + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="t d">',
        f'<title id="t">Scores on {escape(table.task)} with 95% intervals</title>',
        '<desc id="d">One row per model, best first; the dot is the score and the bar its 95% '
        "interval.</desc>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for tick in range(6):
        v = lo + (hi - lo) * tick / 5
        out.append(
            f'<line x1="{_fmt(x(v))}" x2="{_fmt(x(v))}" y1="{top - 8}" '
            f'y2="{top + row_h * len(rows)}" stroke="#ddd"/>'
            f'<text x="{_fmt(x(v))}" y="{top + row_h * len(rows) + 16}" text-anchor="middle" '
            f"{_FONT}>{v:.2f}</text>"
        )
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        label = r.model if len(r.model) <= 36 else r.model[:35] + "…"
        out.append(
            f'<text x="{label_w - 8}" y="{_fmt(y + 4)}" text-anchor="end" {_FONT}>'
            f"{escape(label)}</text>"
        )
        if not math.isnan(r.score.low):
            out.append(
                f'<line x1="{_fmt(x(r.score.low))}" x2="{_fmt(x(r.score.high))}" '
                f'y1="{_fmt(y)}" y2="{_fmt(y)}" stroke="#1f5fa8" stroke-width="2"/>'
            )
        out.append(
            f'<circle cx="{_fmt(x(r.score.estimate))}" cy="{_fmt(y)}" r="4" fill="#1f5fa8"/>'
        )
    out.append(
        f'<text x="{label_w + plot_w / 2}" y="{height - 6}" text-anchor="middle" {_FONT}>'
        "score (95% interval)</text></svg>"
    )
    return "\n".join(out)


def _colour(p: float) -> str:
    if math.isnan(p):
        return "#eeeeee"
    if p < 0.001:
        return "#08306b"
    if p < 0.01:
        return "#2171b5"
    if p < 0.05:
        return "#6baed6"
    return "#f7fbff"


def heatmap_svg(table: TaskTable) -> str:
    """Holm-corrected p-values of every pair of models; darker is more significant."""
    models = [r.model for r in table.rows]
    n = len(models)
    cell, label_w, top = (36 if n <= 12 else 18), 240, 150
    width = label_w + max(cell * n, 330) + 20  # room for the legend
    height = top + cell * n + 50
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="ht hd">',
        f'<title id="ht">Holm-corrected pairwise p-values on {escape(table.task)}</title>',
        '<desc id="hd">Rows and columns are models in score order; a cell is the Holm-corrected '
        "p-value of the paired test between them. Darker cells: p below 0.05, 0.01, 0.001.</desc>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for i, m in enumerate(models):
        short = escape(m if len(m) <= 30 else m[:29] + "…")
        y = top + cell * i + cell / 2 + 4
        out.append(
            f'<text x="{label_w - 6}" y="{_fmt(y)}" text-anchor="end" {_FONT}>{short}</text>'
        )
        cx = label_w + cell * i + cell / 2 + 4
        out.append(
            f'<text x="{_fmt(cx)}" y="{top - 6}" transform="rotate(-60 {_fmt(cx)} {top - 6})" '
            f"{_FONT}>{short}</text>"
        )
    for i, a in enumerate(models):
        for j, b in enumerate(models):
            p = math.nan if i == j else table.p_holm(a, b)
            px, py = label_w + cell * j, top + cell * i
            out.append(
                f'<rect x="{px}" y="{py}" width="{cell}" height="{cell}" fill="{_colour(p)}" '
                f'stroke="white"><title>{escape(a)} vs {escape(b)}: p = {p:.3g}</title></rect>'
            )
            if cell >= 30 and not math.isnan(p):
                fill = "white" if p < 0.01 else "black"
                text = escape(p_label(p))
                out.append(
                    f'<text x="{px + cell / 2}" y="{py + cell / 2 + 4}" text-anchor="middle" '
                    f'font-family="sans-serif" font-size="10" fill="{fill}">{text}</text>'
                )
    legend_y = top + cell * n + 20
    for k, (label, p) in enumerate(
        [("p&lt;.001", 0.0005), ("p&lt;.01", 0.005), ("p&lt;.05", 0.02), ("n.s.", 0.5)]
    ):
        lx = label_w + 80 * k
        out.append(
            f'<rect x="{lx}" y="{legend_y}" width="14" height="14" fill="{_colour(p)}" '
            f'stroke="#999"/><text x="{lx + 18}" y="{legend_y + 12}" {_FONT}>{label}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
