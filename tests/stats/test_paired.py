import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from harness.stats import _resampling as resampling
from harness.stats._paired import mcnemar, paired_bootstrap_diff, paired_permutation


def _pairs(n11, n10, n01, n00):
    """Score vectors a, b with the given 2x2 table (rows: a right/wrong; columns: b)."""
    a = np.repeat([1, 1, 0, 0], [n11, n10, n01, n00])
    b = np.repeat([1, 0, 1, 0], [n11, n10, n01, n00])
    return a, b


# Pinned from statsmodels 0.15.0 and scipy 1.17.1:
#   exact: statsmodels.stats.contingency_tables.mcnemar(np.array([[n11, n10], [n01, n00]]),
#          exact=True).pvalue
#   mid-p: 2 * scipy.stats.binomtest(k, n10 + n01, 0.5, alternative="less").pvalue
#          - scipy.stats.binom.pmf(k, n10 + n01, 0.5), with k = min(n10, n01), capped at 1
MCNEMAR_CASES = [
    ((10, 1, 7, 12), 0.0703125, 0.039062500000000014),
    ((50, 30, 20, 100), 0.20263875106454066, 0.16077960181198842),
    ((794, 150, 86, 570), 3.7159361395713866e-05, 2.893389517615428e-05),
    ((5, 0, 0, 5), 1.0, 1.0),
    ((3, 4, 4, 3), 1.0, 1.0),
    ((0, 13, 2, 0), 0.00738525390625, 0.004180908203124999),
]


@pytest.mark.parametrize(("cells", "exact", "midp"), MCNEMAR_CASES)
def test_mcnemar_pinned_statsmodels_and_scipy(cells, exact, midp):
    a, b = _pairs(*cells)
    assert mcnemar(a, b, method="exact").p_value == pytest.approx(exact, rel=1e-10, abs=1e-15)
    assert mcnemar(a, b, method="midp").p_value == pytest.approx(midp, rel=1e-10, abs=1e-15)
    # asymptotic: statsmodels.stats.contingency_tables.mcnemar(table, exact=False,
    # correction=False).pvalue, the chi-square (n10 - n01)**2 / (n10 + n01) on 1 df
    table = np.array([[cells[0], cells[1]], [cells[2], cells[3]]])
    asymptotic = 1.0  # no discordant item (statsmodels: 0 / 0): no evidence either way
    if cells[1] + cells[2] > 0:
        asymptotic = sm_mcnemar(table, exact=False, correction=False).pvalue
    assert mcnemar(a, b).p_value == pytest.approx(asymptotic, rel=1e-10, abs=1e-15)


def test_mcnemar_fagerland_worked_example():
    # Fagerland, Lydersen and Laake (2013), BMC Med Res Methodol 13:91, the airway
    # hyper-responsiveness example (n12 = 1, n21 = 7): exact p = 0.070, mid-p p = 0.039.
    # The asymptotic McNemar test gives p = 0.034 there.
    a, b = _pairs(1, 1, 7, 12)
    assert mcnemar(a, b).p_value == pytest.approx(0.034, abs=5e-4)
    assert mcnemar(a, b, method="exact").p_value == pytest.approx(0.070, abs=5e-4)
    assert mcnemar(a, b, method="midp").p_value == pytest.approx(0.039, abs=5e-4)


def test_mcnemar_matches_statsmodels_on_random_tables():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n10, n01 = rng.integers(0, 60, size=2)
        a, b = _pairs(5, int(n10), int(n01), 9)
        table = np.array([[5, n10], [n01, 9]])
        expected = sm_mcnemar(table, exact=True).pvalue
        assert mcnemar(a, b, method="exact").p_value == pytest.approx(
            expected, rel=1e-10, abs=1e-15
        )
        assert mcnemar(a, b, method="midp").p_value <= expected


