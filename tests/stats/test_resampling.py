import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.stats._intervals import t_interval, wilson
from harness.stats._resampling import bootstrap_mean, cluster_bootstrap_mean, clustered_wilson


def _clustered_binary(rng, k, max_size, mean, icc):
    """k clusters of 1..max_size items; cluster rates ~ Beta with the given mean and ICC."""
    sizes = rng.integers(1, max_size + 1, size=k)
    labels = np.repeat(np.arange(k), sizes)
    s = 1 / icc - 1
    rates = rng.beta(mean * s, (1 - mean) * s, size=k)
    y = (rng.random(labels.size) < rates[labels]).astype(int)
    return y, labels


def test_bootstrap_mean_reproducible_and_seed_dependent():
    x = np.random.default_rng(0).exponential(size=200)
    first = bootstrap_mean(x, n_resamples=3000, seed=1)
    assert first == bootstrap_mean(x, n_resamples=3000, seed=1)
    assert (first.low, first.high) != (
        bootstrap_mean(x, n_resamples=3000, seed=2).low,
        bootstrap_mean(x, n_resamples=3000, seed=2).high,
    )
    assert first.estimate == pytest.approx(x.mean(), abs=1e-12)
    assert first.method == "bootstrap" and first.n == 200


def test_bootstrap_mean_close_to_t_interval_on_normal_sample():
    x = np.random.default_rng(3).normal(10.0, 2.0, size=500)
    res = bootstrap_mean(x, n_resamples=20_000, seed=0)
    # t interval: scipy.stats.t.interval(0.95, 499, loc=mean, scale=sem), via t_interval
    t = t_interval(list(x))
    low, high = sps.t.interval(0.95, x.size - 1, loc=x.mean(), scale=sps.sem(x))
    assert (t.low, t.high) == pytest.approx((low, high), abs=1e-12)
    half = (high - low) / 2
    assert res.low == pytest.approx(low, abs=0.05 * half)
    assert res.high == pytest.approx(high, abs=0.05 * half)


def test_bootstrap_mean_binary_matches_wilson_width():
    # 0/1 scores go through multinomial counts; at n = 1000, p = 0.3 the percentile interval
    # is close to Wilson's: statsmodels proportion_confint(300, 1000, method="wilson").
    x = np.zeros(1000)
    x[:300] = 1
    res = bootstrap_mean(x, seed=0)
    low, high = proportion_confint(300, 1000, alpha=0.05, method="wilson")
    assert (res.low, res.high) == pytest.approx((low, high), abs=0.003)


def test_bootstrap_mean_binary_bounds_are_binomial_quantiles():
    # A bootstrap sum of n 0/1 scores with k ones is exactly Binomial(n, k / n), so the
    # percentile bounds are its quantiles: scipy.stats.binom.ppf([0.025, 0.975], n, k / n).
    # Binomial sd is 145 counts; the Monte-Carlo SE of an empirical 2.5% quantile from
    # 200,000 resamples is 0.9 counts, and a z of 2.00 in place of 1.96 moves it 6 counts.
    n, k = 100_000, 30_000
    x = np.zeros(n)
    x[:k] = 1
    res = bootstrap_mean(x, n_resamples=200_000, seed=0)
    low, high = sps.binom.ppf([0.025, 0.975], n, k / n)
    assert res.low * n == pytest.approx(low, abs=3)
    assert res.high * n == pytest.approx(high, abs=3)


