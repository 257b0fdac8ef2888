"""ImgCoT's report section (the method is reconstructed): arms, seeds, pairs, checks, the plot.

Declared in the catalog (`Suite.section`); one result per finished log, headed by its preset and
file (`harness.suites.sections`).
"""

from __future__ import annotations

from harness.suites.imgcot.results import (
    build_imgcot_report,
    imgcot_tables,
    load_imgcot_runs,
    plot_accuracy_tokens,
)
from harness.suites.sections import per_log_section, png_figure, section_view

view = section_view(
    heading=lambda report: report.label,
    tables=imgcot_tables,
    notes_caption="Checks (specs/imgcot.md §5; reported as findings, never tuned)",
    notes=lambda report: report.checks,
    figures=[png_figure("ImgCoT arms: test accuracy against tokens spent before the answer",
                        plot_accuracy_tokens)],
)  # fmt: skip
SECTION = per_log_section(
    "ImgCoT (reconstructed)",
    "imgcot",
    lambda heading, record: build_imgcot_report(heading, load_imgcot_runs(record.path)),
    view,
)
