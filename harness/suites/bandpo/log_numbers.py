"""One bandpo log's numbers: each clip rule's runs, and the comparisons of every metric.

`harness.suites.bandpo.results` builds them from a log; `claims` reads the paper's claims off
them and the section shows them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from harness.stats import Comparison, Interval
from harness.suites.bandpo.metrics import Metric


@dataclass(frozen=True)
class ArmRuns:
    """One arm's seeds."""

    arm: str
    seeds: int  # runs, errored ones included
    errors: int  # runs that errored (left out of every mean)
    reached: Interval | None  # bandit: share of seeds reaching p_best > 0.5 (Wilson)
    median: Interval | None  # bandit: median iterations, order-statistic interval


@dataclass(frozen=True)
class BandReport:
    """One bandpo log's numbers."""

    label: str  # task and log file
    experiment: str  # "bandit" or "rlvr"
    arms: tuple[ArmRuns, ...]
    metrics: tuple[Metric, ...]  # in the order of `comparisons`
    comparisons: tuple[Comparison, ...]  # one per metric: arms, and each arm against clip
    claims: tuple[str, ...]  # one line per claim of the paper
    runs: tuple[dict[str, Any], ...]  # the finished runs (for the plots)
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)  # the run settings


def comparison(report: BandReport, key: str) -> Comparison | None:
    """The comparison of the metric with this key, if the log has it."""
    for metric, comp in zip(report.metrics, report.comparisons, strict=True):
        if metric.key == key:
            return comp
    return None
