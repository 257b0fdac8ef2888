import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.stats._exact import median_interval, sign_flip_interval, subset_means


def _brute_subset_means(d):
    """All non-empty subset means, by itertools: an implementation independent of the doubling."""
    return np.array(
        [np.mean(c) for r in range(1, d.size + 1) for c in itertools.combinations(d, r)]
    )


def _upper_p(d, delta):
    """One-sided sign-flip p-value of d - delta, P(flipped sum >= observed), all 2**n flips."""
    e = d - delta
    flipped = np.array([np.dot(s, e) for s in itertools.product([1, -1], repeat=e.size)])
    return float(np.mean(flipped >= e.sum() - 1e-12))


@pytest.mark.parametrize("n", [6, 7, 8, 10])
def test_sign_flip_interval_is_hartigans_subset_mean_interval(n):
    d = np.random.default_rng(n).normal(0.2, 1.0, size=n)
    res = sign_flip_interval(d)
    means = np.sort(_brute_subset_means(d))  # M_(1) <= ... <= M_(2**n - 1)
    k = math.floor(0.025 * 2**n)  # 1, 3, 6, 25
    assert (res.low, res.high) == (means[k - 1], means[2**n - k - 1])
    assert res.confidence == 1 - 2 * k / 2**n
    assert res.estimate == pytest.approx(d.mean(), abs=1e-15) and res.n == n
    assert np.sort(subset_means(d)) == pytest.approx(means, abs=1e-12)


def test_sign_flip_interval_inverts_the_one_sided_sign_flip_tests():
    # delta is outside exactly when a one-sided sign-flip test of d - delta rejects at
    # k / 2**n: just below the lower bound the upper-tail p-value is at most k / 2**n, just
    # above it larger; by symmetry the same holds at the upper bound.
    d = np.random.default_rng(3).normal(1.0, 2.0, size=8)
    res = sign_flip_interval(d)
    level = (1 - res.confidence) / 2  # 6 / 256
    eps = 1e-9
    assert _upper_p(d, res.low - eps) <= level < _upper_p(d, res.low + eps)
    assert _upper_p(-d, -res.high - eps) <= level < _upper_p(-d, -res.high + eps)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_sign_flip_interval_not_estimable_below_six(n):
    # 2 / 2**5 = 0.0625 > 0.05: no 95% interval exists with five values or fewer.
    res = sign_flip_interval(np.arange(n, dtype=float))
    assert not res.estimable and math.isnan(res.low) and math.isnan(res.high)
    assert f"not estimable at n = {n}" in res.method and res.n == n
    assert res.estimate == pytest.approx((n - 1) / 2)
    assert res.text(".1f") == f"{(n - 1) / 2:.1f} (not estimable at n = {n})"


def test_sign_flip_interval_levels_and_labels():
    six = sign_flip_interval(np.arange(6.0))
    assert six.method == "exact sign-flip, 96.9%, conservative" and (six.low, six.high) == (0, 5)
    eight = sign_flip_interval(np.arange(8.0))
    assert eight.method == "exact sign-flip, 95.3%" and eight.confidence == 1 - 12 / 256
    # 90% asks for k = floor(0.05 * 2**5) = 1 at n = 5: estimable there
    assert sign_flip_interval(np.arange(5.0), confidence=0.9).estimable
    assert sign_flip_interval([]).n == 0 and math.isnan(sign_flip_interval([]).estimate)
    with pytest.raises(ValueError, match="nan or inf"):
        sign_flip_interval([1.0, math.inf])
    with pytest.raises(ValueError, match="confidence"):
        sign_flip_interval([1.0, 2.0], confidence=95)


def test_sign_flip_interval_monte_carlo_above_twenty():
    d = np.random.default_rng(0).normal(0.5, 1.0, size=30)
    res = sign_flip_interval(d, n_resamples=50_000, seed=1)
    assert res.method == "sign-flip (Monte Carlo, 50000 subsets)"
    # For n = 30 the subset-mean interval is close to the t interval (both rest on the same
    # variance): scipy.stats.t.interval(0.95, 29, loc=mean, scale=sem)
    low, high = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=sps.sem(d))
    half = (high - low) / 2
    assert (res.low, res.high) == pytest.approx((low, high), abs=0.1 * half)


@pytest.mark.parametrize("n", [6, 7, 8, 9, 10, 20, 21, 40])
def test_median_interval_matches_scipy_quantile_test(n):
    # scipy.stats.quantile_test(x, q=median, p=0.5).confidence_interval(0.95): the exact
    # order-statistic interval for the median, an independent implementation.
    x = np.random.default_rng(n).normal(size=n)
    ref = sps.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(0.95)
    res = median_interval(x)
    assert (res.low, res.high) == (ref.low, ref.high)
    # the attained level, from scipy's binomial: 1 - 2 * P(B <= l - 1)
    depth = int(np.flatnonzero(np.sort(x) == res.low)[0]) + 1
    assert res.confidence == pytest.approx(1 - 2 * sps.binom.cdf(depth - 1, n, 0.5), abs=1e-14)
    assert res.estimate == np.median(x)


def test_median_interval_levels_labels_and_censoring():
    eight = median_interval([3.0, 1.0, 2.0, 8.0, 7.0, 6.0, 5.0, 4.0])
    assert (eight.low, eight.high) == (1.0, 8.0)  # [x(2), x(7)] would cover only 93.0%
    assert eight.method == "order statistics, 99.2%, conservative"
    assert eight.confidence == pytest.approx(1 - 2 / 256, abs=1e-15)
    # A seed that never got there is +inf: the bound reads "not reached", the median is finite.
    censored = median_interval([400, 500, math.inf, 450, 600, math.inf, 550, 480])
    assert (censored.estimate, censored.low, censored.high) == (525.0, 400.0, math.inf)
    for n in (1, 3, 5):
        res = median_interval(np.arange(n, dtype=float))
        assert not res.estimable and f"not estimable at n = {n}" in res.method
    with pytest.raises(ValueError, match="nan"):
        median_interval([1.0, math.nan])
