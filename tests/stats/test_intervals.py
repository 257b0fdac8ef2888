import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.stats._intervals import (
    Interval,
    clustered_t_interval,
    ratio_interval,
    t_interval,
    wilson,
)
from harness.stats._pass_at_k import pass_at_k


@pytest.mark.parametrize(("k", "n"), [(0, 30), (1, 30), (15, 30), (29, 30), (30, 30), (7, 200)])
def test_wilson_matches_statsmodels(k, n):
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    ci = wilson(k, n)
    assert ci.estimate == pytest.approx(k / n)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
    assert ci.method == "wilson"


def test_wilson_average_coverage_is_nominal():
    # Exact coverage from the binomial pmf, averaged over p in [0.05, 0.95] at n=100.
    # Wilson's coverage oscillates with p (about 93-97%); its average is nominal, and
    # DESIGN.md asks 94-96%. A Wald interval would average about 93% here and fail.
    n = 100
    bounds = [wilson(k, n) for k in range(n + 1)]
    coverage = []
    for p in np.linspace(0.05, 0.95, 181):
        pmf = sps.binom.pmf(np.arange(n + 1), n, p)
        coverage.append(sum(w for w, ci in zip(pmf, bounds, strict=True) if ci.low <= p <= ci.high))
    assert 0.94 <= float(np.mean(coverage)) <= 0.96


def test_wilson_rejects_bad_counts():
    with pytest.raises(ValueError):
        wilson(5, 3)
    assert math.isnan(wilson(0, 0).estimate)


def test_t_interval_matches_scipy():
    x = [0.1, 0.5, 0.9, 0.3, 0.35]
    low, high = sps.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=sps.sem(x))
    ci = t_interval(x)
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-12)
    assert math.isnan(t_interval([1.0]).low)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),
        (10, 3, 5, 0.916667),
        (32, 1, 1, 0.03125),
        (32, 1, 32, 1.0),
        (32, 2, 8, 0.443548),
    ],
)
def test_pass_at_k_spec_vectors(n, c, k, expected):
    # specs/aime.md §3 test vectors
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-6)


def test_interval_text_and_estimable():
    ci = Interval(0.62, 0.551, 0.684, 0.95, "wilson", 200)
    assert ci.estimable and ci.text() == "0.620 [0.551, 0.684]"
    assert ci.text("+.1f", scale=100) == "+62.0 [+55.1, +68.4]"
    none = Interval(0.5, math.nan, math.nan, 0.95, "exact sign-flip, not estimable at n = 3", 3)
    assert not none.estimable and none.text(".2f") == "0.50 (not estimable at n = 3)"
    assert none.summary() == "0.500 (exact sign-flip, not estimable at n = 3)"
    assert t_interval([]).text() == "–"


def test_clustered_t_matches_statsmodels_cluster_robust_ols():
    # statsmodels OLS on a constant with cov_type="cluster" and use_t=True: the sandwich
    # variance with G / (G - 1) (and (N - 1) / (N - K) = 1 for K = 1), t on G - 1 df.
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(4), [5, 7, 6, 9])
    y = rng.normal(size=groups.size) + rng.normal(size=4)[groups]
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    res = clustered_t_interval(y, groups)
    assert (res.low, res.high) == pytest.approx(tuple(fit.conf_int(0.05)[0]), abs=1e-12)
    assert res.estimate == pytest.approx(y.mean(), abs=1e-15) and res.method == "clustered t"
    # with equal cluster sizes it is the t interval over the cluster means
    equal = np.repeat(np.arange(3), 9)
    means = np.bincount(equal, weights=y[:27]) / 9
    ref = t_interval(list(means))
    got = clustered_t_interval(y[:27], equal)
    assert (got.low, got.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert not clustered_t_interval([1.0, 2.0], [0, 0]).estimable  # one cluster


def test_ratio_interval_matches_statsmodels_wls_sandwich():
    # sum(a) / sum(b) is the WLS slope of a on b through the origin with weights 1 / b, whose
    # score is a_i - R b_i; statsmodels' HC1 (n / (n - 1)) and cluster sandwiches with use_t
    # (n - 1 and G - 1 df) are then the linearised intervals, computed independently.
    rng = np.random.default_rng(1)
    b = 1.5 + rng.gamma(2.0, 0.25, size=60)
    a = 1.4 * b * rng.lognormal(0.0, 0.1, size=60)
    model = sm.WLS(a, b[:, None], weights=1 / b)
    res = ratio_interval(a, b)
    assert res.estimate == pytest.approx(a.sum() / b.sum(), abs=1e-14)
    hc1 = model.fit(cov_type="HC1", use_t=True).conf_int(0.05)[0]
    assert (res.low, res.high) == pytest.approx(tuple(hc1), abs=1e-12)
    groups = np.repeat(np.arange(5), 12)
    clustered = model.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    got = ratio_interval(a, b, clusters=groups)
    assert (got.low, got.high) == pytest.approx(tuple(clustered.conf_int(0.05)[0]), abs=1e-12)
    assert got.method == "delta-method t, clustered" and res.method == "delta-method t"
    # b = 1 makes it the t interval
    ref = t_interval(list(a))
    one = ratio_interval(a, np.ones_like(a))
    assert (one.low, one.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    with pytest.raises(ValueError, match="one cluster label per item"):
        ratio_interval(a, b, clusters=[0, 1])
