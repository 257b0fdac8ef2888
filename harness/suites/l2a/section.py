"""L2A's report section: full, SWA and L2A arms, routing curves, the spec's acceptance checks.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section
from harness.suites.l2a.report import L2AReport, build_l2a_report, l2a_tables, load_l2a_runs
from harness.suites.l2a.report import plot_l2a as plot


def _build(record: LogRecord) -> L2AReport:
    return build_l2a_report(log_heading(record), load_l2a_runs(record.path))


def _plot(report: L2AReport, stem: Path) -> list[str]:
    return [plot(report, stem.with_name(stem.name + ".png"))]


def view(report: L2AReport) -> SectionView:
    """Tables, acceptance checks and plot of one log."""
    alt = "L2A recall accuracy and routed fraction per arm with their intervals"
    return SectionView(
        heading=report.label,
        tables=tuple(l2a_tables(report)),
        notes_caption="Acceptance checks (specs/l2a.md §5)",
        notes=tuple(report.checks),
        plots=(Plot(alt, lambda stem: _plot(report, stem)),),
    )


SECTION = per_log_section("L2A", "l2a", _build, view)
