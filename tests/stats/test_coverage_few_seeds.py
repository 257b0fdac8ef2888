"""Monte-Carlo coverage at 95% of the intervals for a few seeds and for seeds as clusters (slow).

The n are those the report sections print them at: k-parity 3, 4 or 8 seeds, LoKRA 3 and 5,
L2A 2, TEAM one seed of 300 prompts (its `quick` preset) or 3 seeds of 100. The sections'
own tests (tests/suites) run the same check through the report builders. A pass is coverage
within [0.93, 0.97]; an interval labelled "conservative" must reach 0.95. 10,000 replications
give a Monte-Carlo SE of 0.0022 at 0.95, and 4,000 (the clustered ones, 300 items each) 0.0034.
Data are normal unless said otherwise; what skewed data do is measured and written beside each.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps

from harness.stats._exact import median_interval, sign_flip_interval
from harness.stats._intervals import (
    Interval,
    clustered_t_interval,
    ratio_interval,
    t_interval,
    wilson,
)
from harness.stats._paired import mcnemar
from harness.stats._resampling import clustered_wilson

REPS = 10_000
CLUSTER_REPS = 4_000
pytestmark = pytest.mark.slow


def coverage(
    make: Callable[[np.random.Generator], tuple[Interval, float]], reps: int, seed: int
) -> float:
    """Share of `reps` intervals from `make(rng)` that hold their true value; all estimable."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        ci, true = make(rng)
        assert ci.estimable, ci
        hits += ci.low <= true <= ci.high
    return hits / reps


def test_sign_flip_interval_at_8_seeds():
    # Normal differences: exact, 1 - 12/256 = 95.3%. Measured (seed 0): 95.3%. Skewed
    # (exponential - 1, centred on its mean): 90.3%, the t interval 89.3%; neither holds for
    # strongly skewed differences at 8 seeds. Student t3 differences (heavy tails): 95.2%.
    cov = coverage(lambda r: (sign_flip_interval(r.normal(0.3, 1.0, 8)), 0.3), REPS, seed=0)
    assert 0.93 <= cov <= 0.97, cov
    assert sign_flip_interval(np.arange(8.0)).method == "exact sign-flip, 95.3%"


def test_sign_flip_interval_at_6_seeds_is_labelled_conservative():
    # k = 1 at n = 6: [min, max], exactly 1 - 2/64 = 96.9% for symmetric data. Measured: 97.1%.
    cov = coverage(lambda r: (sign_flip_interval(r.normal(-1.0, 2.0, 6)), -1.0), REPS, seed=1)
    assert cov >= 0.95, cov
    assert "conservative" in sign_flip_interval(np.arange(6.0)).method


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_sign_flip_and_median_say_not_estimable_below_6(n):
    # L2A (2), k-parity (3, 4), LoKRA (3, 5): no interval at 95% exists, and none is printed,
    # whatever the data.
    rng = np.random.default_rng(n)
    for _ in range(100):
        x = rng.normal(size=n)
        for ci in (sign_flip_interval(x), median_interval(x)):
            assert not ci.estimable and f"not estimable at n = {n}" in ci.method


@pytest.mark.parametrize("censor", [False, True])
def test_median_interval_at_8_seeds_is_labelled_conservative(censor):
    # [x(1), x(8)] covers 1 - 2/256 = 99.2% for any continuous distribution; the next pair
    # covers 93.0%, below 95%. Lognormal steps (skewed) with the slowest censored to "never"
    # (inf) are no different: measured 99.3% both (the same draws; censoring keeps the order).
    def make(r: np.random.Generator) -> tuple[Interval, float]:
        steps = r.lognormal(6.0, 0.5, 8)
        if censor:
            steps = np.where(steps > 500.0, np.inf, steps)  # about 27% never generalise
        return median_interval(steps), float(np.exp(6.0))

    cov = coverage(make, REPS, seed=2)
    assert cov >= 0.95, cov
    assert median_interval(np.arange(8.0)).method == "order statistics, 99.2%, conservative"


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_t_interval_for_per_arm_means(n):
    # Normal: exact. Measured: 94.9 to 95.5%. Skewed scores (exponential): 90.9% at n = 2,
    # 88.0% at 3, 88.1% at 5, 89.3% at 8; Beta(18, 2) accuracies (mean 0.9, skewed left):
    # 93.6%, 92.4%, 91.9%, 93.3%.
    cov = coverage(lambda r: (t_interval(list(r.normal(0.9, 0.05, n))), 0.9), REPS, seed=n)
    assert 0.93 <= cov <= 0.97, cov


