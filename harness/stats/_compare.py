"""The one comparison engine: per-arm estimates and paired tests over a declared design.

Every table that compares arms (models, training arms, decoding variants) gets its numbers here:
the generic report and its pairs, `harness eval`'s summary, the leaderboard, and each suite's
own section. Nothing else calls a paired test or Holm.

Input is one mapping per arm from unit to score (`compare`), or units added one at a time
(`Tally`, for runs that are still going). A unit seen several times in an arm (epochs, or
replicates of a configuration) scores the mean of what was seen.

The rules, by the design's score type and the number of units n (or clusters k, where the
design clusters its units):

- arm estimate: Wilson for 0/1 units (clustered Wilson with the Korn-Graubard effective size
  when units nest in clusters); otherwise a t interval over units (clustered t on k - 1
  degrees of freedom), clipped to the design's bounds for bounded scores, which the method
  names ("t, clipped to [0, 1]").
- pair a - b on the units both arms have, each p-value with the interval that inverts the
  same test (so they agree about 0): McNemar's asymptotic test with the Tango score interval
  for 0/1 units; for other scores, the paired t-test from 20 units up, and below that the
  exact sign-flip p-value (no interval where n is too small for 95%). With clusters, the
  pair is tested on the clusters' mean differences by the same rules, so a few clusters get
  the exact test. Those rules are the ones the coverage tests in tests/stats justify.
- family: Holm over the tested pairs of one call; a pair that could not be tested has p = nan,
  reads "not tested", and stays out of Holm. A pair is significant when its Holm p <= alpha
  (`harness.stats._design.rejects`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.stats._design import Design, rejects
from harness.stats._exact import sign_flip_interval
from harness.stats._intervals import Interval, clustered_t_interval, t_interval, wilson
from harness.stats._multiple import holm
from harness.stats._paired import PairedTest, mcnemar, paired_permutation, paired_t
from harness.stats._resampling import clustered_wilson

# Below this many units (or clusters), the exact sign-flip test instead of the paired t: at
# n = 20 the t interval covered 94.7 to 95.6% for symmetric differences (uniform, beta, t3),
# where the percentile bootstrap it replaced covered 92.4 to 93.7% (tests/stats/
# test_paired_agreement.py).
FEW = 20


def _is_binary(values: Iterable[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def score_kind(design: Design, values: Iterable[float]) -> str:
    """The type the engine uses for these values under the design.

    A binary design whose units are not all 0/1 (means over epochs) is bounded in [0, 1]; a
    binary or bounded design whose values leave its bounds is unbounded (a scorer that returns
    other numbers than the suite declared), so that no interval is clipped to a wrong range.
    """
    values = list(values)
    if design.score == "unbounded":
        return "unbounded"
    low, high = (0.0, 1.0) if design.score == "binary" else design.support
    if not all(low <= v <= high for v in values):
        return "unbounded"
    if design.score == "binary" and _is_binary(values):
        return "binary"
    return "bounded"


def _clip(ci: Interval, bounds: tuple[float, float]) -> Interval:
    low, high = bounds
    if not ci.estimable:
        return ci
    method = f"{ci.method}, clipped to [{low:g}, {high:g}]"
    return dataclasses.replace(ci, low=max(low, ci.low), high=min(high, ci.high), method=method)


def _nested(clusters: Sequence[Any] | None) -> bool:
    """Whether cluster labels group units into two clusters or more, one holding two units.

    With a single cluster (one trained seed) inference is conditional on it: its units are
    then treated as independent, which is what can be said of one seed.
    """
    return clusters is not None and 1 < len(set(clusters)) < len(clusters)


def estimate(
    design: Design, values: Sequence[float], clusters: Sequence[Any] | None = None
) -> Interval:
    """An arm's score over its units with a 95% interval chosen by the design.

    Args:
        design: The suite's design.
        values: One score per unit (a unit's mean over its epochs and replicates).
        clusters: One cluster label per unit, where the design clusters its units.

    Returns:
        An `Interval`; `n` counts units. A proportion's interval always lies in [0, 1].

    """
    values = [float(v) for v in values]
    kind = score_kind(design, values)
    nested = _nested(clusters)
    if kind == "binary":
        if nested:
            return clustered_wilson(np.asarray(values), list(clusters or ()))
        return wilson(int(sum(values)), len(values))
    ci = clustered_t_interval(values, list(clusters or ())) if nested else t_interval(values)
    if kind == "bounded":
        return _clip(ci, (0.0, 1.0) if design.score == "binary" else design.support)
    low, high = design.support
    if not all(low <= v <= high for v in values):
        note = f"values leave the declared support [{low:g}, {high:g}]"
        return dataclasses.replace(ci, method=f"{ci.method}; {note}")
    if math.isfinite(low) != math.isfinite(high):
        return one_sided(ci, design.support)
    return ci


def one_sided(ci: Interval, support: tuple[float, float]) -> Interval:
    """A mean's t interval moved to the log scale of its distance from the support's finite end.

    For a quantity that cannot pass one end E (seconds, tokens, dollars, an entropy: E = 0),
    the distance m = |mean - E| gets m * exp(+-q se / m), the delta method on log m: the
    interval never passes E, and it is skewed away from it as such means are. With every value
    at E (m = 0) it is the point E. Coverage at small n: tests/stats/test_support.py.
    """
    if not ci.estimable:
        return ci
    low, high = support
    end, sign = (low, 1.0) if math.isfinite(low) else (high, -1.0)
    m = sign * (ci.estimate - end)
    half_up = ci.high - ci.estimate  # q * se
    method = f"{ci.method}, on the log scale of the distance from {end:g}"
    if m <= 0.0 or not math.isfinite(half_up):
        return dataclasses.replace(ci, low=end if sign > 0 else ci.low,
                                   high=end if sign < 0 else ci.high, method=method)  # fmt: skip
    factor = math.exp(half_up / m)
    near, far = end + sign * m / factor, end + sign * m * factor
    return dataclasses.replace(ci, low=min(near, far), high=max(near, far), method=method)


def _sign_flip(x: np.ndarray, y: np.ndarray) -> PairedTest:
    """Exact sign-flip p-value and the interval that inverts the same test."""
    test = paired_permutation(x, y)
    ci = sign_flip_interval(x - y)
    confidence = ci.confidence if ci.estimable else math.nan
    method = f"{test.method}; interval: {ci.method}"
    return dataclasses.replace(test, low=ci.low, high=ci.high, confidence=confidence, method=method)


def paired_difference(
    design: Design,
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Any] | None = None,
) -> PairedTest | None:
    """Test of a - b on paired units, chosen by the score type and n; None below 2 units.

    Each test comes with the interval that inverts it, so the interval excludes 0 exactly
    when p <= 0.05: McNemar's asymptotic test with the Tango score interval for 0/1 units;
    from `FEW` units up the paired t-test and its t interval (an analytic tail, so a large
    Holm family can be decided); below that the exact sign-flip test and its interval.

    Args:
        design: The suite's design.
        a: One arm's score per unit.
        b: The other arm's score on the same units, in the same order.
        clusters: One cluster label per unit, where the design clusters its units; the test
            then runs on the clusters' mean scores.

    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"need one score per unit in each arm, got {x.shape} and {y.shape}")
    suffix = ""
    if _nested(clusters):
        labels = np.asarray([str(c) for c in clusters or ()])
        keys = sorted(set(labels))
        x = np.array([x[labels == k].mean() for k in keys])  # (k,)
        y = np.array([y[labels == k].mean() for k in keys])  # (k,)
        suffix = f", over {len(keys)} {design.cluster or 'cluster'} means"
    if x.size < 2:
        return None
    kind = score_kind(design, np.concatenate([x, y]).tolist())  # floats: 3x faster to scan
    if not suffix and kind == "binary":
        test = mcnemar(x, y)
    elif x.size >= FEW:
        test = paired_t(x, y)
        if kind != "unbounded":  # a difference of scores in [lo, hi] lies in +/-(hi - lo)
            width = design.support[1] - design.support[0]
            low, high = max(-width, test.low), min(width, test.high)
            if (low, high) != (test.low, test.high):
                method = f"{test.method}, clipped to [{-width:g}, {width:g}]"
                test = dataclasses.replace(test, low=low, high=high, method=method)
    else:
        test = _sign_flip(x, y)
    return dataclasses.replace(test, method=test.method + suffix) if suffix else test


