"""TEAM's report section: variants against vanilla decoding, the behaviour check, a plot.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section
from harness.suites.team.report import TeamReport, build_team_report, load_team_runs, plot_team
from harness.suites.team.report import team_tables as tables


def _build(record: LogRecord) -> TeamReport:
    return build_team_report(log_heading(record), load_team_runs(record.path))


def _plot(report: TeamReport, stem: Path) -> list[str]:
    return [plot_team(report, stem.with_name(stem.name + ".png"))]


def view(report: TeamReport) -> SectionView:
    """Tables, the behaviour check and the plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(tables(report)),
        notes_caption="Behaviour check (specs/team.md §5, check 5)",
        notes=tuple(report.checks),
        plots=(Plot("TEAM variants with their intervals", lambda stem: _plot(report, stem)),),
    )


SECTION = per_log_section("TEAM", "team", _build, view)
