"""The bandpo part of `harness report`: every metric per clip rule over seeds, against clip.

For one log (one experiment: bandit or RLVR), per metric of `harness.suites.bandpo.metrics`:
- each arm's mean over the seeds that finished, with the comparison engine's interval
  (`harness.stats._compare`, the suite's design: unit seed): t over seeds, clipped to [0, 1] for
  shares; an errored run is left out of the means and counted;
- each arm against clip on the same seeds: below 20 seeds the exact sign-flip p and the
  interval that inverts it (none below 6 seeds), from 20 a paired bootstrap; Holm over the
  arms of one metric (one family per metric);
- on the bandit, the median iterations with its order-statistic interval and the share of
  seeds that reached p_best > 0.5 (Wilson);
- one line per claim of the paper saying which way it came out here (`harness.suites.bandpo.
  claims`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.stats import POSITIVE, compare, estimate, median_interval
from harness.suites.bandpo.arms import BASELINE
from harness.suites.bandpo.claims import claims_of
from harness.suites.bandpo.log_numbers import ArmRuns, BandReport
from harness.suites.bandpo.metrics import BANDIT_METRICS, Metric, rlvr_metrics
from harness.suites.catalog import suite_of_task

# unit: seed
DESIGN = suite_of_task(f"{__package__}.task:bandpo_bandit").design


def load_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample runs of a bandpo log; an errored one has `error`."""
    runs = load_training_runs(location, ("experiment", "arm", "seed", "settings"))
    return [{**r, "seed": int(r["seed"])} for r in runs]


def _design(metric: Metric) -> Any:
    """The suite's design for one metric: its support ([0, 1], or >= 0) and direction."""
    support = POSITIVE if metric.score == "unbounded" else (0.0, 1.0)
    return dataclasses.replace(DESIGN, score=metric.score, bounds=support,
                               direction=metric.direction)  # fmt: skip


def build_report(label: str, runs: list[dict[str, Any]]) -> BandReport:
    """Arms, comparisons against clip and the claims of one log's runs."""
    experiment = next((str(r["experiment"]) for r in runs if r.get("experiment")), "bandit")
    order = {BASELINE: 0}
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(runs, key=lambda r: (order.get(r["arm"], 1), r["arm"], r["seed"])):
        by_arm.setdefault(r["arm"], []).append(r)
    done = {a: [r for r in rs if "error" not in r] for a, rs in by_arm.items()}
    finished = [r for rs in done.values() for r in rs]
    if experiment == "bandit":
        readers = BANDIT_METRICS
    else:
        readers = rlvr_metrics(int(finished[0]["eval_samples"]) if finished else 32)
    arms = []
    for arm, rs in by_arm.items():
        reached = median = None
        if experiment == "bandit":
            hits = [None if "error" in r else r["iterations_to_target"] for r in rs]
            steps = np.array([math.inf if h is None else h for h in hits], dtype=float)
            binary = dataclasses.replace(DESIGN, score="binary")
            reached = estimate(binary, [float(h is not None) for h in hits])
            median = median_interval(steps)
        arms.append(ArmRuns(arm, len(rs), len(rs) - len(done[arm]), reached, median))
    pairs = [(a, BASELINE) for a in by_arm if a != BASELINE] if BASELINE in by_arm else []
    comparisons = []
    for metric, value in readers:
        scores = {}
        for arm, rs in done.items():
            values = {str(r["seed"]): value(r) for r in rs}
            scores[arm] = {s: float(v) for s, v in values.items() if v is not None}
        comparisons.append(compare(_design(metric), scores, pairs=pairs, metric=metric.label))
    settings = next((r.get("settings") or {} for r in runs), {})
    metrics = tuple(m for m, _ in readers)
    partial = BandReport(label, experiment, tuple(arms), metrics, tuple(comparisons), (),
                         tuple(finished), dict(settings))  # fmt: skip
    return dataclasses.replace(partial, claims=claims_of(partial))
