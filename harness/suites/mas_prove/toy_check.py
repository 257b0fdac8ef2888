"""The spec's toy verification model against what a run measured (issue: "measured p and a").

From one configuration's searches: p = the candidates' accuracy (process labels), a = how often
the verifier kept a right candidate when the set was mixed. The toy model (spec §3) predicts
P(kept right) = p^N + (1 - p^N - (1 - p)^N) a per search. The observed rate is exactly
(#all-right sets + #mixed sets where a right one was kept) / #searches, so with a measured on
the same searches the only assumption under test is the binomial one: that the N candidates of
a search are independently right with one common p. For a chain of K steps with one search per
step (pattern `single`), the model predicts the chain right with probability q^K.

Intervals are percentile cluster-bootstrap intervals over problems (every search of a problem
resampled together), printed only from `MIN_CLUSTERS` problems up; below that they are "not
estimable" (a cluster bootstrap under-covers with few clusters: `harness.stats._resampling`).
Coverage, simulated from the toy model (300 replications; the suite's tests check it): 91.7 to
95.0% at 50 problems, 92.0 to 94.3% at 100, for nominal 95%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats import Interval
from harness.suites.mas_prove.ranking import toy_step_accuracy

MIN_CLUSTERS = 50  # below this many problems no bootstrap interval is printed
COUNT_KEYS = (
    "mp_candidates",
    "mp_candidates_correct",
    "mp_searches",
    "mp_mixed",
    "mp_mixed_pick_correct",
    "mp_all_correct",
)


@dataclass(frozen=True)
class ToyCheck:
    """Predicted against observed for one configuration."""

    label: str  # the configuration
    n: int  # candidates per search
    problems: int  # clusters (problems)
    searches: int  # searches pooled
    p: Interval  # candidates' accuracy
    a: Interval  # the verifier's skill on mixed sets
    predicted: Interval  # toy model's P(kept right) from p and a
    observed: Interval  # kept-right rate
    difference: Interval  # observed - predicted
    mixed_observed: float  # share of searches with a mixed set
    mixed_predicted: float  # 1 - p^N - (1 - p)^N
    chain_predicted: Interval | None  # mean over problems of q^K (single pattern), else None
    chain_observed: Interval | None  # chain accuracy (single pattern), else None


def _stats(counts: np.ndarray, n: int, steps: np.ndarray | None, correct: np.ndarray | None):
    """(p, a, predicted, observed, difference, chain predicted, chain observed) of pooled counts.

    counts: (problems, 6) sums of COUNT_KEYS per problem; steps, correct: (samples,) or None.
    """
    cand, cand_ok, searches, mixed, mixed_ok, all_ok = counts.sum(axis=0)
    p = cand_ok / cand if cand else math.nan
    a = mixed_ok / mixed if mixed else math.nan
    predicted = toy_step_accuracy(p, a, n) if not (math.isnan(p) or math.isnan(a)) else math.nan
    observed = (all_ok + mixed_ok) / searches if searches else math.nan
    chain_pred = chain_obs = math.nan
    if steps is not None and correct is not None and not math.isnan(predicted):
        chain_pred = float(np.mean(predicted**steps))
        chain_obs = float(np.mean(correct))
    return p, a, predicted, observed, observed - predicted, chain_pred, chain_obs


def toy_check(
    label: str,
    n: int,
    problem_counts: dict[str, np.ndarray],
    chain: dict[str, list[tuple[int, int]]] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
) -> ToyCheck:
    """Predicted against observed, with cluster-bootstrap intervals over problems.

    Args:
        label: The configuration.
        n: Candidates per search.
        problem_counts: Per problem, the sums of `COUNT_KEYS` over its samples.
        chain: Per problem, (steps, chain right 0/1) of each sample, for the single pattern.
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling.

    """
    ids = sorted(problem_counts)
    counts = np.array([problem_counts[i] for i in ids], dtype=float)  # (k, 6)
    k = len(ids)

    def flat(chosen: list[int]) -> tuple[np.ndarray | None, np.ndarray | None]:
        if chain is None:
            return None, None
        rows = [pair for j in chosen for pair in chain[ids[j]]]
        return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])

    point = _stats(counts, n, *flat(list(range(k))))
    boot = np.full((n_resamples, 7), np.nan)
    if k >= MIN_CLUSTERS:
        rng = np.random.default_rng(seed)
        for b in range(n_resamples):
            draw = rng.integers(0, k, size=k)
            boot[b] = _stats(counts[draw], n, *flat(list(draw)))

    def interval(j: int) -> Interval:
        method = "cluster bootstrap over problems"
        if k < MIN_CLUSTERS:
            why = f"{method}, not estimable at {k} problems (needs {MIN_CLUSTERS})"
            return Interval(point[j], math.nan, math.nan, 0.95, why, k)
        col = boot[:, j][~np.isnan(boot[:, j])]
        if col.size == 0:
            return Interval(point[j], math.nan, math.nan, 0.95, f"{method}: no resample", k)
        low, high = np.quantile(col, [0.025, 0.975])
        return Interval(point[j], float(low), float(high), 0.95, method, k)

    cand, _, searches, mixed, _, _ = counts.sum(axis=0)
    p_hat = point[0]
    mixed_pred = 1 - p_hat**n - (1 - p_hat) ** n if not math.isnan(p_hat) else math.nan
    return ToyCheck(
        label=label,
        n=n,
        problems=k,
        searches=int(searches),
        p=interval(0),
        a=interval(1),
        predicted=interval(2),
        observed=interval(3),
        difference=interval(4),
        mixed_observed=float(mixed / searches) if searches else math.nan,
        mixed_predicted=float(mixed_pred),
        chain_predicted=interval(5) if chain is not None else None,
        chain_observed=interval(6) if chain is not None else None,
    )
