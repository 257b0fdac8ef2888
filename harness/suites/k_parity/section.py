"""k-parity's report section: arms, arms paired by seed, the paper's claims, learning curves."""

from __future__ import annotations

from harness.logs import LogRecord
from harness.sections import Figure, per_log_section, preset_of, section_view
from harness.suites.k_parity.results import (
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


def _build(heading: str, record: LogRecord) -> ParityReport:
    return build_parity_report(heading, load_runs(record.path), preset_of(record) or None)


view = section_view(
    heading=lambda report: report.task,
    tables=parity_tables,
    notes_caption=PARITY_CLAIMS,
    notes=lambda report: report.claims,
    figures=[Figure("k-parity learning curves, one panel per arm, one line per seed", plot_curves)],
)
SECTION = per_log_section("k-parity", "k-parity", _build, view)