@pytest.mark.parametrize("n", [3, 4, 8, 300])
def test_wilson_average_coverage_at_the_printed_sizes(n):
    # Exact, from the binomial pmf, averaged over p in [0.05, 0.95]: 95.8% at 3 and 4, 95.5%
    # at 8, 95.0% at 300 (k-parity's share that generalises; TEAM's exact match). Wilson's
    # coverage oscillates with p: its minimum over this range is 83% at n = 3, 90% at 8.
    bounds = [wilson(k, n) for k in range(n + 1)]
    cover = []
    for p in np.linspace(0.05, 0.95, 181):
        pmf = sps.binom.pmf(np.arange(n + 1), n, p)
        cover.append(sum(w for w, ci in zip(pmf, bounds, strict=True) if ci.low <= p <= ci.high))
    assert 0.93 <= float(np.mean(cover)) <= 0.97


def test_team_one_seed_t_and_ratio_over_300_prompts():
    # TEAM with one seed: prompts independent for that model. TPF-like per-prompt values,
    # skewed (1.5 + Gamma(2, 0.25)): t measured 95.2%; the ratio of paired means with a
    # lognormal per-prompt factor: 95.2%.
    def tpf(r: np.random.Generator) -> tuple[Interval, float]:
        return t_interval(list(1.5 + r.gamma(2.0, 0.25, 300))), 2.0

    def ratio(r: np.random.Generator) -> tuple[Interval, float]:
        b = 1.5 + r.gamma(2.0, 0.25, 300)
        a = 1.5 * b * r.lognormal(0.0, 0.1, 300) + r.normal(0.0, 0.2, 300)
        return ratio_interval(a, b), 1.5 * np.exp(0.005)

    for make, seed in ((tpf, 3), (ratio, 4)):
        cov = coverage(make, CLUSTER_REPS, seed=seed)
        assert 0.93 <= cov <= 0.97, (make.__name__, cov)


def test_team_one_seed_tango_over_300_prompts():
    # Exact-match difference against vanilla, 5 points, 19% discordant: the Tango score
    # interval (McNemar's asymptotic test inverted) measured 95.3%; Agresti-Min, before, 95.4%.
    def make(r: np.random.Generator) -> tuple[Interval, float]:
        n11, n10, n01, n00 = r.multinomial(300, (0.5, 0.12, 0.07, 0.31))
        a = np.repeat([1, 1, 0, 0], [n11, n10, n01, n00])
        b = np.repeat([1, 0, 1, 0], [n11, n10, n01, n00])
        t = mcnemar(a, b)
        return Interval(t.estimate, t.low, t.high, t.confidence, t.method, t.n), 0.05

    cov = coverage(make, CLUSTER_REPS, seed=5)
    assert 0.93 <= cov <= 0.97, cov


K, M = 3, 100  # TEAM with seeds: 3 trained seeds of 100 prompts each
LABELS = np.repeat(np.arange(K), M)


