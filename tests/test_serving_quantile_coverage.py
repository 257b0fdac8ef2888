"""The percentile interval of the serving report (`harness.stats._cluster_quantile`).

Its coverage is measured on stationary M/M/1 queues (an M/G/1 with Exp(1) sizes) at load 0.8,
where the FCFS response time is Exp(μ − λ) and its q-quantile is ln(1/(1 − q))/0.2 (P99 =
23.03). A run starts in the stationary state (its first wait drawn from the stationary law) and
is produced by the Lindley recursion in closed form, so runs are independent clusters whose
values are strongly dependent within.
"""

import math

import numpy as np
import pytest
from scipy import stats

from harness.stats._cluster_quantile import _bounds, _running_sums, cluster_quantile_interval
from harness.stats._resampling import clustered_wilson

LAM, MU = 0.8, 1.0


def mm1_responses(n: int, rng: np.random.Generator) -> np.ndarray:
    """FCFS response times of n consecutive jobs of a stationary M/M/1 queue."""
    service = rng.exponential(1 / MU, n)
    gaps = rng.exponential(1 / LAM, n)
    w0 = rng.exponential(1 / (MU - LAM)) if rng.random() < LAM / MU else 0.0
    steps = np.empty(n)
    steps[0] = 0.0
    steps[1:] = service[:-1] - gaps[1:]
    c = np.cumsum(steps)
    # W_n = max(W_0 + C_n, max_k (C_n - C_k)) = C_n - min(-W_0, min_{k<=n} C_k)
    waits = c - np.minimum(np.minimum.accumulate(c), -w0)
    return waits + service


def true_quantile(q: float) -> float:
    return math.log(1 / (1 - q)) / (MU - LAM)


def test_lindley_closed_form_matches_the_recursion():
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    fast = mm1_responses(500, rng)
    rng.bit_generator.state = state
    service, gaps = rng.exponential(1 / MU, 500), rng.exponential(1 / LAM, 500)
    w = 0.0 if rng.random() >= LAM / MU else rng.exponential(1 / (MU - LAM))
    slow = [w + service[0]]
    for i in range(1, 500):
        w = max(0.0, w + service[i - 1] - gaps[i])
        slow.append(w + service[i])
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-9)


def test_bounds_are_clustered_wilsons():
    rng = np.random.default_rng(1)
    values = np.concatenate([mm1_responses(800, rng) for _ in range(6)])
    clusters = np.repeat(np.arange(6), 800)
    sizes = np.full(6, 800.0)
    for x in (2.0, 10.0, 20.0):
        y = np.array([np.sum(values[clusters == c] <= x) for c in range(6)], float)
        p = np.array([y.sum() / values.size])
        low, high = _bounds(p, np.array([(y**2).sum()]), np.array([(y * sizes).sum()]), sizes, 0.95)
        ref = clustered_wilson((values <= x).astype(int), clusters)
        assert (low[0], high[0]) == pytest.approx((ref.low, ref.high), rel=1e-9)


