"""ProtoKV's report section: accuracy by delay, the gain over token retention, the checks."""

from __future__ import annotations

from harness.sections import png_figure, runs_section, section_view
from harness.suites.protokv.results import (
    build_protokv_report,
    load_protokv_runs,
    plot_protokv,
    protokv_tables,
)

view = section_view(
    heading=lambda report: report.label,
    tables=protokv_tables,
    notes_caption="Checks (specs/protokv.md §5) and the paper's claim",
    notes=lambda report: report.checks,
    figures=[png_figure("Accuracy against query delay, every arm, with 95% intervals over seeds",
                        plot_protokv)],
)  # fmt: skip
SECTION = runs_section(
    "ProtoKV (authors' code; toy world reconstructed)",
    "protokv",
    load_protokv_runs,
    build_protokv_report,
    view,
)
