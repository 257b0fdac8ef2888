"""TEAM's report section: variants against vanilla decoding, the behaviour check, a plot.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`. Every finished log of the suite gets its own result, headed by its
preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, ReportSection, SectionView, log_heading
from harness.suites.team.report import (
    TeamReport,
    build_team_report,
    load_team_runs,
    plot_team,
    team_tables,
)


def _preset(record: LogRecord) -> str:
    """The preset the log ran, from its task arguments or metadata ("" when none)."""
    args = dict(record.identity.task_args)
    return args.get("preset", "").strip('"') or str(record.metadata.get("preset") or "")


def build(records: list[LogRecord]) -> list[TeamReport]:
    """One result per log."""
    return [
        build_team_report(
            log_heading(r, f"preset {_preset(r)}" if _preset(r) else ""), load_team_runs(r.path)
        )
        for r in records
    ]


def _plot(report: TeamReport, stem: Path) -> list[str]:
    return [plot_team(report, stem.with_name(stem.name + ".png"))]


def view(report: TeamReport) -> SectionView:
    """Tables, checks and plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(team_tables(report)),
        notes_caption="Behaviour check (specs/team.md §5, check 5)",
        notes=tuple(report.checks),
        plots=(Plot("TEAM variants with 95% intervals", lambda stem: _plot(report, stem)),),
    )


SECTION = ReportSection("TEAM", "team", build, view)
