"""LoKRA's report section (the method is reconstructed): arms, arms against LoRA, the checks.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section
from harness.suites.lokra.report import (
    LokraReport,
    build_lokra_report,
    load_lokra_runs,
    lokra_tables,
    plot_lokra,
)


def _build(record: LogRecord) -> LokraReport:
    return build_lokra_report(log_heading(record), load_lokra_runs(record.path))


def _plot(report: LokraReport, stem: Path) -> list[str]:
    return [plot_lokra(report, stem.with_name(stem.name + ".png"))]


def view(report: LokraReport) -> SectionView:
    """Tables, checks and plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(lokra_tables(report)),
        notes_caption="Checks (specs/lokra.md §5.2)",
        notes=tuple(report.checks),
        plots=(Plot("LoKRA arms with their intervals", lambda stem: _plot(report, stem)),),
    )


SECTION = per_log_section("LoKRA (reconstructed)", "lokra", _build, view)
