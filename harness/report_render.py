"""Render `harness report`: Markdown or HTML tables and a forest plot of scores with intervals.

Presentation only: every number comes from `harness.report_data`, nothing is recomputed here.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Any

from harness.budget_report import budget_table, plot_budgets
from harness.l2a_report import l2a_tables, plot_l2a
from harness.lokra_report import lokra_tables, plot_lokra
from harness.parity_report import parity_tables, plot_curves
from harness.report_data import ReportData
from harness.team_report import plot_team, team_tables


def forest_plot_png(data: ReportData) -> bytes:
    """Scores with their 95% intervals, one line per task and model (PNG bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(data.scores)
    labels = [f"{r.task} · {r.model} · {r.metric}" for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.2))
    for y, r in enumerate(rows):
        if not math.isnan(r.ci_low):
            ax.plot([r.ci_low, r.ci_high], [y, y], color="#1f5fa8", linewidth=2)
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


def _score_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    head = ["suite", "task", "model", "metric", "n", "errors", "score", "95% CI", "method"]
    rows = [
        [r.suite, r.task, r.model, r.metric, str(r.n), str(r.errors), f"{r.value:.3f}",
         f"[{r.ci_low:.3f}, {r.ci_high:.3f}]", r.ci_method]
        for r in data.scores
    ]  # fmt: skip
    return head, rows


def _pair_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    head = ["task", "model a", "model b", "n", "a - b", "95% CI", "p", "p (Holm)", "test"]
    rows = [
        [p.task, p.model_a, p.model_b, str(p.test.n), f"{p.test.estimate:+.3f}",
         "" if math.isnan(p.test.low) else f"[{p.test.low:+.3f}, {p.test.high:+.3f}]",
         f"{p.test.p_value:.4g}", f"{p.p_holm:.4g}", p.test.method]
        for p in data.pairs
    ]  # fmt: skip
    return head, rows


def to_markdown(
    data: ReportData,
    plot_name: str,
    plot_names: list[str] | None = None,
    budget_plot: str | None = None,
    method_plots: list[list[str]] | None = None,
) -> str:
    """The report as Markdown, pointing at the plots saved beside it."""
    plot_names = plot_names or []

    def table(head: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)

    pairs = table(*_pair_table(data)) if data.pairs else "(no two models share a task)"
    parity = "".join(
        "".join(f"\n### {caption}\n\n{table(head, rows)}\n" for caption, head, rows in
                parity_tables(report))
        + (f"\n{PARITY_CLAIMS}:\n\n" + "".join(f"- {c}\n" for c in report.claims)
           if report.claims else "")
        for report in data.parity
    )  # fmt: skip
    curves = "".join(
        f"\n![k-parity learning curves, one panel per arm, one line per seed]({name})\n"
        for name in plot_names
    )
    return (
        "# harness report\n\n## Scores\n\nErrored samples count in n and as wrong.\n\n"
        f"{table(*_score_table(data))}\n\n![Forest plot of scores with 95% intervals]"
        f"({plot_name})\n\n## Paired comparisons\n\nOn the samples both models have; "
        f"p-values corrected by Holm over each task's pairs.\n\n{pairs}\n\n"
        f"Logs: {len(data.logs)}.\n"
        + (f"\n## k-parity\n{parity}{curves}" if parity else "")
        + _budget_markdown(data, budget_plot, table)
        + "".join(
            _section_markdown(*section, plots or [], table)
            for section, plots in zip(
                _method_sections(data), method_plots or [[] for _ in METHODS], strict=True
            )
        )
    )


PARITY_CLAIMS = (
    "What it shows (steps to 0.99 paired by seed, a seed that never generalises counted as the "
    "budget; 95% intervals)"
)

# The sections of suites that compare arms of a method: (title, the ReportData field holding
# its reports, tables function, caption of the checks, alt text of the plots, plot function and
# the plot files' tag).
METHODS: tuple[tuple[str, str, Any, str, str, Any, str], ...] = (
    ("LoKRA (reconstructed)", "lokra", lokra_tables, "Checks (specs/lokra.md §5.2)",
     "LoKRA arms with 95% intervals", plot_lokra, "lokra"),
    ("TEAM", "team", team_tables, "Behaviour check (specs/team.md §5, check 5)",
     "TEAM variants with 95% intervals", plot_team, "team"),
    ("L2A", "l2a", l2a_tables, "Acceptance checks (specs/l2a.md §5)",
     "L2A recall accuracy and routed fraction per arm with 95% intervals", plot_l2a, "l2a"),
)  # fmt: skip


def _method_sections(data: ReportData) -> list[tuple[str, tuple, Any, str, str]]:
    """Each method section as (title, reports, tables function, checks caption, plot alt)."""
    return [(title, getattr(data, field), tables, checks, alt)
            for title, field, tables, checks, alt, _, _ in METHODS]  # fmt: skip


