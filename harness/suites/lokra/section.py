"""LoKRA's report section (the method is reconstructed): arms, arms against LoRA, the checks.

Declared in the catalog (`Suite.section`); one result per finished log, headed by its preset and
file (`harness.suites.sections`).
"""

from __future__ import annotations

from harness.suites.lokra.results import (
    build_lokra_report,
    load_lokra_runs,
    lokra_tables,
    plot_lokra,
)
from harness.suites.sections import per_log_section, png_figure, section_view

view = section_view(
    heading=lambda report: report.label,
    tables=lokra_tables,
    notes_caption="Checks (specs/lokra.md §5.2)",
    notes=lambda report: report.checks,
    figures=[png_figure("LoKRA arms with their intervals", plot_lokra)],
)
SECTION = per_log_section(
    "LoKRA (reconstructed)",
    "lokra",
    lambda heading, record: build_lokra_report(heading, load_lokra_runs(record.path)),
    view,
)
