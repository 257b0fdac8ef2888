"""The serving suite's report section, declared in the catalog (`Suite.section`)."""

from __future__ import annotations

from pathlib import Path

from harness.report.sections import Plot, ReportSection, SectionView
from harness.suites.serving.report import ServingReport, build_reports, plot, tables


def view(report: ServingReport) -> SectionView:
    """Tables, checks and the SLO / γ plot of one group."""
    alt = (
        "serving: share of requests missing a TTLT threshold per policy, log scale (left), and "
        "gamma-Ada's gamma over simulated time per sample (right)"
    )
    return SectionView(
        heading=report.heading,
        tables=tuple(tables(report)),
        notes_caption="Acceptance checks (spec section 5.3) and settings",
        notes=report.checks + report.settings,
        plots=(Plot(alt, lambda stem: plot(report, Path(stem))),),
    )


SECTION = ReportSection("serving: tail-aware scheduling (UniBoost)", "serving", build_reports, view)
