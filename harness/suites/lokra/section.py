"""LoKRA's report section (the method is reconstructed): arms, arms against LoRA, the checks.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`. Every finished log of the suite gets its own result, headed by its
preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, ReportSection, SectionView, log_heading
from harness.suites.lokra.report import (
    LokraReport,
    build_lokra_report,
    load_lokra_runs,
    lokra_tables,
    plot_lokra,
)


def _preset(record: LogRecord) -> str:
    """The preset the log ran, from its task arguments or metadata ("" when none)."""
    args = dict(record.identity.task_args)
    return args.get("preset", "").strip('"') or str(record.metadata.get("preset") or "")


def build(records: list[LogRecord]) -> list[LokraReport]:
    """One result per log."""
    return [
        build_lokra_report(
            log_heading(r, f"preset {_preset(r)}" if _preset(r) else ""), load_lokra_runs(r.path)
        )
        for r in records
    ]


def _plot(report: LokraReport, stem: Path) -> list[str]:
    return [plot_lokra(report, stem.with_name(stem.name + ".png"))]


def view(report: LokraReport) -> SectionView:
    """Tables, checks and plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(lokra_tables(report)),
        notes_caption="Checks (specs/lokra.md §5.2)",
        notes=tuple(report.checks),
        plots=(Plot("LoKRA arms with 95% intervals", lambda stem: _plot(report, stem)),),
    )


SECTION = ReportSection("LoKRA (reconstructed)", "lokra", build, view)