@dataclass(frozen=True, slots=True)
class ArmEstimate:
    """One arm's score over its units.

    Attributes:
        arm: The arm's name (a model, a training arm, a decoding variant).
        interval: The score and its 95% interval, its method named; `n` counts units.
        clusters: How many clusters the units fall in (equal to the units when unclustered).

    """

    arm: str
    interval: Interval
    clusters: int

    @property
    def n(self) -> int:
        """Units scored."""
        return self.interval.n


@dataclass(frozen=True, slots=True)
class PairEstimate:
    """Arm a against arm b on the units both have.

    Attributes:
        arm_a: First arm.
        arm_b: Second arm.
        test: The difference a - b, its interval and raw p-value; None when not tested.
        p_holm: Holm-adjusted over the family's tested pairs; nan: not tested.
        shared: Units both arms have.
        note: Why the pair was not tested ("" when it was).

    """

    arm_a: str
    arm_b: str
    test: PairedTest | None
    p_holm: float
    shared: int
    note: str = ""

    @property
    def p(self) -> float:
        """The raw p-value (nan: not tested)."""
        return self.test.p_value if self.test is not None else math.nan

    def significant(self, alpha: float) -> bool:
        """Whether the Holm-adjusted p rejects "no difference" at `alpha`."""
        return rejects(self.p_holm, alpha)

    def flipped(self) -> PairEstimate:
        """The same pair as b - a."""
        test = self.test
        if test is not None:
            test = dataclasses.replace(
                test,
                estimate=0.0 - test.estimate,
                low=0.0 - test.high,
                high=0.0 - test.low,
                b01=test.b10,
                b10=test.b01,
            )
        return dataclasses.replace(self, arm_a=self.arm_b, arm_b=self.arm_a, test=test)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Per-arm estimates and Holm-corrected pairs of one metric over one design.

    Attributes:
        metric: What was compared ("accuracy", "final test accuracy", ...).
        design: The design the numbers follow.
        arms: One estimate per arm, in the order given.
        pairs: One per pair asked for, Holm-corrected as one family.

    """

    metric: str
    design: Design
    arms: tuple[ArmEstimate, ...]
    pairs: tuple[PairEstimate, ...]

    def arm(self, name: str) -> ArmEstimate | None:
        """The estimate of one arm, or None."""
        return next((a for a in self.arms if a.arm == name), None)

    def pair(self, a: str, b: str) -> PairEstimate | None:
        """The pair a - b, whichever way it was tested; None if it was not asked for."""
        for p in self.pairs:
            if (p.arm_a, p.arm_b) == (a, b):
                return p
            if (p.arm_a, p.arm_b) == (b, a):
                return p.flipped()
        return None

    def as_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready data (nan becomes None)."""
        return clean_json(
            {
                "metric": self.metric,
                "design": {
                    "unit": self.design.unit,
                    "score": self.design.score,
                    "cluster": self.design.cluster,
                    "family": self.design.family,
                    "alpha": self.design.alpha,
                },
                "arms": [
                    {"arm": a.arm, "clusters": a.clusters, **dataclasses.asdict(a.interval)}
                    for a in self.arms
                ],
                "pairs": [pair_dict(p) for p in self.pairs],
            }
        )


