"""Confidence intervals for a score: Wilson for binary scores, t for means.

Every function returns an `Interval`, a frozen result that names its method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a two-sided confidence interval.

    Attributes:
        estimate: The point estimate (a proportion or a mean).
        low: Lower bound of the interval.
        high: Upper bound of the interval.
        confidence: Nominal coverage, for example 0.95.
        method: How the interval was computed, for example "wilson".
        n: Number of observations behind it.

    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    n: int

    def summary(self) -> str:
        """One line of text, for example `0.620 [0.551, 0.684] (wilson, n=200)`."""
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.method}, n={self.n})"


def wilson(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    Notes:
        Matches `statsmodels.stats.proportion.proportion_confint(method="wilson")`. With n = 0
        the estimate and bounds are nan: there is nothing to estimate.

    References:
        Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
        inference. JASA 22(158), 209-212.

    """
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "wilson", 0)
    z = stats.norm.ppf(1 - (1 - confidence) / 2)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = float(max(0.0, center - half)), float(min(1.0, center + half))
    return Interval(p, low, high, confidence, "wilson", n)


def t_interval(values: Sequence[float], *, confidence: float = 0.95) -> Interval:
    """Student-t interval for a mean.

    Notes:
        With fewer than two values, or zero variance, the bounds are nan or equal to the
        mean respectively; inspect's `stderr` returns 0 for one value, which we do not copy.

    """
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "t", 0)
    mean = math.fsum(values) / n
    if n == 1:
        return Interval(mean, math.nan, math.nan, confidence, "t", 1)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, confidence, "t", n)