def test_running_sums_match_direct_counts():
    rng = np.random.default_rng(4)
    x = np.round(rng.exponential(1.0, 300), 1)  # ties
    codes = rng.integers(0, 7, 300)
    sizes = np.bincount(codes, minlength=7).astype(float)
    cand, share, y2, ym = _running_sums(x, codes, sizes)
    assert np.array_equal(cand, np.unique(x))
    for i in (0, 5, len(cand) // 2, len(cand) - 1):
        y = np.array([np.sum(x[codes == c] <= cand[i]) for c in range(7)], float)
        assert share[i] == pytest.approx(y.sum() / 300)
        assert y2[i] == (y**2).sum() and ym[i] == (y * sizes).sum()


def test_interval_contains_the_estimate_and_is_honest_at_one_cluster():
    rng = np.random.default_rng(2)
    values = np.concatenate([mm1_responses(3000, rng) for _ in range(4)])
    ci = cluster_quantile_interval(values, np.repeat(np.arange(4), 3000), 0.99)
    assert ci.low <= ci.estimate <= ci.high
    assert ci.estimate == pytest.approx(np.quantile(values, 0.99))
    one = cluster_quantile_interval(values, np.zeros(values.size), 0.99)
    assert not one.estimable and "one cluster" in one.method
    with pytest.raises(ValueError):
        cluster_quantile_interval(values, np.zeros(3), 0.99)


def test_dependence_widens_the_interval():
    # pooled as if independent (every value its own cluster) the P99 interval is narrower
    rng = np.random.default_rng(3)
    values = np.concatenate([mm1_responses(5000, rng) for _ in range(5)])
    clustered = cluster_quantile_interval(values, np.repeat(np.arange(5), 5000), 0.99)
    naive = cluster_quantile_interval(values, np.arange(values.size), 0.99)
    assert (clustered.high - clustered.low) > 2 * (naive.high - naive.low)


def _coverage(q: float, clusters: int, per: int, reps: int, seed: int, naive: bool = False):
    rng = np.random.default_rng(seed)
    hits = 0
    labels = np.arange(clusters * per) if naive else np.repeat(np.arange(clusters), per)
    for _ in range(reps):
        values = np.concatenate([mm1_responses(per, rng) for _ in range(clusters)])
        ci = cluster_quantile_interval(values, labels, q)
        hits += ci.low <= true_quantile(q) <= ci.high
    return hits / reps


@pytest.mark.long
@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_coverage_on_mm1(q):
    """5 independent runs of 20,000 jobs: coverage of the true quantile within 93.5-96.5%.

    1,500 replications: the Monte-Carlo SE of a coverage near 0.95 is 0.0056, so the band is
    about ±2.7 SE. Measured: 0.955, 0.947, 0.945 for q = 0.5, 0.95, 0.99; with 3,000 jobs a run
    the P99's coverage fell to about 0.90 (few independent busy periods a run reach the tail),
    which docs/validation/serving.md reports.
    """
    coverage = _coverage(q, 5, 20_000, 1500, seed=int(100 * q))
    print(f"coverage q={q}: {coverage:.4f} (1500 replications, 5 runs of 20,000 jobs)")
    assert 0.935 <= coverage <= 0.965


@pytest.mark.long
def test_treating_requests_as_independent_undercovers():
    """The same runs with every value its own cluster (an iid Wilson inverted) miss P99 often."""
    coverage = _coverage(0.99, 5, 20_000, 300, seed=9, naive=True)
    print(f"coverage of P99 treating requests as independent: {coverage:.4f} (300 replications)")
    assert coverage < 0.6


def test_t_quantile_factor_is_the_korn_graubard_one():
    # with 5 clusters the effective size shrinks by (t_{n-1}/t_4)^2 at 95%
    factor = (stats.t.ppf(0.975, 99_999) / stats.t.ppf(0.975, 4)) ** 2
    assert factor == pytest.approx(0.498, abs=1e-3)


def _report_coverage(clusters: int, per: int, reps: int, seed: int) -> tuple[float, float]:
    """P99 coverage of the 95% inverted interval and of the one the serving report prints."""
    from harness.suites.serving.results import percentile_interval

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(clusters), per)
    truth = true_quantile(0.99)
    plain = printed = 0
    for _ in range(reps):
        values = np.concatenate([mm1_responses(per, rng) for _ in range(clusters)])
        ci = cluster_quantile_interval(values, labels, 0.99)
        plain += ci.low <= truth <= ci.high
        ci = percentile_interval(values, labels, 0.99)
        printed += ci.low <= truth <= ci.high
    return plain / reps, printed / reps


def test_the_printed_p99_interval_covers_at_six_slices():
    """The full preset's 6 slices (~3,000 requests each): the printed P99 covers >= 95%.

    A cheap version of the long test: 150 replications (MC SE about 0.013 at 0.975, 0.025 at
    0.89). The 95% interval's coverage here is about 0.89, the printed one's about 0.975; the
    bar 0.93 sits 3 SE above the one and 3 SE below the other.
    """
    plain, printed = _report_coverage(6, 3000, 150, seed=60)
    print(f"P99 at 6 slices of 3,000: 95% inverted {plain:.3f}, printed {printed:.3f}")
    assert printed >= 0.93 and plain < 0.93


@pytest.mark.long
def test_the_printed_p99_interval_covers_at_six_slices_long():
    """1,000 replications (MC SE 0.005 at 0.975): the printed P99 interval covers >= 0.95.

    Measured: the 95% inverted interval 0.912, the printed one (computed at 99%) 0.969 (other
    seeds: 0.875-0.905 and 0.943-0.975); at 6 slices of 20,000 jobs the printed one covers
    0.987 (300 replications).
    """
    plain, printed = _report_coverage(6, 3000, 1000, seed=61)
    print(f"P99 at 6 slices of 3,000 (1,000 replications): 95% {plain:.4f}, printed {printed:.4f}")
    assert printed >= 0.95 and plain < 0.93