def _section_markdown(
    title: str, reports: tuple, tables: Any, checks: str, alt: str, plots: list[str], table: Any
) -> str:
    if not reports:
        return ""
    parts = [f"\n## {title}\n"]
    for i, report in enumerate(reports):
        for caption, head, rows in tables(report):
            parts.append(f"\n{caption}.\n\n{table(head, rows)}\n")
        if report.checks:
            parts.append(f"\n{checks}:\n\n")
            parts += [f"- {c}\n" for c in report.checks]
        if i < len(plots):
            parts.append(f"\n![{alt}]({plots[i]})\n")
    return "".join(parts)


def _section_html(reports: tuple, tables: Any, alt: str, pngs: list[bytes], table: Any) -> str:
    return (
        "".join(table(*t) for report in reports for t in tables(report))
        + "".join(
            f"<ul>{''.join(f'<li>{html.escape(c)}</li>' for c in report.checks)}</ul>"
            for report in reports
            if report.checks
        )
        + "".join(
            f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(p).decode()}">'
            for p in pngs
        )
    )


def _budget_markdown(data: ReportData, plot: str | None, table: Any) -> str:
    if not data.budgets:
        return ""
    caption, head, rows = budget_table(list(data.budgets))
    img = f"\n![Accuracy against B_seq and B_total, with 95% intervals]({plot})\n" if plot else ""
    return f"\n## Accuracy against token budgets\n\n{caption}.\n\n{table(head, rows)}\n{img}"


def to_html(
    data: ReportData,
    png: bytes,
    curve_pngs: list[bytes] | None = None,
    budget_png: bytes | None = None,
    method_pngs: list[list[bytes]] | None = None,
) -> str:
    """The report as one self-contained HTML page (the plots embedded)."""
    curve_pngs = curve_pngs or []

    def table(caption: str, head: list[str], rows: list[list[str]]) -> str:
        th = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
        )
        return f"<table><caption>{html.escape(caption)}</caption><tr>{th}</tr>{body}</table>"

    img = base64.b64encode(png).decode()
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>harness report</title>"
        "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.2em .5em;text-align:left}caption{font-weight:bold;text-align:left}</style>"
        "<h1>harness report</h1>"
        + table("Scores (errored samples count in n and as wrong)", *_score_table(data))
        + f'<img alt="Forest plot of each score with its 95% interval" '
        f'src="data:image/png;base64,{img}">'
        + table("Paired comparisons (Holm-corrected over each task's pairs)", *_pair_table(data))
        + "".join(
            "".join(table(*t) for t in parity_tables(report))
            + (
                f"<p>{PARITY_CLAIMS}:</p><ul>"
                + "".join(f"<li>{html.escape(c)}</li>" for c in report.claims)
                + "</ul>"
                if report.claims
                else ""
            )
            for report in data.parity
        )  # fmt: skip
        + "".join(
            f'<img alt="k-parity learning curves, one panel per arm" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode()}">'
            for png in curve_pngs
        )
        + (table(*budget_table(list(data.budgets))) if data.budgets else "")
        + (
            f'<img alt="Accuracy against B_seq and B_total, with 95% intervals" '
            f'src="data:image/png;base64,{base64.b64encode(budget_png).decode()}">'
            if budget_png
            else ""
        )
        + "".join(
            _section_html(reports, tables, alt, pngs or [], table)
            for (_, reports, tables, _, alt), pngs in zip(
                _method_sections(data), method_pngs or [[] for _ in METHODS], strict=True
            )
        )
        + "</html>"
    )


def write_report(data: ReportData, output: str, fmt: str) -> list[str]:
    """Write the report (and, for Markdown, the plot beside it); return the files written."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = forest_plot_png(data)
    curve_files: list[str] = []
    for i, report in enumerate(data.parity):
        curve_files += plot_curves(report, out.with_name(f"{out.stem}.k-parity-{i + 1}"))
    pngs = [Path(p).read_bytes() for p in curve_files if p.endswith(".png")]
    method_files = [
        [
            plot(report, out.with_name(f"{out.stem}.{tag}-{i + 1}.png"))
            for i, report in enumerate(getattr(data, field))
        ]
        for _, field, _, _, _, plot, tag in METHODS
    ]
    budget_file = None
    if data.budgets:
        budget_file = plot_budgets(list(data.budgets), out.with_name(f"{out.stem}.budgets.png"))
    written = [f for files in method_files for f in files]
    if fmt == "html":
        budget_png = Path(budget_file).read_bytes() if budget_file else None
        method_pngs = [[Path(p).read_bytes() for p in files] for files in method_files]
        out.write_text(to_html(data, png, pngs, budget_png, method_pngs), encoding="utf-8")
        budget = [budget_file] if budget_file else []
        return [str(out), *curve_files, *budget, *written]
    plot = out.with_suffix(".forest.png")
    plot.write_bytes(png)
    names = [Path(p).name for p in curve_files if p.endswith(".png")]
    budget_name = Path(budget_file).name if budget_file else None
    method_names = [[Path(p).name for p in files] for files in method_files]
    out.write_text(to_markdown(data, plot.name, names, budget_name, method_names), encoding="utf-8")
    return [str(out), str(plot), *curve_files, *([budget_file] if budget_file else []), *written]
