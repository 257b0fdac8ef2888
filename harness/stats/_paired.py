"""Paired comparisons: two models scored on the same items.

Pairing removes the between-item variation that both models share, so these tests are far
more sensitive than comparing two independent intervals. Every function returns a
`PairedTest` whose estimate is mean(a) - mean(b).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from harness.stats._resampling import _CHUNK_ELEMENTS, _percentile, _resample_sums

_MCNEMAR_METHODS = ("asymptotic", "exact", "midp")

# Halvings of the bracket when a score interval's bound is found by bisection: 2**-64 of a
# bracket at most 2 wide is below the spacing of doubles near any bound that is not 0.
_BISECTIONS = 64

# Relative to sum(|d|): sums of n doubles differ by order-dependent rounding of about
# n * 1e-16 of it, far below this, and real differences in resampled sums are far above it.
_TIE_TOLERANCE = 1e-10

# Up to this many non-zero differences the sign-flip test enumerates all 2**m flips (2**20
# sums are 8 MiB; the test took 5 ms at m = 20 here); above it, it draws `n_resamples` at random.
EXACT_MAX = 20


def all_sign_flip_sums(d: np.ndarray) -> np.ndarray:
    """Sum of s * d over every sign vector s in {-1, +1}**n, shape (2**n,), in no set order.

    Built by doubling: the sums over the first j items, each plus and minus item j + 1.
    """
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate((sums + value, sums - value))
    return sums


@dataclass(frozen=True, slots=True)
class PairedTest:
    """A difference between two models on the same items, with a test of no difference.

    Attributes:
        estimate: mean(a) - mean(b); for 0/1 scores, the difference of accuracies.
        low: Lower bound of the interval for the difference; nan when the method gives none.
        high: Upper bound of the interval for the difference; nan when the method gives none.
        confidence: Nominal coverage of [low, high]; nan when the method gives no interval.
        p_value: Two-sided p-value for "the two models score the same on average".
        method: How it was computed, for example "mcnemar exact".
        n: Number of paired items.
        b01: Items where b scored higher than a (for 0/1 scores: a wrong, b right).
        b10: Items where a scored higher than b (for 0/1 scores: a right, b wrong).

    """

    estimate: float
    low: float
    high: float
    confidence: float
    p_value: float
    method: str
    n: int
    b01: int
    b10: int

    def summary(self, *, fmt: Literal["text", "html"] = "text") -> str:
        """Render as one line of text or as a one-row HTML table.

        For example `a-b = +0.050 [+0.012, +0.088], p = 0.0123 (mcnemar exact, n=200,
        b10=30, b01=20)`; the interval is left out when the method gives none.
        """
        if fmt == "text":
            interval = (
                "" if math.isnan(self.confidence) else f" [{self.low:+.3f}, {self.high:+.3f}]"
            )
            return (
                f"a-b = {self.estimate:+.3f}{interval}, p = {self.p_value:.3g} "
                f"({self.method}, n={self.n}, b10={self.b10}, b01={self.b01})"
            )
        if fmt == "html":
            head = "".join(
                f"<th>{h}</th>" for h in ("a-b", "low", "high", "p", "method", "n", "b10", "b01")
            )
            bound = "" if math.isnan(self.confidence) else "{:+.3f}"
            cells = (
                f"{self.estimate:+.3f}",
                bound.format(self.low),
                bound.format(self.high),
                f"{self.p_value:.3g}",
                html.escape(self.method),
                str(self.n),
                str(self.b10),
                str(self.b01),
            )
            body = "".join(f"<td>{c}</td>" for c in cells)
            return f"<table><tr>{head}</tr><tr>{body}</tr></table>"
        raise ValueError(f"fmt must be one of 'text', 'html', got {fmt!r}")


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"a and b must be one-dimensional with one score per item each, got shapes "
            f"{x.shape} and {y.shape}"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("scores must be finite; drop or impute nan and inf first")
    return x, y


def _binary(x: np.ndarray, name: str) -> None:
    if not np.all((x == 0) | (x == 1)):
        raise ValueError(f"{name} must hold 0/1 scores (or booleans) for mcnemar")


def _score_z(b10: int, b01: int, n: int, delta: float) -> float:
    """Tango's score statistic for p10 - p01 = delta, from the counts of an n-item 2x2 table.

    (b10 - b01 - n delta) / sqrt(n V), with V = p10 + p01 - delta**2 at the maximum-likelihood
    (p10, p01) under p10 - p01 = delta: p01 = q solves 2n q**2 + B q + C = 0 with
    B = -(b10 + b01) + (2n - b10 + b01) delta and C = -b01 delta (1 - delta), and then
    V = 2q + delta (1 - delta). At delta = 0 it is McNemar's (b10 - b01) / sqrt(b10 + b01).
    """
    bb = -(b10 + b01) + (2 * n - b10 + b01) * delta
    cc = -b01 * delta * (1 - delta)
    q = (-bb + math.sqrt(max(bb * bb - 8 * n * cc, 0.0))) / (4 * n)
    var = max(2 * q + delta * (1 - delta), 0.0)
    num = b10 - b01 - n * delta
    if var == 0.0:  # a table at the edge of the simplex: the statistic is 0 or infinite
        return 0.0 if num == 0 else math.copysign(math.inf, num)
    return num / math.sqrt(n * var)


def _score_p(b10: int, b01: int, n: int, delta: float) -> float:
    """Two-sided normal p-value of the score test of p10 - p01 = delta: 2 P(Z >= |z|)."""
    return math.erfc(abs(_score_z(b10, b01, n, delta)) / math.sqrt(2.0))


def _tango_interval(b10: int, b01: int, n: int, alpha: float) -> tuple[float, float]:
    """The deltas in [-1, 1] whose score test keeps them at level alpha, by bisection.

    The kept set is an interval around (b10 - b01) / n; each bound is found by bisection
    between the estimate (kept) and -1 or 1 (kept, and then the bound, or not).
    """
    estimate = (b10 - b01) / n

    def kept(delta: float) -> bool:
        return _score_p(b10, b01, n, delta) > alpha

    def bound(end: float) -> float:
        if kept(end):
            return end
        inside, outside = estimate, end
        for _ in range(_BISECTIONS):
            middle = 0.5 * (inside + outside)
            if middle in (inside, outside):
                break
            inside, outside = (middle, outside) if kept(middle) else (inside, middle)
        return inside

    return bound(-1.0), bound(1.0)


def mcnemar(
    a: ArrayLike,
    b: ArrayLike,
    *,
    method: Literal["asymptotic", "exact", "midp"] = "asymptotic",
    confidence: float = 0.95,
) -> PairedTest:
    """McNemar's test for paired 0/1 scores; the asymptotic one with the interval it inverts.

    Only the discordant items carry information about the difference: under the null, each
    of the b10 + b01 of them is equally likely to favour either model, so min(b10, b01) is
    Binomial(b10 + b01, 1/2).

    Args:
        a: 0/1 score of model a on each item.
        b: 0/1 score of model b on the same items, in the same order.
        method: "asymptotic" refers z = (b10 - b01) / sqrt(b10 + b01) to the normal, and
            gives the Tango score interval, which inverts the same test; "exact" doubles the
            binomial tail, P(X <= min(b10, b01)), capped at 1; "midp" subtracts
            P(X = min(b10, b01)) from that, which counts the observed table as half in the
            tail. The last two are tests without an interval.
        confidence: Nominal coverage of the interval; the interval excludes a difference of
            0 exactly when p <= 1 - confidence.

    Returns:
        A `PairedTest` with method "mcnemar asymptotic; interval: Tango score", or "mcnemar
        exact" or "mcnemar mid-p" with `low`, `high` and `confidence` nan.

    Raises:
        ValueError: For an unknown `method`, scores that are not 0/1, or unequal lengths.

    Notes:
        The interval is the set of differences delta = p10 - p01 in [-1, 1] that the score
        test of "p10 - p01 = delta" keeps at level 1 - confidence (Tango 1998): the test's
        statistic is (b10 - b01 - n delta) / sqrt(n V(delta)), V the variance of an item's
        difference at the maximum-likelihood cell probabilities under delta. At delta = 0 it
        is McNemar's z, so the interval excludes 0 exactly when p <= 1 - confidence: an
        interval that disagreed with the p-value (Agresti-Min beside the exact p, as before)
        excluded 0 while p > 0.05 in 3 to 5% of random tables at n = 20 to 200. Fagerland,
        Lydersen and Laake (2013, 2014) recommend this pair: the asymptotic test held its
        level better than the exact one, which is conservative. Enumerated and simulated
        here (20,000 tables a setting): size 1.3 to 5.5% at n = 10 to 200, where the exact
        test's was 0.01 to 4.1%; coverage 94.4 to 95.8% at n = 20 to 200 with p10 and p01 of
        0.05 to 0.4, higher with few discordant items, and 93.3% (exact) at n = 200 with
        p10 = 0.02 and p01 = 0, a table at the edge (Agresti-Min: 90.8% there).

        The exact p-value matches `statsmodels.stats.contingency_tables.mcnemar(exact=True)`.
        No interval for the difference inverts it (it conditions on the discordant count), so
        it comes without one. With no discordant items every p-value is 1 and the interval
        is the set kept by the score test around 0; with no items the estimate, bounds and
        p-value are nan.

    References:
        McNemar, Q. (1947). Note on the sampling error of the difference between correlated
        proportions or percentages. Psychometrika 12(2), 153-157.
        Tango, T. (1998). Equivalence test and confidence interval for the difference in
        proportions for the paired-sample design. Statistics in Medicine 17(8), 891-908.
        Fagerland, M. W., Lydersen, S. and Laake, P. (2013). The McNemar test for binary
        matched-pairs data: mid-p and asymptotic are better than exact conditional. BMC
        Medical Research Methodology 13, 91.
        Fagerland, M. W., Lydersen, S. and Laake, P. (2014). Recommended tests and confidence
        intervals for paired binomial proportions. Statistics in Medicine 33(16), 2850-2875.

    """
    if method not in _MCNEMAR_METHODS:
        raise ValueError(f"method must be one of {_MCNEMAR_METHODS}, got {method!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x, y = _pair(a, b)
    _binary(x, "a")
    _binary(y, "b")
    names = {
        "asymptotic": "mcnemar asymptotic; interval: Tango score",
        "exact": "mcnemar exact",
        "midp": "mcnemar mid-p",
    }
    name, nan = names[method], math.nan
    level = confidence if method == "asymptotic" else nan
    n = x.size
    if n == 0:
        return PairedTest(nan, nan, nan, level, nan, name, 0, 0, 0)
    b10 = int(np.sum((x == 1) & (y == 0)))
    b01 = int(np.sum((x == 0) & (y == 1)))
    estimate = (b10 - b01) / n
    if method == "asymptotic":
        low, high = _tango_interval(b10, b01, n, 1 - confidence)
        p_value = _score_p(b10, b01, n, 0.0)
        return PairedTest(estimate, low, high, confidence, p_value, name, n, b01, b10)
    discordant, smaller = b10 + b01, min(b10, b01)
    tail = 2 * stats.binom.cdf(smaller, discordant, 0.5)
    if method == "midp":
        tail -= stats.binom.pmf(smaller, discordant, 0.5)
    p_value = float(min(1.0, tail))
    return PairedTest(estimate, nan, nan, nan, p_value, name, n, b01, b10)


def paired_t(a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95) -> PairedTest:
    """Paired t-test of mean(a - b) = 0, with the t interval that inverts it.

    Args:
        a: Score of model a on each item (any real scores).
        b: Score of model b on the same items, in the same order.
        confidence: Nominal coverage of the interval; the interval excludes 0 exactly when
            p <= 1 - confidence.

    Returns:
        A `PairedTest` with method "paired t".

    Notes:
        With d = a - b over n items, t = mean(d) / (sd(d) / sqrt(n)) on n - 1 degrees of
        freedom; the p-value is the two-sided Student-t tail, so it can be as small as the
        data say (a Monte-Carlo p-value cannot go below 1 / (resamples + 1), which Holm over
        a large family never reaches), and the interval is mean(d) +/- t_(n-1) sd / sqrt(n).
        Coverage at n = 20 and 30 for skewed and heavy-tailed differences:
        tests/stats/test_paired_agreement.py.

        When every difference is the same value c (to within rounding of the scores), t is
        0 / 0 or infinite: with c = 0 the p-value is 1 and the interval [0, 0]; otherwise the
        exact sign-flip test gives p = 2 / 2**n (only the observed signs and their mirror are
        as extreme) and its interval, [c, c] where p <= 1 - confidence, and none (nan) where
        so few items cannot reach the level; the method says "no spread". With one item the
        bounds and p-value are nan; with none everything is.

    References:
        Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.

    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x, y = _pair(a, b)
    d = x - y
    n = d.size
    b01, b10 = int(np.sum(d < 0)), int(np.sum(d > 0))
    nan, name = math.nan, "paired t"
    if n == 0:
        return PairedTest(nan, nan, nan, confidence, nan, name, 0, 0, 0)
    mean = float(d.mean())
    if n == 1:
        return PairedTest(mean, nan, nan, confidence, nan, name, 1, b01, b10)
    # x - y is rounded to within eps/2 of itself, and x and y to within eps/2 of the scores
    # they stand for: differences this close are one value.
    rounding = 2 * np.finfo(float).eps * float(np.max(np.abs(x) + np.abs(y)))
    if float(d.max() - d.min()) <= rounding:
        if abs(mean) <= rounding:
            return PairedTest(0.0, 0.0, 0.0, confidence, 1.0, name, n, b01, b10)
        p_value = 2.0 ** (1 - n)
        bound = mean if p_value <= 1 - confidence else nan
        method = "exact sign-flip (no spread: every difference equal)"
        return PairedTest(mean, bound, bound, confidence, p_value, method, n, b01, b10)
    se = math.sqrt(float(np.sum((d - mean) ** 2)) / (n - 1) / n)
    # scipy.special's Student-t CDF and its inverse: scipy.stats.t.sf and .isf without the
    # argument checks, which cost more than the test over a family of 1,653 pairs.
    p_value = float(2 * special.stdtr(n - 1, -abs(mean) / se))
    half = float(special.stdtrit(n - 1, 1 - (1 - confidence) / 2)) * se
    return PairedTest(mean, mean - half, mean + half, confidence, p_value, name, n, b01, b10)


