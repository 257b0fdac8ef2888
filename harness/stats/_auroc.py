"""AUROC by ranks, with DeLong's interval and DeLong's test for two scorers on the same items.

Labels are 0/1 with 1 the positive class, and a higher score means "more likely positive".
For error detection the positive class is "is an error", so a score that is high for
correct items (a judge's P(correct)) goes in negated.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


@dataclass(frozen=True, slots=True)
class AurocInterval:
    """An AUROC with a two-sided confidence interval.

    Attributes:
        estimate: The rank (Mann-Whitney) AUROC: P(score of a positive > score of a
            negative), ties counted 1/2.
        low: Lower bound, clipped to 0; nan when the standard error is undefined.
        high: Upper bound, clipped to 1; nan when the standard error is undefined.
        se: DeLong's standard error of `estimate`; nan with fewer than two items in a class.
        confidence: Nominal coverage of [low, high], for example 0.95.
        method: How the interval was computed: "delong".
        n_pos: Number of positive items (label 1).
        n_neg: Number of negative items (label 0).

    """

    estimate: float
    low: float
    high: float
    se: float
    confidence: float
    method: str
    n_pos: int
    n_neg: int

    def summary(self, *, fmt: Literal["text", "html"] = "text") -> str:
        """Render as one line of text or a one-row HTML table.

        For example `AUROC 0.812 [0.771, 0.853] (delong, se=0.021, n_pos=120, n_neg=380)`.
        """
        if fmt == "text":
            return (
                f"AUROC {self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] "
                f"({self.method}, se={self.se:.3g}, n_pos={self.n_pos}, n_neg={self.n_neg})"
            )
        if fmt == "html":
            cells = {
                "AUROC": f"{self.estimate:.3f}",
                "low": f"{self.low:.3f}",
                "high": f"{self.high:.3f}",
                "se": f"{self.se:.3g}",
                "method": html.escape(self.method),
                "n_pos": str(self.n_pos),
                "n_neg": str(self.n_neg),
            }
            return _html_row(cells)
        raise ValueError(f"fmt must be one of 'text', 'html', got {fmt!r}")


@dataclass(frozen=True, slots=True)
class PairedAuroc:
    """The difference of two AUROCs measured on the same items, with DeLong's test.

    Attributes:
        estimate: auroc_a - auroc_b.
        low: Lower bound of the interval for the difference, clipped to -1.
        high: Upper bound of the interval for the difference, clipped to 1.
        se: DeLong's standard error of the difference; nan with fewer than two items in a
            class.
        z: estimate / se; 0 when the two scorers rank every pair alike (estimate and se
            both 0), +/-inf when se is 0 but the estimate is not.
        p_value: Two-sided p-value for "the two AUROCs are equal", from the normal law of z.
        correlation: Correlation of the two AUROC estimates under DeLong's covariance; nan
            when either has zero variance.
        auroc_a: AUROC of scorer a.
        auroc_b: AUROC of scorer b.
        confidence: Nominal coverage of [low, high].
        method: How it was computed: "delong paired".
        n: Number of items.
        n_pos: Number of positive items (label 1).
        n_neg: Number of negative items (label 0).

    """

    estimate: float
    low: float
    high: float
    se: float
    z: float
    p_value: float
    correlation: float
    auroc_a: float
    auroc_b: float
    confidence: float
    method: str
    n: int
    n_pos: int
    n_neg: int

    def summary(self, *, fmt: Literal["text", "html"] = "text") -> str:
        """Render as one line of text or a one-row HTML table.

        For example `AUROC a-b = +0.041 [+0.012, +0.070], z = 2.77, p = 0.0056
        (delong paired, r=0.62, a=0.853, b=0.812, n=500)`.
        """
        if fmt == "text":
            return (
                f"AUROC a-b = {self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}], "
                f"z = {self.z:.3g}, p = {self.p_value:.3g} ({self.method}, "
                f"r={self.correlation:.2f}, a={self.auroc_a:.3f}, b={self.auroc_b:.3f}, "
                f"n={self.n})"
            )
        if fmt == "html":
            cells = {
                "AUROC a-b": f"{self.estimate:+.3f}",
                "low": f"{self.low:+.3f}",
                "high": f"{self.high:+.3f}",
                "z": f"{self.z:.3g}",
                "p": f"{self.p_value:.3g}",
                "r": f"{self.correlation:.2f}",
                "a": f"{self.auroc_a:.3f}",
                "b": f"{self.auroc_b:.3f}",
                "method": html.escape(self.method),
                "n": str(self.n),
            }
            return _html_row(cells)
        raise ValueError(f"fmt must be one of 'text', 'html', got {fmt!r}")


def _html_row(cells: dict[str, str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in cells)
    body = "".join(f"<td>{c}</td>" for c in cells.values())
    return f"<table><tr>{head}</tr><tr>{body}</tr></table>"


def _check(scores: np.ndarray, labels: ArrayLike, name: str = "scores") -> np.ndarray:
    """Validate one-dimensional finite scores against 0/1 labels; return the positive mask."""
    y = np.asarray(labels)
    if scores.ndim != 1 or scores.shape != y.shape:
        raise ValueError(
            f"{name} and labels must be one-dimensional with one entry per item, got shapes "
            f"{scores.shape} and {y.shape}"
        )
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{name} must be finite; drop or impute nan and inf first")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0/1 (or booleans), with 1 the positive class")
    pos = y == 1
    n_pos = int(pos.sum())
    if n_pos == 0 or n_pos == y.size:
        raise ValueError(
            f"AUROC needs at least one positive (label 1) and one negative (label 0) item, got "
            f"{n_pos} positive and {y.size - n_pos} negative; it is undefined otherwise"
        )
    return pos


def _placements(scores: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values from midranks, for r scorers at once.

    Args:
        scores: (r, n) scores, one row per scorer.
        pos: (n,) boolean mask of positives.

    Returns:
        v10: (r, n_pos), for each positive the fraction of negatives it outranks (ties 1/2).
        v01: (r, n_neg), for each negative the fraction of positives that outrank it.

    """
    x, y = scores[:, pos], scores[:, ~pos]  # (r, m), (r, n)
    m, n = x.shape[1], y.shape[1]
    tz = stats.rankdata(np.concatenate([x, y], axis=1), axis=1)  # (r, m + n) midranks
    tx = stats.rankdata(x, axis=1)  # (r, m)
    ty = stats.rankdata(y, axis=1)  # (r, n)
    v10 = (tz[:, :m] - tx) / n
    v01 = 1.0 - (tz[:, m:] - ty) / m
    return v10, v01


