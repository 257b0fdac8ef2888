"""The serving suite's report section, declared in the catalog (`Suite.section`)."""

from __future__ import annotations

from harness.sections import Figure, ReportSection, section_view
from harness.suites.serving.results import build_reports, plot, tables

view = section_view(
    heading=lambda report: report.heading,
    tables=tables,
    notes_caption="Acceptance checks (spec section 5.3) and settings",
    notes=lambda report: report.checks + report.settings,
    figures=[Figure("serving: share of requests missing a TTLT threshold per policy, log scale "
                    "(left), and gamma-Ada's gamma over simulated time per sample (right)", plot)],
)  # fmt: skip
SECTION = ReportSection("serving: tail-aware scheduling (UniBoost)", "serving", build_reports, view)
