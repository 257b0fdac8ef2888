"""TEAM's report section: variants against vanilla decoding, the behaviour check, a plot."""

from __future__ import annotations

from harness.sections import png_figure, runs_section, section_view
from harness.suites.team.results import build_team_report, load_team_runs, plot_team, team_tables

view = section_view(
    heading=lambda report: report.label,
    tables=team_tables,
    notes_caption="Behaviour check (specs/team.md §5, check 5)",
    notes=lambda report: report.checks,
    figures=[png_figure("TEAM variants with their intervals", plot_team)],
)
SECTION = runs_section("TEAM", "team", load_team_runs, build_team_report, view)
