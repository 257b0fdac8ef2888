"""L2A's report section: full, SWA and L2A arms, routing curves, the spec's acceptance checks."""

from __future__ import annotations

from harness.sections import png_figure, runs_section, section_view
from harness.suites.l2a.results import build_l2a_report, l2a_tables, load_l2a_runs, plot_l2a

view = section_view(
    heading=lambda report: report.label,
    tables=l2a_tables,
    notes_caption="Acceptance checks (specs/l2a.md §5)",
    notes=lambda report: report.checks,
    figures=[png_figure("L2A recall accuracy and routed fraction per arm with their intervals",
                        plot_l2a)],
)  # fmt: skip
SECTION = runs_section("L2A", "l2a", load_l2a_runs, build_l2a_report, view)