def pair_dict(p: PairEstimate) -> dict[str, Any]:
    """One pair as JSON-ready data."""
    test = dataclasses.asdict(p.test) if p.test is not None else None
    return clean_json(
        {
            "arm_a": p.arm_a,
            "arm_b": p.arm_b,
            "shared": p.shared,
            "test": test,
            "p_holm": p.p_holm,
            "note": p.note,
        }  # fmt: skip
    )


def clean_json(value: Any) -> Any:
    """Data `json.dumps` can write strictly: nan and inf become None, tuples lists, recursively."""
    if isinstance(value, np.generic | np.ndarray):
        return clean_json(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, set | frozenset):
        return clean_json(sorted(value, key=str))
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return clean_json(dataclasses.asdict(value))
    return value


def _shared(a: Mapping[str, float], b: Mapping[str, float]) -> list[str]:
    return sorted(set(a) & set(b))


def holm_adjusted(p_values: Sequence[float], alpha: float) -> tuple[float, ...]:
    """Holm over one family of p-values tested elsewhere (paired DeLong, ...).

    nan is "not tested": it stays nan and out of the family.
    """
    tested = [p for p in p_values if not math.isnan(p)]
    adjusted = iter(holm(tested, alpha=alpha).adjusted if tested else ())
    return tuple(math.nan if math.isnan(p) else float(next(adjusted)) for p in p_values)