def _percentile_p(means: np.ndarray) -> float:
    """The least alpha at which the percentile interval of `means` leaves 0 out (capped at 1).

    With the means sorted, the alpha/2 quantile interpolates at h = alpha/2 * (B - 1), as
    `numpy.quantile` does; it is above 0 exactly when h passes the point h* where the
    interpolated quantile crosses 0. The same on the upper side with the means negated; the
    least alpha is 2 h* / (B - 1) for the nearer side.
    """
    size = means.size

    def crossing(ordered: np.ndarray) -> float:
        below = int(np.searchsorted(ordered, 0.0, side="right"))  # means <= 0
        if below in (0, size):
            return float(below > 0)
        left, right = float(ordered[below - 1]), float(ordered[below])
        return (below - 1 - left / (right - left)) / (size - 1)

    ordered = np.sort(means)
    return min(1.0, 2 * min(crossing(ordered), crossing(-ordered[::-1])))


def paired_bootstrap_diff(
    a: ArrayLike,
    b: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedTest:
    """Paired bootstrap: resample items, keeping each item's two scores together.

    Args:
        a: Score of model a on each item (any real scores, 0/1 included).
        b: Score of model b on the same items, in the same order.
        confidence: Nominal coverage of the percentile interval.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the `numpy.random.Generator`.

    Returns:
        A `PairedTest` with method "paired bootstrap".

    Notes:
        The interval is the percentile interval of the resampled mean(a - b), and the p-value
        is the one it inverts: the least 1 - confidence at which the percentile interval
        (quantiles interpolated as `numpy.quantile` does) leaves 0 out, twice the share of
        resampled means on the far side of 0 from the estimate. So the interval excludes 0
        exactly when p <= 1 - confidence, for any confidence down to a p of
        1 / (n_resamples + 1), the floor of the p-value (it is never 0). The p-value that
        shifted the bootstrap distribution to the null, used before, disagreed with the
        interval about 0 in 9.7% of data sets at n = 20 to 30. A percentile interval covers
        less than nominal at small n (91.0% at n = 20 for non-0/1 scores), and the p-value
        shares that; the comparison engine tests with `paired_t` instead.

        Scores with few distinct differences (0/1 scores give three) are resampled through
        multinomial counts of those differences, which is the same distribution as drawing
        items and takes milliseconds; otherwise the cost is about n * n_resamples drawn
        indices, about one second for 10**4 items and 10**4 resamples. With one item the
        bounds and p-value are nan; with none everything is.

    References:
        Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 16.
        Chapman & Hall.
        Berg-Kirkpatrick, T., Burkett, D. and Klein, D. (2012). An empirical investigation
        of statistical significance in NLP. EMNLP-CoNLL 2012, 995-1005.

    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    x, y = _pair(a, b)
    d = x - y
    n = d.size
    b01, b10 = int(np.sum(d < 0)), int(np.sum(d > 0))
    name = "paired bootstrap"
    if n == 0:
        return PairedTest(math.nan, math.nan, math.nan, confidence, math.nan, name, 0, 0, 0)
    total = float(d.sum())
    if n == 1:
        return PairedTest(total, math.nan, math.nan, confidence, math.nan, name, 1, b01, b10)
    sums = _resample_sums(d, n_resamples, np.random.default_rng(seed))
    low, high = _percentile(sums / n, confidence)
    p_value = max(_percentile_p(sums / n), 1 / (n_resamples + 1))
    return PairedTest(total / n, low, high, confidence, p_value, name, n, b01, b10)


def paired_permutation(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedTest:
    """Paired permutation (sign-flip) test: every sign flip of the differences, or random ones.

    Under the null that the two models are exchangeable on every item, a - b is as likely
    as b - a, so each difference keeps or flips its sign with probability 1/2.

    Args:
        a: Score of model a on each item (any real scores, 0/1 included).
        b: Score of model b on the same items, in the same order.
        n_resamples: Number of random sign flips, when there are more than `EXACT_MAX` (20)
            non-zero differences; below that every flip is enumerated.
        seed: Seed of the `numpy.random.Generator` for the random flips.

    Returns:
        A `PairedTest` with method "paired permutation (exact)" when every flip was
        enumerated, else "paired permutation (Monte Carlo)". A test gives no interval: `low`,
        `high` and `confidence` are nan (`harness.stats._exact.sign_flip_interval` inverts
        this test into one).

    Notes:
        Items with d = 0 do not change under a flip and are left out. With m <= 20 non-zero
        differences all 2**m flips are enumerated and the p-value is exact:
        #{|sum of flipped d| >= |sum of d|} / 2**m, at least 2 / 2**m (the observed signs and
        their mirror image), so 0.25 with three items. With more, `n_resamples` random flips
        give (1 + #{...}) / (n_resamples + 1), a valid p-value for a random subset of flips;
        `seed` then matters. For 0/1 scores the sign flips of the discordant items are the
        exact McNemar test. Nothing is decided by closeness: differences of 1e-9, -1e-9 and
        5e-9 are tested like any others (p = 0.75), and only when every difference is exactly
        0 is the p-value 1 without a test. With no items the estimate and p-value are nan.

    References:
        Fisher, R. A. (1935). The Design of Experiments. Oliver & Boyd.
        Phipson, B. and Smyth, G. K. (2010). Permutation p-values should never be zero.
        Statistical Applications in Genetics and Molecular Biology 9(1), 39.

    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    x, y = _pair(a, b)
    d = x - y
    n = d.size
    b01, b10 = int(np.sum(d < 0)), int(np.sum(d > 0))
    nan, name = math.nan, "paired permutation"
    if n == 0:
        return PairedTest(nan, nan, nan, nan, nan, name, 0, 0, 0)
    e = d[d != 0]
    m = e.size
    total = float(e.sum())
    # Flipped sums equal to |total| up to rounding are ties (flipping every sign gives
    # -total in exact arithmetic); count them as extreme.
    threshold = abs(total) - _TIE_TOLERANCE * float(np.abs(e).sum())
    if m == 0:
        return PairedTest(0.0, nan, nan, nan, 1.0, "paired permutation (exact)", n, b01, b10)
    if m <= EXACT_MAX:
        flipped = all_sign_flip_sums(e)  # (2**m,)
        extreme = int(np.count_nonzero(np.abs(flipped) >= threshold))
        p_value = extreme / flipped.size
        return PairedTest(total / n, nan, nan, nan, p_value, f"{name} (exact)", n, b01, b10)
    extreme = 0
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_ELEMENTS // m)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        raw = rng.integers(0, 256, size=(stop - start, (m + 7) // 8), dtype=np.uint8)
        flips = np.unpackbits(raw, axis=1, count=m).astype(float)  # (rows, m), 1 = flip
        flipped = total - 2 * (flips @ e)  # (rows,)
        extreme += int(np.count_nonzero(np.abs(flipped) >= threshold))
    p_value = (extreme + 1) / (n_resamples + 1)
    return PairedTest(total / n, nan, nan, nan, p_value, f"{name} (Monte Carlo)", n, b01, b10)
