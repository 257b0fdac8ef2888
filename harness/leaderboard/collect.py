"""The logs a site is built from: read by `harness.logs`, grouped by `harness.compare._pairs`.

A log that cannot be used (errored, cancelled, still running or half-written, unreadable, or
with no sample) is listed with its reason, as is one superseded by a newer log of the same
identity, and one of a suite whose own report section is its table (the suites that train:
`harness report` shows them). Logs of one task that differ in more than the model become
separate task columns, and each such pair is listed as not comparable with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.compare import Group, NotComparable, comparable_groups
from harness.logs import BadLog, DesignLookup, LogRecord, read_logs

__all__ = ["BadLog", "Collected", "collect"]


@dataclass(frozen=True)
class Collected:
    """What a folder of logs holds."""

    groups: tuple[Group, ...]  # comparable logs of one task, one per model
    bad: tuple[BadLog, ...]  # logs left out, each with its reason
    not_comparable: tuple[NotComparable, ...]  # logs of one task that are not paired, and why

    @property
    def records(self) -> tuple[LogRecord, ...]:
        """Every log used."""
        return tuple(r for g in self.groups for r in g.records)


def collect(dirs: Iterable[str], designs: DesignLookup, threads: int = 4) -> Collected:
    """Read every log under `dirs`; group the usable ones into comparable tables.

    `designs` gives a suite's design by name (the catalog's `catalog_design`, which the command
    passes); a log whose design says its section is its table (`own_table`) is left out here.
    """
    selection = read_logs(dirs, threads, designs=designs)
    used: list[LogRecord] = []
    bad = list(selection.left_out)
    for record in selection.used:
        if record.design.own_table:
            bad.append(BadLog(record.path, "its suite's own section reports it: `harness report`"))
        else:
            used.append(record)
    groups, refused = comparable_groups(used)
    return Collected(tuple(groups), tuple(sorted(bad, key=lambda b: b.path)), tuple(refused))
