"""LoKRA's report section (the method is reconstructed): arms, arms against LoRA, the checks."""

from __future__ import annotations

from harness.sections import png_figure, runs_section, section_view
from harness.suites.lokra.results import (
    build_lokra_report,
    load_lokra_runs,
    lokra_tables,
    plot_lokra,
)

view = section_view(
    heading=lambda report: report.label,
    tables=lokra_tables,
    notes_caption="Checks (specs/lokra.md §5.2)",
    notes=lambda report: report.checks,
    figures=[png_figure("LoKRA arms with their intervals", plot_lokra)],
)
SECTION = runs_section("LoKRA (reconstructed)", "lokra", load_lokra_runs, build_lokra_report, view)
