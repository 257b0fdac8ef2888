"""posttrainbench's report section: agents' weighted scores, runs, flags, pairs with the base.

Declared in the catalog (`Suite.section`); one result per log (`harness.sections`).
"""

from __future__ import annotations

from harness.logs import LogRecord, load_training_runs
from harness.sections import per_log_section, section_view
from harness.suites.posttrainbench.results import RUN_KEYS, PtbReport, build_report, report_tables


def _build(heading: str, record: LogRecord) -> PtbReport:
    return build_report(heading, load_training_runs(record.path, RUN_KEYS))


def flag_evidence(report: PtbReport) -> list[str]:
    """The first hit of each anti-cheat flag raised in a run, one line each."""
    notes = []
    for run in report.runs:
        for check, found in (run.get("anticheat") or {}).get("evidence", {}).items():
            if found.get("flagged"):
                first = (found.get("evidence") or [""])[0]
                notes.append(f"{run['agent']} {run['configuration']}: {check} "
                             f"({found.get('count')} hits), e.g. {first}")  # fmt: skip
    return notes


view = section_view(
    heading=lambda report: report.heading,
    tables=report_tables,
    notes_caption="Anti-cheat evidence (first hit of each flag)",
    notes=flag_evidence,
)
SECTION = per_log_section("posttrainbench", "posttrainbench", _build, view)
