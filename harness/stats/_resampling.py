"""Bootstrap intervals for a mean, plain and clustered, and a Wilson interval for clustered items.

Items of an eval often come in groups (several questions on one passage, several seeds of one
prompt). Scores in a group move together, so intervals that treat items as independent are too
narrow. `cluster_bootstrap_mean` and `clustered_wilson` account for that; `bootstrap_mean` does not.

Every function returns an `Interval` from `harness.stats._intervals`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from harness.stats._intervals import Interval

# Elements of one chunk of the resampling index matrix: 2**21 int64 indices are 16 MiB, and the
# gathered values as many again. For 10**4 items x 10**4 resamples on a 2-vCPU Xeon (numpy 2.4),
# chunks of 10**6 to 2.5 * 10**6 elements took 1.0 s in all, chunks of 5 * 10**6 or more 1.3 s.
_CHUNK_ELEMENTS = 2**21

# Collapse values to their distinct levels and draw multinomial counts of the levels when there
# are at most n / 32 levels. One multinomial level costs about 160 ns against about 10 ns per
# drawn index (draw and gather), measured on the same machine; 32 leaves a margin of two.
_COUNTS_RATIO = 32


def _as_1d(values: ArrayLike, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite; drop or impute nan and inf first")
    return x


def _check_options(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")


def _resample_sums(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sums of `n_resamples` bootstrap resamples of `x` (n draws with replacement each).

    When `x` has few distinct values (binary scores have two, paired differences of them three),
    a resample's sum depends only on how often each value is drawn, and those counts are
    multinomial(n, value frequencies): the same distribution as drawing n indices, at a cost
    per resample of the number of distinct values instead of n. Otherwise indices are drawn as
    an integer matrix, one chunk of rows at a time, and gathered with `np.take`.
    """
    n = x.size
    levels, counts = np.unique(x, return_counts=True)
    out = np.empty(n_resamples)
    if levels.size * _COUNTS_RATIO <= n:
        freq = counts / n
        rows = max(1, _CHUNK_ELEMENTS // levels.size)
        for start in range(0, n_resamples, rows):
            stop = min(start + rows, n_resamples)
            drawn = rng.multinomial(n, freq, size=stop - start)  # (rows, levels)
            out[start:stop] = drawn @ levels
        return out
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))  # (rows, n)
        out[start:stop] = np.take(x, idx).sum(axis=1)
    return out


