"""k-parity's report section: arms, arms paired by seed, the paper's claims, learning curves.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`. Every finished log of the suite gets its own result, headed by its
preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, ReportSection, SectionView, log_heading
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


def _preset(record: LogRecord) -> str:
    """The preset the log ran, from its task arguments or metadata ("" when none)."""
    args = dict(record.identity.task_args)
    return args.get("preset", "").strip('"') or str(record.metadata.get("preset") or "")


def build(records: list[LogRecord]) -> list[ParityReport]:
    """One result per log."""
    return [
        build_parity_report(
            log_heading(r, f"preset {_preset(r)}" if _preset(r) else ""),
            load_runs(r.path),
            _preset(r) or None,
        )
        for r in records
    ]


def _plot(report: ParityReport, stem: Path) -> list[str]:
    return plot_curves(report, stem)


def view(report: ParityReport) -> SectionView:
    """Tables, claims and plot of one log."""
    return SectionView(
        heading=report.task,
        tables=tuple(parity_tables(report)),
        notes_caption=PARITY_CLAIMS,
        notes=tuple(report.claims),
        plots=(
            Plot(
                "k-parity learning curves, one panel per arm, one line per seed",
                lambda stem: _plot(report, stem),
            ),
        ),
    )


SECTION = ReportSection("k-parity", "k-parity", build, view)
