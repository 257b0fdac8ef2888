"""The accuracy-cost frontier of one task, with intervals on both axes.

HAL (the Holistic Agent Leaderboard, arXiv 2510.11977) plots accuracy against dollars per task
with no intervals. Here every point carries its 95% interval on both axes (accuracy as the score
rows give it, cost per unit as the cost rows give it), and each model its probability of being on
the frontier: the share of bootstrap resamples of the units, drawn once for all models (they ran
the same units), in which no other model is at least as accurate and at most as costly, and
strictly better in one. Ties are on the frontier together. Where the design nests units in
clusters (`design.cluster`), the resample draws clusters, the independent units, not items.
A percentile bootstrap over a few draws is too sure of itself, so each resample's means are
moved away from the estimate by Hesterberg's expansion sqrt(k / (k - 1)) t(k - 1) / z, which
is 1.29 at k = 8, 1.03 at 60 and goes to 1: the spread is then a 95% t interval's. On boards
of 8 problems x 130 items with a true accuracy tie (tests/test_cost_frontier.py),
P(on frontier) is at most 0.05 or at least 0.95 on 8.7% of boards by that t (measured: 25 of
400), where it was on 52 of 100 resampling items and 60 of 400 resampling clusters unexpanded.

The cost axis is dollars per unit when some model of the task has a price; a model without one is
listed as "cost unknown", never drawn at 0. When no model has a price, the axis is tokens per unit
(input + output), which every model reports, and the table says so.

Units that some model lacks are left out of the bootstrap (the resample is over the shared units),
and a model with fewer than two shared units (clusters) gets no probability.

References:
    Hesterberg, T. C. (2015). What teachers should know about the bootstrap: resampling in the
    undergraduate statistics curriculum. The American Statistician 69(4), 371-386.

"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.report._cost import CostRow, UnitCosts
from harness.stats import Interval

BOOTSTRAP = 2000  # resamples of the units; the probability's Monte-Carlo error is below 0.011
SEED = 20_251_014  # a fixed seed, so a report is the same each time it is built


def on_frontier(accuracy: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Which points no other point dominates.

    A point dominates another when it is as accurate or more, as cheap or cheaper, and strictly
    better in one. The last axis indexes models; leading axes are resamples.
    """
    a_i, a_j = accuracy[..., :, None], accuracy[..., None, :]  # (..., m, 1), (..., 1, m)
    c_i, c_j = cost[..., :, None], cost[..., None, :]
    dominated = (a_j >= a_i) & (c_j <= c_i) & ((a_j > a_i) | (c_j < c_i))  # (..., m, m)
    return ~dominated.any(axis=-1)


def expansion(k: int, confidence: float = 0.95) -> float:
    """Hesterberg's factor for a bootstrap over k draws: sqrt(k / (k - 1)) t(k - 1) / z."""
    from scipy import stats

    q = 1 - (1 - confidence) / 2
    return math.sqrt(k / (k - 1)) * float(stats.t.ppf(q, k - 1) / stats.norm.ppf(q))


def frontier_probability(
    accuracy: np.ndarray,
    cost: np.ndarray,
    *,
    clusters: Sequence[Any] | None = None,
    resamples: int = BOOTSTRAP,
    seed: int = SEED,
) -> np.ndarray:
    """Each model's share of resamples of the units (or clusters) in which it is on the frontier.

    Args:
        accuracy: (models, units) score per unit.
        cost: (models, units) cost per unit, on the same units.
        clusters: One label per unit where units nest (the design's cluster): clusters are
            then resampled whole, and a resample's mean is its items' mean. None: units are.
        resamples: Bootstrap resamples.
        seed: Seed of the resampling.

    Returns:
        (models,) shares; nan for every model below 2 clusters (units).

    Notes:
        Each resample's means are moved from the estimate by `expansion(k)` for k clusters
        (units), so that the spread the dominance test sees is a t interval's, not a
        percentile bootstrap's, which is too narrow over a few clusters.

    """
    m, n = accuracy.shape
    if clusters is None:
        codes = np.arange(n)
    else:
        if len(clusters) != n:
            raise ValueError(f"need one cluster label per unit: {n} units, {len(clusters)}")
        codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]
        codes = codes.reshape(-1)
    k = int(codes.max()) + 1 if n else 0
    if k < 2:
        return np.full(m, math.nan)
    size = np.bincount(codes, minlength=k).astype(float)  # (k,) units per cluster
    acc_sum = np.stack([np.bincount(codes, weights=a, minlength=k) for a in accuracy])  # (m, k)
    cost_sum = np.stack([np.bincount(codes, weights=c, minlength=k) for c in cost])  # (m, k)
    acc0, cost0 = accuracy.mean(axis=1), cost.mean(axis=1)  # (m,)
    factor = expansion(k)
    rng = np.random.default_rng(seed)
    hits = np.zeros(m)
    for start in range(0, resamples, 250):  # in blocks: (250, k) indices at a time
        b = min(250, resamples - start)
        idx = rng.integers(0, k, size=(b, k))  # (b, k)
        weight = size[idx].sum(axis=-1)  # (b,) items drawn
        acc = (acc_sum[:, idx].sum(axis=-1) / weight).T  # (b, m)
        cst = (cost_sum[:, idx].sum(axis=-1) / weight).T  # (b, m)
        acc, cst = acc0 + factor * (acc - acc0), cost0 + factor * (cst - cost0)
        hits += on_frontier(acc, cst).sum(axis=0)
    return hits / resamples


