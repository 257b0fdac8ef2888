"""L2A's report section: full, SWA and L2A arms, routing curves, the spec's acceptance checks.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`. Every finished log of the suite gets its own result, headed by its
preset and file.
"""

from __future__ import annotations

from pathlib import Path

from harness.logs import LogRecord
from harness.report.sections import Plot, ReportSection, SectionView, log_heading
from harness.suites.l2a.report import (
    L2AReport,
    build_l2a_report,
    l2a_tables,
    load_l2a_runs,
    plot_l2a,
)


def _preset(record: LogRecord) -> str:
    """The preset the log ran, from its task arguments or metadata ("" when none)."""
    args = dict(record.identity.task_args)
    return args.get("preset", "").strip('"') or str(record.metadata.get("preset") or "")


def build(records: list[LogRecord]) -> list[L2AReport]:
    """One result per log."""
    return [
        build_l2a_report(
            log_heading(r, f"preset {_preset(r)}" if _preset(r) else ""), load_l2a_runs(r.path)
        )
        for r in records
    ]


def _plot(report: L2AReport, stem: Path) -> list[str]:
    return [plot_l2a(report, stem.with_name(stem.name + ".png"))]


def view(report: L2AReport) -> SectionView:
    """Tables, checks and plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(l2a_tables(report)),
        notes_caption="Acceptance checks (specs/l2a.md §5)",
        notes=tuple(report.checks),
        plots=(
            Plot(
                "L2A recall accuracy and routed fraction per arm with 95% intervals",
                lambda stem: _plot(report, stem),
            ),
        ),
    )


SECTION = ReportSection("L2A", "l2a", build, view)