def _cov(v: np.ndarray) -> np.ndarray:
    """(r, r) sample covariance of the rows of v (r, m); nan when m < 2."""
    m = v.shape[1]
    if m < 2:
        return np.full((v.shape[0], v.shape[0]), math.nan)
    d = v - v.mean(axis=1, keepdims=True)
    return d @ d.T / (m - 1)


def _clip(low: float, high: float, lo: float, hi: float) -> tuple[float, float]:
    """Clip bounds to [lo, hi], keeping nan (max/min would silently drop it)."""
    if math.isnan(low) or math.isnan(high):
        return math.nan, math.nan
    return max(lo, low), min(hi, high)


def _z_crit(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(stats.norm.ppf(1 - (1 - confidence) / 2))


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Rank (Mann-Whitney) AUROC, ties counted 1/2.

    Args:
        scores: One score per item; higher means more likely positive.
        labels: 0/1 per item, 1 the positive class.

    Returns:
        P(score of a random positive > score of a random negative) + 1/2 P(tie), computed
        from the rank sum of the positives in O(n log n).

    Raises:
        ValueError: If shapes differ, scores are not finite, labels are not 0/1, or a
            class is empty.

    Notes:
        Equals U / (n_pos * n_neg) with U the Mann-Whitney statistic of the positives, as
        returned by `scipy.stats.mannwhitneyu(pos_scores, neg_scores).statistic`. Constant
        scores give exactly 0.5.

    References:
        Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area under a
        receiver operating characteristic (ROC) curve. Radiology 143(1), 29-36.

    """
    s = np.asarray(scores, dtype=float)
    pos = _check(s, labels)
    m = int(pos.sum())
    n = s.size - m
    rank_sum = float(stats.rankdata(s)[pos].sum())
    return (rank_sum - m * (m + 1) / 2) / (m * n)


def delong(scores: ArrayLike, labels: ArrayLike, *, confidence: float = 0.95) -> AurocInterval:
    """AUROC with DeLong's nonparametric standard error and a Wald interval.

    Args:
        scores: One score per item; higher means more likely positive.
        labels: 0/1 per item, 1 the positive class.
        confidence: Nominal coverage of the interval.

    Returns:
        An `AurocInterval` with method "delong".

    Raises:
        ValueError: If a class is empty, or for the input errors listed in `auroc`.

    Notes:
        The variance is S10 / n_pos + S01 / n_neg, with S10 and S01 the sample variances of
        the placement values (each positive's fraction of negatives below it, each
        negative's fraction of positives above it). These come from three midrankings, as
        in Sun and Xu (2014), so the cost is O(n log n) rather than O(n_pos * n_neg).

        The interval is estimate +/- z * se, clipped to [0, 1]. It covers close to nominal
        for moderate samples away from 0 and 1 (in this module's tests, 2,000 binormal
        samples of 100 + 100 with AUROC 0.76 covered 95.1%), and undercovers near 1 at
        small n. When every positive outranks every negative the placements are constant,
        se is 0 and the interval collapses to the point. With one item in a class the
        variance is undefined, and se, low and high are nan.

    References:
        DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the areas
        under two or more correlated receiver operating characteristic curves: a
        nonparametric approach. Biometrics 44(3), 837-845.
        Sun, X. and Xu, W. (2014). Fast implementation of DeLong's algorithm for comparing
        the areas under correlated receiver operating characteristic curves. IEEE Signal
        Processing Letters 21(11), 1389-1393.

    """
    z = _z_crit(confidence)
    s = np.asarray(scores, dtype=float)
    pos = _check(s, labels)
    v10, v01 = _placements(s[None, :], pos)
    m, n = v10.shape[1], v01.shape[1]
    estimate = float(v10.mean())
    se = math.sqrt(float(_cov(v10)[0, 0]) / m + float(_cov(v01)[0, 0]) / n)
    low, high = _clip(estimate - z * se, estimate + z * se, 0.0, 1.0)
    return AurocInterval(estimate, low, high, se, confidence, "delong", m, n)


def delong_paired(
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    labels: ArrayLike,
    *,
    confidence: float = 0.95,
) -> PairedAuroc:
    """DeLong's test and interval for the difference of two AUROCs on the same items.

    Args:
        scores_a: Scorer a's score per item; higher means more likely positive.
        scores_b: Scorer b's score for the same items, in the same order.
        labels: 0/1 per item, 1 the positive class.
        confidence: Nominal coverage of the interval for auroc_a - auroc_b.

    Returns:
        A `PairedAuroc` with method "delong paired".

    Raises:
        ValueError: If the score vectors differ in shape, a class is empty, or for the
            input errors listed in `auroc`.

    Notes:
        Var(a - b) = Var(a) + Var(b) - 2 Cov(a, b), where the covariance of the two
        estimates comes from the covariance of their placement values on the same
        positives and negatives. It is computed as the variance of the placement
        differences, which is the same quantity and is exactly 0 for identical scorers,
        whose z is then 0 and p-value 1. The test is two-sided and normal; its size is
        close to nominal for a few hundred items (tests: two independent scorers with equal
        AUROC 0.76 on 100 + 100 items rejected 5.5% of 2,000 times at 0.05). The
        interval, estimate +/- z * se clipped to [-1, 1], is the one that test inverts.

    References:
        DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the areas
        under two or more correlated receiver operating characteristic curves: a
        nonparametric approach. Biometrics 44(3), 837-845.
        Sun, X. and Xu, W. (2014). Fast implementation of DeLong's algorithm for comparing
        the areas under correlated receiver operating characteristic curves. IEEE Signal
        Processing Letters 21(11), 1389-1393.

    """
    zc = _z_crit(confidence)
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(
            f"scores_a and scores_b must score the same items, got shapes {a.shape} and {b.shape}"
        )
    pos = _check(a, labels, "scores_a")
    _check(b, labels, "scores_b")
    v10, v01 = _placements(np.stack([a, b]), pos)  # (2, m), (2, n)
    m, n = v10.shape[1], v01.shape[1]
    auc_a, auc_b = (float(v) for v in v10.mean(axis=1))
    cov = _cov(v10) / m + _cov(v01) / n  # (2, 2)
    var_d = float(_cov(v10[:1] - v10[1:])[0, 0] / m + _cov(v01[:1] - v01[1:])[0, 0] / n)
    diff = auc_a - auc_b
    se = math.sqrt(max(var_d, 0.0)) if not math.isnan(var_d) else math.nan
    if math.isnan(se):
        z = p = math.nan
    elif se == 0.0:
        z = 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
        p = 1.0 if diff == 0.0 else 0.0
    else:
        z = diff / se
        p = float(2 * stats.norm.sf(abs(z)))
    denom = math.sqrt(cov[0, 0] * cov[1, 1]) if cov[0, 0] > 0 and cov[1, 1] > 0 else 0.0
    corr = float(cov[0, 1] / denom) if denom > 0 else math.nan
    low, high = _clip(diff - zc * se, diff + zc * se, -1.0, 1.0)
    return PairedAuroc(
        diff, low, high, se, z, p, corr, auc_a, auc_b, confidence, "delong paired", a.size, m, n
    )
