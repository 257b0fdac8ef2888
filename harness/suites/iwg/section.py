"""IWG's report section, declared in the catalog (`Suite.section`).

One result per group of comparable logs: the metrics, paired comparisons, the entropy-dynamics
fit (placeholder model (ours), not the paper's equation) with its robust/oscillating rule, and
a plot of H(t) with the fit beside a goodness-of-fit panel.
"""

from __future__ import annotations

from pathlib import Path

from harness.report.sections import Plot, ReportSection, SectionView
from harness.suites.iwg.report import IwgReport, build_reports, notes, plot_curves, tables


def view(report: IwgReport) -> SectionView:
    """Tables, notes and the entropy plot of one group."""
    alt = (
        "IWG: mean scheduling entropy per round with the placeholder fit (ours, not the "
        "paper's equation) per orchestrator, and observed against fitted entropy steps"
    )
    return SectionView(
        heading=report.heading,
        tables=tuple(tables(report)),
        notes_caption="What the tables rest on",
        notes=tuple(notes(report)),
        plots=(Plot(alt, lambda stem: plot_curves(report, Path(stem))),),
    )


SECTION = ReportSection("iwg: orchestrators and entropy dynamics", "iwg", build_reports, view)