def _score_statistic(b10, b01, n, delta):
    """The score statistic for p10 - p01 = delta, written independently of the harness.

    The restricted maximum-likelihood (p10, p01) is found numerically by scipy (bounded
    scalar minimisation of the multinomial negative log-likelihood over p01), not from the
    quadratic that the harness solves.
    """
    from scipy.optimize import minimize_scalar

    def nll(q):
        cells = np.array([q + delta, q, 1 - 2 * q - delta])
        counts = np.array([b10, b01, n - b10 - b01])
        return -float(np.sum(counts * np.log(np.maximum(cells, 1e-300))))

    lo, hi = max(0.0, -delta), (1 - delta) / 2
    q = minimize_scalar(nll, bounds=(lo, hi), method="bounded",
                        options={"xatol": 1e-13}).x  # fmt: skip
    var = (q + delta) + q - delta**2
    return (b10 - b01 - n * delta) / math.sqrt(n * var)


@pytest.mark.parametrize("cells", [(794, 150, 86, 570), (10, 1, 7, 12), (0, 13, 2, 0)])
def test_mcnemar_tango_interval_bounds_solve_the_score_equation(cells):
    a, b = _pairs(*cells)
    res = mcnemar(a, b)
    n, b10, b01 = sum(cells), cells[1], cells[2]
    assert (res.n, res.b10, res.b01) == (n, b10, b01)
    assert res.estimate == pytest.approx((b10 - b01) / n, abs=1e-15)
    assert res.method == "mcnemar asymptotic; interval: Tango score"
    # Each bound is where the score statistic reaches -/+ z_0.975 (scipy.stats.norm.ppf).
    z = sps.norm.ppf(0.975)
    assert _score_statistic(b10, b01, n, res.low) == pytest.approx(z, abs=1e-5)
    assert _score_statistic(b10, b01, n, res.high) == pytest.approx(-z, abs=1e-5)
    assert "Tango score" in res.summary()
    assert res.summary(fmt="html").startswith("<table>")


def test_mcnemar_tango_interval_closed_forms_at_the_edges():
    # No discordant item: the score test keeps |delta| <= z**2 / (n + z**2); every item for
    # a: the lower bound is (n - z**2) / (n + z**2) (solved by hand from the statistic).
    z2 = sps.norm.ppf(0.975) ** 2
    none = mcnemar(*_pairs(12, 0, 0, 8))
    assert (none.low, none.high) == pytest.approx((-z2 / (20 + z2), z2 / (20 + z2)), abs=1e-12)
    every = mcnemar(*_pairs(0, 20, 0, 0))
    assert (every.low, every.high) == pytest.approx(((20 - z2) / (20 + z2), 1.0), abs=1e-12)


def test_mcnemar_no_discordant_pairs_gives_p_one():
    a = np.array([1, 0, 1, 1, 0])
    for method in ("asymptotic", "exact", "midp"):
        res = mcnemar(a, a.copy(), method=method)
        assert res.p_value == 1.0
        assert res.estimate == 0.0
    assert mcnemar(a, a.copy()).low < 0 < mcnemar(a, a.copy()).high
    # The exact and mid-p tests come without an interval: none inverts them.
    assert math.isnan(mcnemar(a, a.copy(), method="exact").low)


def test_mcnemar_empty_is_nan_and_bad_input_raises():
    res = mcnemar([], [])
    assert math.isnan(res.estimate) and math.isnan(res.p_value) and res.n == 0
    with pytest.raises(ValueError, match="'asymptotic', 'exact', 'midp'"):
        mcnemar([1], [0], method="chi2")
    with pytest.raises(ValueError, match="0/1"):
        mcnemar([0.5, 1], [0, 1])
    with pytest.raises(ValueError, match="shapes"):
        mcnemar([1, 0], [1])
    with pytest.raises(ValueError, match="fmt"):
        mcnemar([1, 0], [0, 0]).summary(fmt="latex")


def test_paired_bootstrap_reproducible_and_seed_dependent():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=300), rng.normal(size=300)
    first = paired_bootstrap_diff(a, b, n_resamples=2000, seed=5)
    assert first == paired_bootstrap_diff(a, b, n_resamples=2000, seed=5)
    other = paired_bootstrap_diff(a, b, n_resamples=2000, seed=6)
    assert (first.low, first.high) != (other.low, other.high)
    assert first.estimate == pytest.approx(np.mean(a - b), abs=1e-12)
    assert first.method == "paired bootstrap"