@dataclass(frozen=True)
class FrontierPoint:
    """One model on the accuracy-cost plane."""

    model: str  # arm label
    accuracy: Interval  # accuracy with its 95% interval (the score row's)
    cost: Interval | None  # cost per unit with its interval; None: cost unknown
    on_frontier: bool  # on the frontier of the point estimates
    probability: float  # share of bootstrap resamples on the frontier; nan: not computed
    log: str  # the log(s) behind it
    manifest: str  # the manifest's digest ("" without one)


@dataclass(frozen=True)
class Frontier:
    """The frontier of one task (one comparable group)."""

    suite: str  # suite name
    task: str  # the group's label
    axis: str  # "dollars" or "tokens (input + output)": what cost means here
    unit: str  # what a point's cost is per
    shared: int  # units in the bootstrap (shared by every model with a known cost)
    resamples: int  # bootstrap resamples
    points: tuple[FrontierPoint, ...]  # cheapest known cost first, then the unknown ones
    cluster: str | None = None  # the design's cluster key: clusters were resampled
    clusters: int = 0  # clusters among the shared units (0: units were resampled)


def task_frontier(
    suite: str,
    task: str,
    arms: Mapping[str, tuple[UnitCosts, CostRow, Interval]],
    clusters: Mapping[str, str] | None = None,
    cluster: str | None = None,
) -> Frontier:
    """The frontier of one group from each arm's per-unit costs, cost row and accuracy.

    `clusters` gives each unit's cluster where the design (cluster key `cluster`) nests units.
    """
    priced = any(c.dollars is not None for c, _, _ in arms.values())
    axis = "dollars" if priced else "tokens (input + output)"

    def per_unit(c: UnitCosts) -> dict[str, float] | None:
        if priced:
            return c.dollars
        if c.invalid:  # a log's usage that is not numbers: unknown, never plotted
            return None
        return c.tokens["total"] if c.called else None  # no call: cost unknown, not 0 tokens

    known = {name: per_unit(c) for name, (c, _, _) in arms.items()}
    costed = [name for name, v in known.items() if v is not None]
    shared = sorted(set.intersection(*(set(arms[n][0].correct) & {
        u for u, x in (known[n] or {}).items() if not math.isnan(x)} for n in costed))
    ) if costed else []  # fmt: skip
    probability = dict.fromkeys(arms, math.nan)
    if len(shared) >= 2 and costed:
        acc = np.array([[arms[n][0].correct[u] for u in shared] for n in costed])  # (m, n)
        cst = np.array([[(known[n] or {})[u] for u in shared] for n in costed])  # (m, n)
        labels = [clusters[u] for u in shared] if clusters else None
        p = frontier_probability(acc, cst, clusters=labels)
        probability.update(zip(costed, p.tolist(), strict=True))
    intervals = {n: _cost_interval(arms[n][1], priced) for n in costed}
    estimates = [(n, arms[n][2].estimate, intervals[n].estimate) for n in costed]
    flags = on_frontier(np.array([a for _, a, _ in estimates]),
                        np.array([c for _, _, c in estimates])) if estimates else []  # fmt: skip
    front = {n: bool(f) for (n, _, _), f in zip(estimates, flags, strict=True)}
    points = [
        FrontierPoint(name, accuracy, intervals.get(name), front.get(name, False),
                      probability[name], row.log, row.manifest)
        for name, (_, row, accuracy) in arms.items()
    ]  # fmt: skip
    points.sort(key=lambda p: (p.cost is None, p.cost.estimate if p.cost else 0.0, p.model))
    unit = next(iter(arms.values()))[1].unit if arms else "problem"
    k = len({clusters[u] for u in shared}) if clusters else 0
    return Frontier(suite, task, axis, unit, len(shared), BOOTSTRAP, tuple(points),
                    cluster if clusters else None, k)  # fmt: skip


def _cost_interval(row: CostRow, priced: bool) -> Interval:
    """The row's dollars per unit, or its input + output tokens per unit."""
    return row.dollars if priced else row.tokens["total"]


def frontier_table(frontier: Frontier) -> tuple[str, list[str], list[list[str]]]:
    """Caption, header and rows of a frontier."""
    digits = ".6f" if frontier.axis == "dollars" else ".1f"
    head = ["model", "accuracy (95% CI)", f"{frontier.axis} per {frontier.unit} (95% CI)",
            "on frontier", "P(on frontier)", "manifest"]  # fmt: skip
    body = [
        [p.model, p.accuracy.text(".3f"),
         p.cost.text(digits) if p.cost is not None and not math.isnan(p.cost.estimate)
         else "cost unknown", "yes" if p.on_frontier else ("–" if p.cost is None else "no"),
         "–" if math.isnan(p.probability) else f"{p.probability:.2f}", p.manifest or "none"]
        for p in frontier.points
    ]  # fmt: skip
    drawn = (f"the {frontier.clusters} {frontier.cluster} clusters of the {frontier.shared} "
             f"shared {frontier.unit}s" if frontier.cluster else
             f"the {frontier.shared} shared {frontier.unit}s")  # fmt: skip
    caption = (
        f"{frontier.task}: accuracy against {frontier.axis} per {frontier.unit}; P(on frontier) "
        f"over {frontier.resamples} bootstrap resamples of {drawn}, expanded for few draws "
        "(Hesterberg); a model without a price is cost unknown, never 0"
    )
    return caption, head, body
