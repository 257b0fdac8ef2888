"""Render `harness report`: Markdown or HTML tables, a forest plot, and every section.

Presentation only: every number comes from `harness.report._data`, nothing is recomputed here.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

from harness.compare import p_text
from harness.report._data import ReportData
from harness.report._frontier_plot import plottable
from harness.report._sections import (
    html_table,
    markdown_table,
    markdown_text,
    section_html,
    section_markdown,
    write_plots,
)

SCORES_NOTE = (
    "Errored samples count in n and as wrong; n and errors count problems. A score that cannot "
    "be read (None, NaN, an unknown string) is an error with its reason. Each log's cost, "
    "latency and manifest digest are in the cost section below; `harness manifest LOG` prints "
    "the manifest"
)
PAIRS_NOTE = (
    "Only logs that agree on all but the model (suite, task, task arguments, sample ids) are "
    "paired, on the problems both have; p-values corrected by Holm over each group's tested "
    "pairs; a pair that could not be tested says so and is left out of Holm. Each p-value comes "
    "with the interval that inverts the same test, so p <= 0.05 exactly when the 95% interval "
    "excludes 0: for 0/1 scores McNemar's asymptotic test with Tango's score interval; for "
    "other scores a paired t from 20 units, else the exact sign-flip test"
)


def forest_plot_png(data: ReportData) -> bytes:
    """Scores with their 95% intervals, one line per task and model (PNG bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(data.scores)
    labels = [f"{r.task} · {r.model} · {r.metric}" for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.2))
    for y, r in enumerate(rows):
        if plottable(r.ci_low) and plottable(r.ci_high):
            ax.plot([r.ci_low, r.ci_high], [y, y], color="#1f5fa8", linewidth=2)
        if plottable(r.value):
            ax.plot([r.value], [y], "o", color="#1f5fa8" if r.errors == 0 else "#b8420f")
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("score with 95% interval (orange point: some samples errored)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def _num(x: float, fmt: str = ".3f") -> str:
    return "n/a" if math.isnan(x) else format(x, fmt)


def _level(confidence: float) -> str:
    """A pair interval's level where it is not 95% (a decided run's CS at 1 - alpha / pairs)."""
    if math.isnan(confidence) or abs(confidence - 0.95) < 1e-9:
        return ""
    return f" at {100 * confidence:.4g}%"


def _tables(data: ReportData) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(heading, caption, header, rows) of the generic tables that have rows."""
    flags = any(r.flagged for r in data.scores)  # integrity flags beside errors, where any
    scores = [
        [r.suite, r.task, r.model, r.metric, str(r.n), str(r.errors),
         *([str(r.flagged)] if flags else []),
         _num(r.value) + (f" (TAMPERED: {r.tampered})" if r.tampered else ""),
         "n/a" if math.isnan(r.ci_low) else f"[{r.ci_low:.3f}, {r.ci_high:.3f}]", r.ci_method]
        for r in data.scores
    ]  # fmt: skip
    pairs = [
        [p.task, p.model_a, p.model_b, str(p.test.n), f"{p.test.estimate:+.3f}",
         "" if math.isnan(p.test.low) else f"[{p.test.low:+.3f}, {p.test.high:+.3f}]"
         + _level(p.test.confidence), p_text(p.test.p_value), p_text(p.p_holm), p.test.method]
        if p.test else [p.task, p.model_a, p.model_b, "", "", "", p.note, "not tested", ""]
        for p in data.pairs
    ]  # fmt: skip
    refused = [[n.task, Path(n.log_a).name, Path(n.log_b).name, n.reason]
               for n in data.not_comparable]  # fmt: skip
    errors = [[e.task, e.model, e.reason, str(e.count), Path(e.log).name] for e in data.errors]
    left = [[b.path, b.reason] for b in data.left_out]
    return [
        t
        for t in [
            (
                "Scores",
                SCORES_NOTE,
                [
                    "suite",
                    "task",
                    "model",
                    "metric",
                    "n",
                    "errors",
                    *(["flagged"] if flags else []),
                    "score",
                    "95% CI",
                    "method",
                ],
                scores,
            ),
            (
                "Paired comparisons",
                PAIRS_NOTE,
                [
                    "task",
                    "model a",
                    "model b",
                    "n",
                    "a - b",
                    "CI (95% unless marked)",
                    "p",
                    "p (Holm)",
                    "test",
                ],  # fmt: skip
                pairs,
            ),
            (
                "Not compared",
                "Logs of one task whose identities differ in more than the model",
                ["task", "log a", "log b", "why not"],
                refused,
            ),
            (
                "Errors by reason",
                "Errored sample-epochs of each log, by reason",
                ["task", "model", "reason", "sample-epochs", "log"],
                errors,
            ),
            (
                "Logs left out",
                "Logs under the folders that were not used, and why",
                ["log", "why"],
                left,
            ),
        ]  # fmt: skip
        if t[3] or t[0] == "Scores"
    ]


def to_markdown(data: ReportData, forest: str, plots: list[list[list[str]]]) -> str:
    """The report as Markdown, pointing at the plots saved beside it."""
    parts = ["# harness report\n"]
    for heading, caption, head, rows in _tables(data):
        parts.append(f"\n## {heading}\n\n{markdown_text(caption.rstrip('.'))}.\n\n")
        none = "(none: the logs here are reported in their suites' sections below)"
        parts.append(markdown_table(head, rows) if rows else none)
        parts.append("\n")
        if heading == "Scores" and rows:
            parts.append(f"\n![Forest plot of scores with 95% intervals]({forest})\n")
    parts.append(f"\nLogs used: {len(data.logs)}.\n")
    parts += [section_markdown(s, files) for s, files in zip(data.sections, plots, strict=True)]
    return "".join(parts)


def to_html(data: ReportData, png: bytes, plots: list[list[list[str]]]) -> str:
    """The report as one self-contained HTML page (the plots embedded)."""
    parts = [
        # the doctype alone on the first line: the report's mark goes on the second, where a
        # sibling report (report.md beside report.html) finds the plots they share
        "<!doctype html>\n<html lang=en><meta charset=utf-8><title>harness report</title>"
        "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.2em .5em;text-align:left}caption{font-weight:bold;text-align:left}</style>"
        "<h1>harness report</h1>"
    ]
    for heading, caption, head, rows in _tables(data):
        parts.append(f"<h2>{html.escape(heading)}</h2>{html_table(caption, head, rows)}")
        if heading == "Scores" and rows:
            img = base64.b64encode(png).decode()
            parts.append(
                '<img alt="Forest plot of each score with its 95% interval" '
                f'src="data:image/png;base64,{img}">'
            )
    parts.append(f"<p>Logs used: {len(data.logs)}.</p>")
    parts += [section_html(s, files) for s, files in zip(data.sections, plots, strict=True)]
    return "".join(parts) + "</html>"


def write_report(data: ReportData, output: str, fmt: str) -> list[str]:
    """Write the report and its plots beside it; return the files written."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":  # the frozen results only: no plots
        import json

        from harness.report._export import report_json

        out.write_text(json.dumps(report_json(data), indent=2, allow_nan=False), encoding="utf-8")
        return [str(out)]
    png = forest_plot_png(data) if data.scores else b""
    plots = [write_plots(s, out.with_suffix("")) for s in data.sections]
    plot_files = [f for per_section in plots for per_result in per_section for f in per_result]
    if fmt == "html":
        out.write_text(to_html(data, png, plots), encoding="utf-8")
        return [str(out), *plot_files]
    forest = out.with_suffix(".forest.png")
    written = [str(out)]
    if png:
        forest.write_bytes(png)
        written.append(str(forest))
    out.write_text(to_markdown(data, forest.name, plots), encoding="utf-8")
    return [*written, *plot_files]
