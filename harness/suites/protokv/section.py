"""ProtoKV's report section: accuracy by delay, the gain over token retention, the checks.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section
from harness.suites.protokv.report import (
    ProtoReport,
    build_protokv_report,
    load_protokv_runs,
    plot_protokv,
    protokv_tables,
)


def _build(record: LogRecord) -> ProtoReport:
    return build_protokv_report(log_heading(record), load_protokv_runs(record.path))


def view(report: ProtoReport) -> SectionView:
    """Tables, checks and the accuracy-against-delay plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(protokv_tables(report)),
        notes_caption="Checks (specs/protokv.md §5) and the paper's claim",
        notes=tuple(report.checks),
        plots=(Plot("Accuracy against query delay, every arm, with 95% intervals over seeds",
                    lambda stem: [plot_protokv(report, stem.with_name(stem.name + ".png"))]),),
    )  # fmt: skip


SECTION = per_log_section("ProtoKV (authors' code; toy world reconstructed)", "protokv", _build,
                          view)  # fmt: skip
