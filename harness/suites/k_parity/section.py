"""k-parity's report section: arms, arms paired by seed, the paper's claims, learning curves.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section, preset_of
from harness.suites.k_parity.report import (
    ParityReport,
    build_parity_report,
    load_runs,
    parity_tables,
    plot_curves,
)

PARITY_CLAIMS = (
    "What it shows (steps to 0.99 paired by seed, a seed that never generalises counted as the "
    "budget; intervals exact sign-flip or order statistics at the level they state, none "
    "printed where n is too small for 95%)"
)


def _build(record: LogRecord) -> ParityReport:
    return build_parity_report(
        log_heading(record), load_runs(record.path), preset_of(record) or None
    )


def _plot(report: ParityReport, stem: Path) -> list[str]:
    return plot_curves(report, stem)


def view(report: ParityReport) -> SectionView:
    """Tables, claims and learning curves of one log."""
    alt = "k-parity learning curves, one panel per arm, one line per seed"
    return SectionView(
        heading=report.task,
        tables=tuple(parity_tables(report)),
        notes_caption=PARITY_CLAIMS,
        notes=tuple(report.claims),
        plots=(Plot(alt, lambda stem: _plot(report, stem)),),
    )


SECTION = per_log_section("k-parity", "k-parity", _build, view)