def test_paired_bootstrap_close_to_paired_t_on_normal_data():
    rng = np.random.default_rng(1)
    a = rng.normal(0.3, 1.0, size=800)
    b = a + rng.normal(-0.04, 0.5, size=800)
    d = a - b
    res = paired_bootstrap_diff(a, b, n_resamples=20_000, seed=2)
    # scipy.stats.t.interval(0.95, n - 1, loc=mean(d), scale=sem(d)) and ttest_rel(a, b)
    low, high = sps.t.interval(0.95, d.size - 1, loc=d.mean(), scale=sps.sem(d))
    half = (high - low) / 2
    assert res.low == pytest.approx(low, abs=0.05 * half)
    assert res.high == pytest.approx(high, abs=0.05 * half)
    t_p = sps.ttest_rel(a, b).pvalue
    assert t_p == pytest.approx(0.0344, abs=1e-4)
    # Monte-Carlo SE of the bootstrap p-value: sqrt(0.034 * 0.966 / 20000) = 0.0013
    assert res.p_value == pytest.approx(t_p, abs=0.005)


def test_paired_bootstrap_counts_path_matches_index_path(monkeypatch):
    # 0/1 scores have three distinct differences and take the multinomial-counts path;
    # forcing the index-matrix path must give the same distribution of resampled sums.
    rng = np.random.default_rng(4)
    d = (rng.random(400) < 0.3).astype(float) - (rng.random(400) < 0.2)
    counts = resampling._resample_sums(d, 20_000, np.random.default_rng(0))
    monkeypatch.setattr(resampling, "_COUNTS_RATIO", 10**9)
    index = resampling._resample_sums(d, 20_000, np.random.default_rng(0))
    # Exact moments of a bootstrap sum: mean n * mean(d), variance n * var(d) (ddof=0).
    mean, sd = d.sum(), math.sqrt(d.size * d.var())
    for sums in (counts, index):
        assert sums.mean() == pytest.approx(mean, abs=4 * sd / math.sqrt(sums.size))
        assert sums.std() == pytest.approx(sd, rel=0.03)
    assert sps.ks_2samp(counts, index).pvalue > 1e-3


def test_paired_bootstrap_degenerate():
    assert math.isnan(paired_bootstrap_diff([], []).estimate)
    one = paired_bootstrap_diff([1.0], [0.0])
    assert one.estimate == 1.0 and math.isnan(one.low) and math.isnan(one.p_value)
    same = paired_bootstrap_diff([1, 0, 1, 1], [1, 0, 1, 1])
    assert (same.low, same.high, same.p_value) == (0.0, 0.0, 1.0)


@pytest.mark.parametrize("kind", ["binary", "normal"])
def test_paired_bootstrap_coverage_modest(kind):
    # 1,000 replications, 1,000 resamples each; binary data take the multinomial path and
    # normal data the index matrix. Monte-Carlo SE of the coverage is 0.007.
    rng = np.random.default_rng(11)
    reps, n = 1000, 150
    if kind == "binary":
        cells = rng.multinomial(1, [0.6, 0.1, 0.05, 0.25], size=(reps, n))  # (reps, n, 4)
        a = cells[..., 0] + cells[..., 1]
        b = cells[..., 0] + cells[..., 2]
        true = 0.05
    else:
        a = rng.normal(0.2, 1.0, size=(reps, n))
        b = 0.5 * a + rng.normal(0.0, 1.0, size=(reps, n))
        true = 0.1
    hits = 0
    for i in range(reps):
        res = paired_bootstrap_diff(a[i], b[i], n_resamples=1000, seed=i)
        hits += res.low <= true <= res.high
    assert 0.92 <= hits / reps <= 0.97


def test_paired_permutation_close_to_exact_mcnemar():
    a, b = _pairs(1500, 130, 100, 270)
    # statsmodels.stats.contingency_tables.mcnemar([[1500, 130], [100, 270]],
    # exact=True).pvalue
    exact = sm_mcnemar(np.array([[1500, 130], [100, 270]]), exact=True).pvalue
    assert exact == pytest.approx(0.05561357778139238, rel=1e-9)
    res = paired_permutation(a, b, n_resamples=40_000, seed=1)
    # Monte-Carlo SE sqrt(p (1 - p) / 40000) = 0.0011
    assert res.p_value == pytest.approx(exact, abs=0.0045)
    assert (res.b10, res.b01, res.n) == (130, 100, 2000)
    assert math.isnan(res.low) and math.isnan(res.high)
    assert "[" not in res.summary()