def _percentile(stat: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    low, high = np.quantile(stat, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_mean(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval for a mean.

    Args:
        values: One score per item.
        confidence: Nominal coverage of the interval.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the `numpy.random.Generator`; the same seed gives the same interval.

    Returns:
        An `Interval` with method "bootstrap".

    Notes:
        The percentile interval covers less than nominal for small n and skewed scores, a
        little worse than the t interval: in simulation, for exponential scores, 89.6% at
        n = 20, 92.8% at n = 50 and 94.0% at n = 200 (t: 91.5%, 93.6%, 94.1%); for 0/1
        scores with p = 0.3 at n = 200 it covered 95.7%. With no values the estimate and
        bounds are nan; with one value the bounds are nan, since every resample would repeat
        it and give a zero-width interval that claims a certainty the data do not have.

    References:
        Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13.
        Chapman & Hall.

    """
    _check_options(confidence, n_resamples)
    x = _as_1d(values, "values")
    n = x.size
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "bootstrap", 0)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, confidence, "bootstrap", 1)
    sums = _resample_sums(x, n_resamples, np.random.default_rng(seed))
    low, high = _percentile(sums / n, confidence)
    return Interval(mean, low, high, confidence, "bootstrap", n)


def _cluster_codes(clusters: ArrayLike, n: int) -> np.ndarray:
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise ValueError(
            f"need one cluster label per item: {n} items, labels of shape {labels.shape}"
        )
    return np.unique(labels, return_inverse=True)[1].reshape(-1)


def cluster_bootstrap_mean(
    values: ArrayLike,
    clusters: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval for a mean, resampling whole clusters.

    Each resample draws as many clusters as there are, with replacement, keeps every item of
    a drawn cluster, and takes the mean over the items drawn (a ratio of sums, so clusters of
    different sizes are weighted by their size, as in the point estimate).

    Args:
        values: One score per item.
        clusters: One label per item; items with the same label form a cluster.
        confidence: Nominal coverage of the interval.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the `numpy.random.Generator`.

    Returns:
        An `Interval` with method "cluster bootstrap"; `n` is the number of items.

    Notes:
        The number of clusters, not of items, drives the coverage: in simulation (0/1 scores,
        intracluster correlation 0.2, clusters of 1 to 10 items, 1,500 replications) it
        covered about 90% with 10 clusters, 92% with 20 and 94% with 50 or more. With a
        single cluster the bounds are nan, since
        there is no between-cluster variation to resample. When every item is its own cluster
        this is `bootstrap_mean` (with a different random stream).

    References:
        Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application,
        sec. 3.8. Cambridge University Press.
        Field, C. A. and Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69(3),
        369-390.

    """
    _check_options(confidence, n_resamples)
    x = _as_1d(values, "values")
    n = x.size
    codes = _cluster_codes(clusters, n)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, "cluster bootstrap", 0)
    mean = float(x.mean())
    sums = np.bincount(codes, weights=x)  # (k,)
    sizes = np.bincount(codes).astype(float)  # (k,)
    k = sums.size
    if k == 1:
        return Interval(mean, math.nan, math.nan, confidence, "cluster bootstrap", n)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    rows = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        idx = rng.integers(0, k, size=(stop - start, k))  # (rows, k)
        means[start:stop] = np.take(sums, idx).sum(axis=1) / np.take(sizes, idx).sum(axis=1)
    low, high = _percentile(means, confidence)
    return Interval(mean, low, high, confidence, "cluster bootstrap", n)


def _wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """The bounds of `intervals.wilson` for a proportion p over a real-valued n."""
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return float(max(0.0, center - half)), float(min(1.0, center + half))


def clustered_wilson(
    successes: ArrayLike,
    clusters: ArrayLike,
    *,
    confidence: float = 0.95,
) -> Interval:
    """Wilson interval with the Korn-Graubard effective sample size for clustered items.

    Args:
        successes: One 0/1 outcome per item.
        clusters: One label per item; items with the same label form a cluster.
        confidence: Nominal coverage of the interval.

    Returns:
        An `Interval` with method "clustered wilson (Korn-Graubard)"; `n` is the number of
        items, not the effective sample size.

    Notes:
        With n items in k clusters, cluster j holding m_j items and y_j successes, and
        p = sum(y_j) / n, the ratio-estimator (linearisation) variance of p is

            V_c = k / (k - 1) * sum_j (y_j - p * m_j)**2 / n**2,

        and under independent sampling the variance is V_s = n / (n - 1) * p * (1 - p) / n
        (with the same small-sample factor). The design effect is D = max(1, V_c / V_s),
        and the interval is the Wilson interval of p with n replaced by

            n_eff = n / D * (t_(n-1) / t_(k-1))**2,

        the t quantiles at 1 - (1 - confidence) / 2 (Korn and Graubard 1998). The floor at 1
        stops clusters that happen to agree (every cluster at the same rate gives V_c = 0)
        from claiming more than n independent items: without it the interval shrank to the
        point p. The degrees-of-freedom factor widens the interval when V_c rests on a few
        clusters (with 3 clusters of 100 items it is (1.968 / 4.303)**2 = 0.21); with
        hundreds it is close to 1. When every item is its own cluster, D = 1 and k = n, so
        this is `wilson` (to rounding). When p is 0 or 1 the variances are 0 and D is taken
        as 1. With one cluster the bounds are nan.

        In simulation (intracluster correlation 0.1 to 0.5, clusters of 1 to 20 items) the
        coverage was 94 to 95% with 30 to 200 clusters, against 54 to 91% for `wilson` on the
        same data; see tests/stats/test_coverage_few_seeds.py for 3 clusters of 100 items.

    References:
        Kish, L. (1965). Survey Sampling (ratio means of cluster samples; the design
        effect). Wiley.
        Korn, E. L. and Graubard, B. I. (1998). Confidence intervals for proportions with
        small expected number of positive counts estimated from survey data. Survey
        Methodology 24(2), 193-201.

    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    y = _as_1d(successes, "successes")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("successes must be 0/1 (or booleans), one per item")
    n = y.size
    codes = _cluster_codes(clusters, n)
    method = "clustered wilson (Korn-Graubard)"
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence, method, 0)
    p = float(y.sum()) / n
    y_j = np.bincount(codes, weights=y)  # (k,)
    m_j = np.bincount(codes)  # (k,)
    k = y_j.size
    if k == 1:
        return Interval(p, math.nan, math.nan, confidence, method, n)
    upper = 1 - (1 - confidence) / 2
    z = float(stats.norm.ppf(upper))
    design_effect = 1.0
    if 0.0 < p < 1.0:
        between = float(np.sum((y_j - p * m_j) ** 2))
        ratio = (k / (k - 1)) / (n / (n - 1)) * between / (n * p * (1 - p))
        design_effect = max(1.0, ratio)
    df_factor = (float(stats.t.ppf(upper, n - 1)) / float(stats.t.ppf(upper, k - 1))) ** 2
    n_eff = n / design_effect * df_factor
    low, high = _wilson_bounds(p, n_eff, z)
    return Interval(p, low, high, confidence, method, n)
