"""TEAM's report section: variants against vanilla decoding, the behaviour check, a plot.

Declared in the catalog (`Suite.section`); one result per finished log, headed by its preset and
file (`harness.suites.sections`).
"""

from __future__ import annotations

from harness.suites.sections import per_log_section, png_figure, section_view
from harness.suites.team.results import build_team_report, load_team_runs, plot_team, team_tables

view = section_view(
    heading=lambda report: report.label,
    tables=team_tables,
    notes_caption="Behaviour check (specs/team.md §5, check 5)",
    notes=lambda report: report.checks,
    figures=[png_figure("TEAM variants with their intervals", plot_team)],
)
SECTION = per_log_section(
    "TEAM",
    "team",
    lambda heading, record: build_team_report(heading, load_team_runs(record.path)),
    view,
)