@pytest.mark.parametrize("seed_sd", [0.0, 0.1, 0.3])
def test_team_seeds_as_clusters_clustered_t_and_ratio(seed_sd):
    # A seed effect of sd 0 to 0.3 on a TPF of 2 (skewed noise per prompt). Clustered t on
    # 2 df measured 94.5 to 95.4%; the clustered ratio 94.7 to 95.5%.
    def tpf(r: np.random.Generator) -> tuple[Interval, float]:
        x = 1.5 + r.normal(0.0, seed_sd, K)[LABELS] + r.gamma(2.0, 0.25, K * M)
        return clustered_t_interval(x, LABELS), 2.0

    def ratio(r: np.random.Generator) -> tuple[Interval, float]:
        b = 1.5 + r.normal(0.0, seed_sd, K)[LABELS] + r.gamma(2.0, 0.25, K * M)
        tau = 0.5 * seed_sd  # the seed also moves the variant's ratio
        a = 1.5 * b * r.lognormal(0.0, tau, K)[LABELS] * r.lognormal(0.0, 0.1, K * M)
        return ratio_interval(a, b, clusters=LABELS), 1.5 * np.exp(tau**2 / 2 + 0.005)

    for make, seed in ((tpf, 6), (ratio, 7)):
        cov = coverage(make, CLUSTER_REPS, seed=seed)
        assert 0.93 <= cov <= 0.97, (make.__name__, cov)


def _beta_rates(r: np.random.Generator, mean: float, icc: float) -> np.ndarray:
    """Per-seed accuracies with the given mean and intracluster correlation (0: all equal)."""
    if icc == 0:
        return np.full(K, mean)
    s = 1 / icc - 1
    return r.beta(mean * s, (1 - mean) * s, K)


@pytest.mark.parametrize(
    ("mean", "icc"), [(0.6, 0.0), (0.6, 0.01), (0.6, 0.05), (0.6, 0.2), (0.9, 0.0), (0.9, 0.05)]
)
def test_team_seeds_as_clusters_korn_graubard_wilson_is_conservative(mean, icc):
    # Exact match over 3 seeds: the design effect is floored at 1 and the effective size
    # scaled by (t_299 / t_2)**2 = 0.21, so with seeds that agree it covers more than 95%:
    # measured 100% (icc 0), 99.98% (0.01), 98.5% (0.05), 95.6% (0.2) at mean 0.6, and 100%,
    # 98.8% at mean 0.9; the report labels it conservative. It is not safe everywhere: with
    # seeds far apart and skewed (mean 0.9, icc 0.2, a seed-to-seed sd of 13 points) it
    # covered 91.8% (the clustered t 81.5%), and at mean 0.9, icc 0.5, 71.5% (4,000
    # replications each, not asserted here); no interval from 3 seeds can promise more there.
    def make(r: np.random.Generator) -> tuple[Interval, float]:
        p = _beta_rates(r, mean, icc)
        y = (r.random(K * M) < p[LABELS]).astype(float)
        return clustered_wilson(y, LABELS), mean

    cov = coverage(make, CLUSTER_REPS, seed=8)
    assert cov >= 0.95, cov


@pytest.mark.parametrize("icc", [0.0, 0.05, 0.2])
def test_team_seeds_as_clusters_exact_match_difference(icc):
    # Variant 5 points better than vanilla per seed, the two drawn independently per prompt;
    # clustered t on 2 df over the (seed, prompt) differences. Measured 95.5%, 95.2%, 96.0%.
    s = 1 / icc - 1 if icc else 0.0

    def gain(p: float) -> float:
        return min(p + 0.05, 1.0) - p

    if icc:
        true = integrate.quad(
            lambda p: gain(p) * sps.beta.pdf(p, 0.6 * s, 0.4 * s), 0, 1, points=[0.95]
        )[0]
    else:
        true = 0.05

    def make(r: np.random.Generator) -> tuple[Interval, float]:
        p = _beta_rates(r, 0.6, icc)[LABELS]
        ya = (r.random(K * M) < p).astype(float)
        yb = (r.random(K * M) < np.minimum(p + 0.05, 1.0)).astype(float)
        return clustered_t_interval(yb - ya, LABELS), true

    cov = coverage(make, CLUSTER_REPS, seed=9)
    assert 0.93 <= cov <= 0.97, cov
