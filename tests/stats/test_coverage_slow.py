"""Monte-Carlo coverage at nominal 95% for the intervals not covered elsewhere (slow).

Each uses 10,000 replications, so the Monte-Carlo SE of a coverage near 0.95 is about 0.002.
Wilson's coverage is computed exactly in test_intervals.py; Rogan-Gladen's across θ and judge
quality in test_judge_calibration.py; McNemar's and clustered Wilson's in test_paired.py and
test_resampling.py.
"""

import numpy as np
import pytest

from harness.stats._intervals import t_interval
from harness.stats._ppi import ppi_mean, ppi_plus_plus_mean
from harness.stats._resampling import bootstrap_mean, cluster_bootstrap_mean

REPS = 10_000
pytestmark = pytest.mark.slow


def coverage(hits: list[bool]) -> float:
    return float(np.mean(hits))


def test_t_interval_coverage():
    rng = np.random.default_rng(1)
    hits = [
        (ci := t_interval(rng.normal(0.3, 1.0, 30).tolist())).low <= 0.3 <= ci.high
        for _ in range(REPS)
    ]
    assert 0.94 <= coverage(hits) <= 0.96


@pytest.mark.parametrize("p", [0.3, 0.6])
def test_bootstrap_mean_coverage_binary(p):
    rng = np.random.default_rng(2)
    hits = []
    for r in range(REPS):
        ci = bootstrap_mean(rng.binomial(1, p, 400), n_resamples=2000, seed=r)
        hits.append(ci.low <= p <= ci.high)
    assert 0.94 <= coverage(hits) <= 0.96


def test_cluster_bootstrap_coverage():
    # 100 clusters of 5 items sharing a cluster effect (intracluster correlation ~0.2)
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(100), 5)
    hits = []
    for r in range(REPS):
        p = np.clip(0.4 + rng.normal(0, 0.22, 100), 0, 1)[clusters]
        y = rng.binomial(1, p)
        ci = cluster_bootstrap_mean(y, clusters, n_resamples=1000, seed=r)
        hits.append(ci.low <= 0.4 <= ci.high)
    assert 0.94 <= coverage(hits) <= 0.96


@pytest.mark.parametrize("estimator", [ppi_mean, ppi_plus_plus_mean])
def test_ppi_coverage_without_shift(estimator):
    rng = np.random.default_rng(4)
    theta, q0, q1, n, big_n = 0.3, 0.8, 0.85, 300, 3000
    hits = []
    for _ in range(REPS):
        z = rng.binomial(1, theta, n + big_n)
        zh = np.where(z == 1, rng.binomial(1, q1, z.size), rng.binomial(1, 1 - q0, z.size))
        ci = estimator(z[:n], zh[:n], zh[n:])
        hits.append(ci.low <= theta <= ci.high)
    assert 0.94 <= coverage(hits) <= 0.96
