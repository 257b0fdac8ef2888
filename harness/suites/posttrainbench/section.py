"""posttrainbench's report section: agents' weighted scores, runs, flags, pairs with the base.

Declared in the catalog (`Suite.section`); `harness report` renders it, one result per log.
"""

from __future__ import annotations

from harness.logs import LogRecord, load_training_runs
from harness.report.sections import SectionView, log_heading, per_log_section
from harness.suites.posttrainbench.report import RUN_KEYS, PtbReport, build_report, report_tables


def _build(record: LogRecord) -> PtbReport:
    return build_report(log_heading(record), load_training_runs(record.path, RUN_KEYS))


def view(report: PtbReport) -> SectionView:
    """The tables of one log, and the flags' evidence as notes."""
    notes = []
    for run in report.runs:
        for check, found in (run.get("anticheat") or {}).get("evidence", {}).items():
            if found.get("flagged"):
                first = (found.get("evidence") or [""])[0]
                notes.append(f"{run['agent']} {run['configuration']}: {check} "
                             f"({found.get('count')} hits), e.g. {first}")  # fmt: skip
    return SectionView(
        heading=report.heading,
        tables=tuple(report_tables(report)),
        notes_caption="Anti-cheat evidence (first hit of each flag)",
        notes=tuple(notes),
    )


SECTION = per_log_section("posttrainbench", "posttrainbench", _build, view)