def _enumerated_p(d):
    """The exact sign-flip p-value from all 2**n sign vectors, written independently."""
    flipped = np.array([np.dot(s, d) for s in itertools.product([1, -1], repeat=d.size)])
    return float(np.mean(np.abs(flipped) >= abs(d.sum()) * (1 - 1e-12)))


@pytest.mark.parametrize("size", [1, 3, 8, 12])
def test_paired_permutation_is_exact_up_to_20_differences(size):
    rng = np.random.default_rng(size)
    d = rng.normal(0.4, 1.0, size=size)
    res = paired_permutation(d, np.zeros_like(d), seed=0)
    # Every flip is enumerated: the p-value is a multiple of 2**-n, with no Monte-Carlo error,
    # and the seed does not matter.
    assert res.p_value == pytest.approx(_enumerated_p(d), abs=1e-15)
    assert res.p_value * 2**size == pytest.approx(round(res.p_value * 2**size), abs=1e-9)
    assert res == paired_permutation(d, np.zeros_like(d), seed=99)
    assert res.method == "paired permutation (exact)"


def test_paired_permutation_monte_carlo_above_20():
    rng = np.random.default_rng(21)
    d = rng.normal(0.3, 1.0, size=22)
    res = paired_permutation(d, np.zeros_like(d), n_resamples=40_000, seed=0)
    assert res.method == "paired permutation (Monte Carlo)"
    assert res != paired_permutation(d, np.zeros_like(d), n_resamples=40_000, seed=1)
    # exact by the same enumeration as the function's exact path would do, 2**22 sums
    flipped = np.zeros(1)
    for v in d:
        flipped = np.concatenate((flipped + v, flipped - v))
    exact = float(np.mean(np.abs(flipped) >= abs(d.sum()) * (1 - 1e-12)))
    # Monte-Carlo SE at most sqrt(0.25 / 40000) = 0.0025
    assert res.p_value == pytest.approx(exact, abs=0.01)


def test_paired_permutation_decides_small_and_constant_differences_exactly():
    # Differences of 1e-9, -1e-9 and 5e-9 are not "constant": of the 8 sign vectors, those
    # giving |sum| >= 5e-9 are (+,-,+), (-,+,+), (+,+,+) and their mirror images: p = 6/8.
    tiny = paired_permutation([1e-9, -1e-9, 5e-9], [0.0, 0.0, 0.0])
    assert tiny.p_value == 0.75
    # Exactly constant and not zero: only the observed signs and their mirror are as extreme.
    assert paired_permutation([0.1, 0.1, 0.1], [0.0, 0.0, 0.0]).p_value == 0.25
    # Every difference exactly zero: nothing to test, p = 1.
    assert paired_permutation([0.5, 0.2, 0.9], [0.5, 0.2, 0.9]).p_value == 1.0


def test_paired_permutation_edge_cases():
    assert paired_permutation([1, 0, 1], [1, 0, 1]).p_value == 1.0
    assert math.isnan(paired_permutation([], []).p_value)
    # All eight items favour a: only the all-plus and all-minus flips are as extreme,
    # so p = 2 / 2**8 exactly.
    res = paired_permutation(np.ones(8), np.zeros(8))
    assert res.p_value == 2 / 256
    with pytest.raises(ValueError, match="n_resamples"):
        paired_permutation([1], [0], n_resamples=0)


def _tango_coverage(reps, n, cells, seed):
    rng = np.random.default_rng(seed)
    tables = rng.multinomial(n, cells, size=reps)  # (reps, 4)
    true = cells[1] - cells[2]
    hits = 0
    for n11, n10, n01, n00 in tables:
        res = mcnemar(*_pairs(n11, n10, n01, n00))
        hits += res.low <= true <= res.high
    return hits / reps


def test_mcnemar_interval_coverage_modest():
    assert 0.93 <= _tango_coverage(2000, 200, (0.6, 0.1, 0.05, 0.25), seed=0) <= 0.97


@pytest.mark.slow
def test_mcnemar_interval_coverage_slow():
    # 20,000 replications: Monte-Carlo SE 0.0015.
    assert 0.94 <= _tango_coverage(20_000, 500, (0.5, 0.2, 0.15, 0.15), seed=1) <= 0.96
