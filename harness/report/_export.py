"""Results a program can read: the report's and the eval summary's frozen results as JSON.

`costs` holds each log's cost and latency row (`harness.report._cost`); in the report they are
in the generic section's results, with each group's accuracy-cost frontier.

`harness report --format json` and `harness eval --json` write these. Every number comes from
the same frozen results the Markdown and HTML render (scores, pairs, the suites' sections), so
a script that reads the JSON sees what a person reads in the report. nan and inf are written as
null, so the output is strict JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from harness.compare import PairResult, SummaryRow, comparable_groups, group_pairs
from harness.logs import LogRecord
from harness.report._data import ReportData
from harness.report._sections import SectionOutput
from harness.sections import load_section
from harness.stats import clean_json


def _pair(p: PairResult) -> dict[str, Any]:
    return {
        "suite": p.suite, "task": p.task, "model_a": p.model_a, "model_b": p.model_b,
        "test": dataclasses.asdict(p.test) if p.test else None, "p": p.p, "p_holm": p.p_holm,
        "note": p.note,
    }  # fmt: skip


def sections_json(outputs: Iterable[SectionOutput]) -> list[dict[str, Any]]:
    """Each section's title and its frozen results."""
    return [
        {"title": o.section.title, "results": clean_json(list(o.results))}
        for o in outputs
        if o.results
    ]


def report_json(data: ReportData) -> dict[str, Any]:
    """Everything `harness report` shows, as JSON-ready data."""
    return clean_json(
        {
            "scores": [r.as_dict() for r in data.scores],
            "pairs": [_pair(p) for p in data.pairs],
            "not_comparable": [dataclasses.asdict(n) for n in data.not_comparable],
            "errors": [dataclasses.asdict(e) for e in data.errors],
            "left_out": [dataclasses.asdict(b) for b in data.left_out],
            "sections": sections_json(data.sections),
            "logs": list(data.logs),
        }
    )


def eval_json(rows: Sequence[SummaryRow], records: Sequence[LogRecord]) -> dict[str, Any]:
    """What `harness eval --json` prints: the score rows, the pairs, and the suites' sections."""
    generic = [r for r in records if not r.design.own_table]
    groups, _ = comparable_groups(generic)
    pairs = [p for g in groups for p in group_pairs(g)]
    paths = sorted({r.design.section for r in records if r.design.section})
    outputs = []
    for path in paths:
        section = load_section(path)
        mine = [r for r in records if r.design.section == path]
        outputs.append(SectionOutput(section, tuple(section.build(mine))))
    from harness.report._cost import cost_row

    return clean_json(
        {
            "scores": [r.as_dict() for r in rows],
            "costs": [cost_row([r]) for r in records],
            "pairs": [_pair(p) for p in pairs],
            "sections": sections_json(outputs),
        }
    )
