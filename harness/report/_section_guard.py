"""A suite's report section, built so that a log it cannot read is left out, not the report.

A log can say it belongs to a suite whose section then finds none of the fields it needs (an
arith log labelled k-parity, a crafted metadata field). The section's error is a fact about the
log: the log is listed with the reason, and the section is built from the others.
"""

from __future__ import annotations

from typing import Any

from harness.logs import BadLog, LogRecord

# What a section raises on a record whose fields are not what its suite writes
SECTION_INPUT_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def _reason(ex: BaseException) -> str:
    text = " ".join(str(ex).split())[:160]
    return f"its suite's section cannot read it: {type(ex).__name__}: {text}"


def build_guarded(section: Any, records: list[LogRecord]) -> tuple[tuple[Any, ...], list[BadLog]]:
    """`section.build(records)`, less the records that it cannot read alone, with their reasons."""
    try:
        return tuple(section.build(records)), []
    except SECTION_INPUT_ERRORS:
        pass
    good: list[LogRecord] = []
    bad: list[BadLog] = []
    for record in records:
        try:
            section.build([record])
            good.append(record)
        except SECTION_INPUT_ERRORS as ex:
            bad.append(BadLog(record.path, _reason(ex)))
    if not good:
        return (), bad
    try:
        return tuple(section.build(good)), bad
    except SECTION_INPUT_ERRORS as ex:
        return (), bad + [BadLog(r.path, _reason(ex)) for r in good]
