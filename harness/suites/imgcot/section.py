"""ImgCoT's report section (the method is reconstructed): arms, seeds, pairs, checks, the plot.

Declared in the catalog (`Suite.section`); `harness report` renders it through
`harness.report.sections`, one result per finished log, headed by its preset and file.
"""

from __future__ import annotations

from harness.logs import LogRecord
from harness.report.sections import Plot, SectionView, log_heading, per_log_section
from harness.suites.imgcot.report import (
    ImgReport,
    build_imgcot_report,
    imgcot_tables,
    load_imgcot_runs,
    plot_accuracy_tokens,
)


def _build(record: LogRecord) -> ImgReport:
    return build_imgcot_report(log_heading(record), load_imgcot_runs(record.path))


def view(report: ImgReport) -> SectionView:
    """Tables, checks and the accuracy-against-tokens plot of one log."""
    return SectionView(
        heading=report.label,
        tables=tuple(imgcot_tables(report)),
        notes_caption="Checks (specs/imgcot.md §5; reported as findings, never tuned)",
        notes=tuple(report.checks),
        plots=(
            Plot(
                "ImgCoT arms: test accuracy against tokens spent before the answer",
                lambda stem: [plot_accuracy_tokens(report, stem.with_name(stem.name + ".png"))],
            ),
        ),
    )


SECTION = per_log_section("ImgCoT (reconstructed)", "imgcot", _build, view)