def pair_family(
    design: Design,
    pairs: Sequence[tuple[str, str, Mapping[str, float], Mapping[str, float]]],
    clusters: Mapping[str, Any] | None = None,
) -> tuple[PairEstimate, ...]:
    """Each (name a, name b, scores a, scores b) tested on shared units; one Holm family.

    Args:
        design: The suite's design.
        pairs: The pairs of the family, each with its two arms' scores by unit.
        clusters: The cluster of each unit, where the design clusters its units.

    """
    raw: list[tuple[str, str, PairedTest | None, int]] = []
    for name_a, name_b, a, b in pairs:
        units = _shared(a, b)
        labels = [clusters[u] for u in units] if clusters is not None else None
        test = paired_difference(design, [a[u] for u in units], [b[u] for u in units], labels)
        raw.append((name_a, name_b, test, len(units)))
    adjusted = holm_adjusted([t.p_value if t else math.nan for _, _, t, _ in raw], design.alpha)
    out = []
    for (name_a, name_b, test, shared), p_holm in zip(raw, adjusted, strict=True):
        if test is None:
            note = f"not tested (fewer than two shared {design.unit}s)"
            out.append(PairEstimate(name_a, name_b, None, math.nan, shared, note))
        elif math.isnan(test.p_value):
            out.append(PairEstimate(name_a, name_b, test, math.nan, shared, "not tested"))
        else:
            out.append(PairEstimate(name_a, name_b, test, p_holm, shared))
    return tuple(out)


def compare(
    design: Design,
    scores: Mapping[str, Mapping[str, float]],
    *,
    clusters: Mapping[str, Any] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    metric: str = "score",
) -> Comparison:
    """Estimates for every arm and Holm-corrected tests of the pairs asked for.

    Args:
        design: The suite's design.
        scores: Per arm, the score of each unit it has.
        clusters: The cluster of each unit, where the design clusters its units.
        pairs: The pairs to test (one family); None: the design's family rule
            (`Design.pairs`: every pair of arms in sorted order, or each against the baseline).
        metric: What the scores are, for tables and JSON.

    """
    arms = []
    for name, by_unit in scores.items():
        units = sorted(by_unit)
        labels = [clusters[u] for u in units] if clusters is not None else None
        ci = estimate(design, [by_unit[u] for u in units], labels)
        arms.append(ArmEstimate(name, ci, len(set(labels)) if labels else len(units)))
    if pairs is None:
        pairs = design.pairs(list(scores))
    family = [(a, b, scores[a], scores[b]) for a, b in pairs]
    return Comparison(metric, design, tuple(arms), pair_family(design, family, clusters))


class Tally:
    """Units added one at a time, and the comparison so far: the engine run online.

    `add(arm, unit, value)` records a score (several for one unit are averaged, as epochs
    are); `result()` is `compare` over what has been added.
    """

    def __init__(self, design: Design, *, metric: str = "score") -> None:
        """An empty tally for `design`."""
        self.design = design
        self.metric = metric
        self._sums: dict[str, dict[str, list[float]]] = {}
        self._clusters: dict[str, Any] = {}

    def add(self, arm: str, unit: str, value: float, cluster: Any = None) -> None:
        """Record `value` for `unit` of `arm` (and the unit's cluster, if the design has one)."""
        if not math.isfinite(value):
            raise ValueError(f"{arm}/{unit}: a score must be finite, got {value}")
        cell = self._sums.setdefault(arm, {}).setdefault(unit, [0.0, 0.0])
        cell[0] += float(value)
        cell[1] += 1.0
        if cluster is not None:
            self._clusters[unit] = cluster

    def scores(self) -> dict[str, dict[str, float]]:
        """Per arm, each unit's mean score so far."""
        return {arm: {u: s / c for u, (s, c) in units.items()} for arm, units in self._sums.items()}

    def result(self, pairs: Sequence[tuple[str, str]] | None = None) -> Comparison:
        """The comparison over everything added so far."""
        clusters = self._clusters if self.design.cluster else None
        return compare(self.design, self.scores(), clusters=clusters, pairs=pairs,
                       metric=self.metric)  # fmt: skip
