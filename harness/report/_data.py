"""What `harness report` shows, computed from the logs that `harness.logs` reads.

- The newest finished log of each identity is used; the others are listed with their reasons
  (unreadable, unfinished, superseded). Replicates (logs that differ only in the generation
  seed) are all used: each gets its row, and their arm a pooled row (`harness.compare._pairs`).
- Scores: one row per log and metric, as `harness eval` prints it (`harness.compare._scores`),
  the task labelled by what tells it from other runs of the task. Suites whose section is their
  table (the suites that train) have no row here.
- Pairs: per group of comparable logs, every pair of models with its paired test and the
  Holm-corrected p-value (`harness.compare._pairs`); logs of one task that may not be compared
  are listed with the reason.
- Sections: the generic ones (token budgets), then each suite's own section, as the catalog
  declares them. Nothing here names a suite.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.compare import (
    NotComparable,
    PairResult,
    SummaryRow,
    arm_rows,
    comparable_groups,
    error_reasons,
    group_pairs,
    score_rows,
)
from harness.logs import BadLog, DesignLookup, LogRecord, read_logs
from harness.report._budgets import BUDGETS
from harness.report._section_guard import build_guarded
from harness.report._sections import SectionOutput
from harness.sections import ReportSection, load_section

GENERIC_SECTIONS: tuple[ReportSection, ...] = (BUDGETS,)


@dataclass(frozen=True)
class ErrorLine:
    """How many sample-epochs of a log errored for one reason."""

    log: str  # the log file
    task: str  # the task's label
    model: str  # model
    reason: str  # the error message, or why the score could not be read
    count: int  # sample-epochs


@dataclass(frozen=True)
class ReportData:
    """Everything the report renders."""

    scores: tuple[SummaryRow, ...]  # one per log and metric; `task` is the group's label
    pairs: tuple[PairResult, ...]  # one per comparable pair of models
    not_comparable: tuple[NotComparable, ...]  # logs of one task that are not paired, and why
    left_out: tuple[BadLog, ...]  # logs not used, and why
    errors: tuple[ErrorLine, ...]  # errored samples by reason
    sections: tuple[SectionOutput, ...]  # generic sections, then the suites' own
    logs: tuple[str, ...]  # the logs used


def _suite_parts(records: list[LogRecord]) -> tuple[list[LogRecord], dict[str, list]]:
    """Records of the generic path, and the sectioned suites' records by section path.

    Each log's section and `own_table` are read from the design attached to its record.
    """
    generic: list[LogRecord] = []
    sectioned: dict[str, list[LogRecord]] = {}
    for record in records:
        if record.design.section:
            sectioned.setdefault(record.design.section, []).append(record)
        if not record.design.own_table:
            generic.append(record)
    return generic, sectioned


def build_report(dirs: list[str], designs: DesignLookup) -> ReportData:
    """Scores, Holm-corrected paired comparisons and sections for every log under `dirs`.

    `designs` gives a suite's design by name (the catalog's `catalog_design`, which the command
    passes); it is attached to each log's record where the log is read.
    """
    selection = read_logs(dirs, designs=designs)
    generic, sectioned = _suite_parts(list(selection.used))
    groups, refused = comparable_groups(generic)
    scores: list[SummaryRow] = []
    pairs: list[PairResult] = []
    errors: list[ErrorLine] = []
    for group in groups:
        for records in group.arms.values():
            rows = [row for record in records for row in score_rows(record)]
            if len(records) > 1:  # replicates: each its row, then the arm pooled
                rows += arm_rows(records)
            scores += [dataclasses.replace(r, task=group.label) for r in rows]
        for record in group.records:
            errors += [
                ErrorLine(record.path, group.label, record.model, reason, count)
                for reason, count in sorted(error_reasons(record).items())
            ]
        pairs += group_pairs(group)
    sections = [SectionOutput(s, tuple(s.build(generic))) for s in GENERIC_SECTIONS]
    left_out = list(selection.left_out)
    for path, records in sorted(sectioned.items()):
        section = load_section(path)
        results, unreadable = build_guarded(section, records)  # one bad log is left out
        left_out += unreadable
        sections.append(SectionOutput(section, results))
    return ReportData(
        scores=tuple(scores),
        pairs=tuple(pairs),
        not_comparable=tuple(refused),
        left_out=tuple(left_out),
        errors=tuple(errors),
        sections=tuple(s for s in sections if s.results),
        logs=tuple(r.path for r in selection.used),
    )