def test_bootstrap_mean_degenerate_and_validation():
    assert math.isnan(bootstrap_mean([]).estimate)
    one = bootstrap_mean([2.0])
    assert one.estimate == 2.0 and math.isnan(one.low) and math.isnan(one.high)
    const = bootstrap_mean([1.0] * 10)
    assert (const.low, const.high) == (1.0, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean([1.0, math.nan])
    with pytest.raises(ValueError, match="one-dimensional"):
        bootstrap_mean([[1.0, 2.0]])


def test_cluster_bootstrap_wider_when_clusters_correlated():
    rng = np.random.default_rng(1)
    k, m = 60, 8
    labels = np.repeat(np.arange(k), m)
    values = rng.normal(0, 1, size=k)[labels] + rng.normal(0, 0.3, size=k * m)
    plain = bootstrap_mean(values, seed=0)
    clustered = cluster_bootstrap_mean(values, labels, seed=0)
    assert clustered.method == "cluster bootstrap" and clustered.n == k * m
    assert clustered.estimate == pytest.approx(values.mean(), abs=1e-12)
    # design effect 1 + (m - 1) * icc with icc = 1 / 1.09: width ratio about sqrt(7.4) = 2.7
    assert clustered.high - clustered.low > 2 * (plain.high - plain.low)
    # With equal sizes the cluster bootstrap of the mean is the bootstrap of the k cluster
    # means; compare with the t interval on the cluster means (a different method).
    t = t_interval(list(np.bincount(labels, weights=values) / m))
    assert clustered.high - clustered.low == pytest.approx(t.high - t.low, rel=0.1)


def test_cluster_bootstrap_singletons_like_plain_bootstrap():
    x = np.random.default_rng(2).normal(size=400)
    clustered = cluster_bootstrap_mean(x, np.arange(400).astype(str), seed=0)
    plain = bootstrap_mean(x, seed=0)
    assert clustered.high - clustered.low == pytest.approx(plain.high - plain.low, rel=0.05)
    assert cluster_bootstrap_mean(x, np.arange(400), seed=4) == cluster_bootstrap_mean(
        x, np.arange(400), seed=4
    )


def test_cluster_bootstrap_degenerate():
    assert math.isnan(cluster_bootstrap_mean([], []).estimate)
    single = cluster_bootstrap_mean([1.0, 2.0, 3.0], ["a", "a", "a"])
    assert single.estimate == 2.0 and math.isnan(single.low)
    with pytest.raises(ValueError, match="one cluster label per item"):
        cluster_bootstrap_mean([1.0, 2.0], [0])


@pytest.mark.parametrize(("k", "n"), [(0, 2), (1, 10), (7, 30), (15, 30), (29, 30), (123, 400)])
def test_clustered_wilson_equals_wilson_for_singletons(k, n):
    y = np.zeros(n, dtype=int)
    y[:k] = 1
    labels = np.random.default_rng(k).permutation(n)
    res = clustered_wilson(y, labels)
    ref = wilson(k, n)
    assert (res.estimate, res.low, res.high) == pytest.approx(
        (ref.estimate, ref.low, ref.high), abs=1e-12
    )
    assert res.method == "clustered wilson (Korn-Graubard)" and res.n == n


def _korn_graubard_reference(y, labels, alpha):
    """Wilson at the Korn-Graubard effective size, from statsmodels and scipy.

    Design effect = (cluster-robust variance) / (iid variance) of the mean, both from
    statsmodels OLS on a constant: cov_type="cluster" applies G / (G - 1) and the plain fit
    uses s**2 / N with ddof 1, the two variances in the Notes; floored at 1. Then
    n_eff = N / deff * (t_(N-1) / t_(G-1))**2 and proportion_confint(p * n_eff, n_eff,
    method="wilson").
    """
    x = np.ones((y.size, 1))
    robust = sm.OLS(y.astype(float), x).fit(cov_type="cluster", cov_kwds={"groups": labels})
    iid = sm.OLS(y.astype(float), x).fit()
    deff = max(1.0, robust.bse[0] ** 2 / iid.bse[0] ** 2)
    g = np.unique(labels).size
    df = (sps.t.ppf(1 - alpha / 2, y.size - 1) / sps.t.ppf(1 - alpha / 2, g - 1)) ** 2
    n_eff = y.size / deff * df
    return proportion_confint(y.mean() * n_eff, n_eff, alpha=alpha, method="wilson"), deff


def test_clustered_wilson_matches_statsmodels_cluster_robust_variance():
    rng = np.random.default_rng(3)
    y, labels = _clustered_binary(rng, k=40, max_size=7, mean=0.6, icc=0.3)
    (low, high), deff = _korn_graubard_reference(y, labels, 0.05)
    res = clustered_wilson(y, labels)
    assert deff > 1.3
    assert (res.low, res.high) == pytest.approx((low, high), abs=1e-10)
    (low90, high90), _ = _korn_graubard_reference(y, labels, 0.1)
    res90 = clustered_wilson(y, labels, confidence=0.9)
    assert (res90.low, res90.high) == pytest.approx((low90, high90), abs=1e-10)
    assert res.method == "clustered wilson (Korn-Graubard)"


def test_clustered_wilson_agreeing_clusters_keep_a_width():
    # Every cluster at the same rate: the cluster-robust variance is 0. Without the floor the
    # design effect was 0 and the interval the point 0.5; with it the design effect is 1 and
    # n_eff = 6 * (t_5 / t_2)**2 = 2.14.
    same = clustered_wilson([1, 0, 1, 0, 1, 0], [0, 0, 1, 1, 2, 2])
    (low, high), deff = _korn_graubard_reference(
        np.array([1, 0, 1, 0, 1, 0]), [0, 0, 1, 1, 2, 2], 0.05
    )
    assert deff == 1.0 and same.high - same.low > 0.5
    assert (same.low, same.high) == pytest.approx((low, high), abs=1e-12)
    # Many agreeing clusters: never narrower than wilson on the pooled counts.
    y = np.tile([1, 1, 0, 0], 50)
    labels = np.repeat(np.arange(50), 4)
    agreeing = clustered_wilson(y, labels)
    pooled = wilson(100, 200)
    assert agreeing.low < pooled.low and agreeing.high > pooled.high


def test_clustered_wilson_wider_with_correlated_clusters():
    rng = np.random.default_rng(4)
    y, labels = _clustered_binary(rng, k=80, max_size=10, mean=0.7, icc=0.4)
    res = clustered_wilson(y, labels)
    ref = wilson(int(y.sum()), y.size)
    assert res.estimate == pytest.approx(ref.estimate, abs=1e-15)
    assert res.high - res.low > 1.5 * (ref.high - ref.low)


def test_clustered_wilson_edge_cases():
    assert math.isnan(clustered_wilson([], []).estimate)
    one_cluster = clustered_wilson([1, 0, 1], [5, 5, 5])
    assert one_cluster.estimate == pytest.approx(2 / 3) and math.isnan(one_cluster.low)
    # p = 0: no design effect can be estimated; D = 1, and n_eff = 12 * (t_11 / t_3)**2
    zeros = clustered_wilson([0] * 12, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    n_eff = 12 * (sps.t.ppf(0.975, 11) / sps.t.ppf(0.975, 3)) ** 2
    assert zeros.low == 0.0
    assert zeros.high == pytest.approx(proportion_confint(0, n_eff, method="wilson")[1])
    assert zeros.high > wilson(0, 12).high
    with pytest.raises(ValueError, match="0/1"):
        clustered_wilson([0.5, 1.0], [0, 1])


def _clustered_wilson_coverage(reps, k, seed):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        y, labels = _clustered_binary(rng, k=k, max_size=10, mean=0.7, icc=0.2)
        res = clustered_wilson(y, labels)
        hits += res.low <= 0.7 <= res.high
    return hits / reps


def test_clustered_wilson_coverage_modest():
    # 1,000 replications (Monte-Carlo SE 0.007); plain wilson covers about 0.80 here.
    assert 0.92 <= _clustered_wilson_coverage(1000, k=150, seed=0) <= 0.97


@pytest.mark.slow
def test_clustered_wilson_coverage_slow():
    # 20,000 replications, Monte-Carlo SE 0.0015; 200 clusters of 1..10 items, ICC 0.2.
    assert 0.94 <= _clustered_wilson_coverage(20_000, k=200, seed=1) <= 0.96
