"""ImgCoT's report section (the method is reconstructed): arms, seeds, pairs, checks, the plot."""

from __future__ import annotations

from harness.sections import png_figure, runs_section, section_view
from harness.suites.imgcot.results import (
    build_imgcot_report,
    imgcot_tables,
    load_imgcot_runs,
    plot_accuracy_tokens,
)

view = section_view(
    heading=lambda report: report.label,
    tables=imgcot_tables,
    notes_caption="Checks (specs/imgcot.md §5; reported as findings, never tuned)",
    notes=lambda report: report.checks,
    figures=[png_figure("ImgCoT arms: test accuracy against tokens spent before the answer",
                        plot_accuracy_tokens)],
)  # fmt: skip
SECTION = runs_section(
    "ImgCoT (reconstructed)", "imgcot", load_imgcot_runs, build_imgcot_report, view
)
