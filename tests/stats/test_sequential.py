"""Betting confidence sequences: coverage at data-dependent stopping times, e-values, e-BH.

Every coverage test stops each replication at a time chosen from its own data (the interval is
narrow enough, or it excludes a value), reads the interval there, and counts how often it holds
the truth. A fixed-n interval fails this (the negative control below), so the tests can fail.
The default run uses a few hundred replications (a few seconds) and allows two Monte-Carlo
standard errors; the `long` ones are the issue's hard gate, >= 0.95 over 2,000 replications.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from harness.stats._sequential import BettingCS, ConfidenceSequence, bonferroni_alpha, e_bh

EPS = np.finfo(float).eps
GATE = 0.95  # the hard gate, at 2,000 replications (`long`)


def small_gate(reps: int) -> float:
    """The default run's gate: 0.95 less two Monte-Carlo standard errors at `reps` replications.

    A CS that covers 95% passes it 97.7% of the time; the fixed-n control (about 0.75) never.
    """
    return GATE - 2 * np.sqrt(GATE * (1 - GATE) / reps)


def run_until(
    cs: BettingCS,
    draw: Callable[[int], np.ndarray],
    stop: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    n_max: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observe draw(t) until stop(low, high, estimate) or n_max; (low, high, n) at each stop."""
    size = cs.counts().size
    stopped = np.zeros(size, bool)
    low_at = np.full(size, np.nan)
    high_at = np.full(size, np.nan)
    n_at = np.zeros(size, int)
    for t in range(n_max):
        cs.update(draw(t), mask=~stopped)
        low, high = cs.bounds()
        now = ~stopped & (stop(low, high, cs.estimates()) | (t == n_max - 1))
        low_at[now], high_at[now], n_at[now] = low[now], high[now], t + 1
        stopped |= now
        if stopped.all():
            break
    return low_at, high_at, n_at


def coverage(low: np.ndarray, high: np.ndarray, truth: float | np.ndarray) -> float:
    """Share of replications whose interval holds the truth (ties count as covered)."""
    tol = 8 * EPS
    return float(np.mean((low - tol <= truth) & (truth <= high + tol)))


def iid_mean(reps: int, mu: float, width: float, n_max: int, seed: int) -> tuple[float, float]:
    """Bernoulli(mu): stop when the CS is narrower than `width`; (coverage, share stopped early)."""
    rng = np.random.default_rng(seed)
    cs = BettingCS(batch=reps, grid=np.linspace(0, 1, 201))
    low, high, n = run_until(
        cs,
        lambda t: rng.binomial(1, mu, reps).astype(float),
        lambda lo, hi, est: hi - lo < width,
        n_max,
    )
    return coverage(low, high, mu), float(np.mean(n < n_max))


def iid_difference(reps: int, n_max: int, seed: int) -> tuple[float, float]:
    """Paired Beta scores with a small true difference: stop when the CS excludes 0."""
    rng = np.random.default_rng(seed)
    delta = 0.4 / 0.9 - 0.4 / 1.0  # E[Beta(4, 5)] - E[Beta(4, 6)]
    cs = BettingCS(batch=reps, kind="difference", grid=np.linspace(-1, 1, 201))

    def draw(t: int) -> np.ndarray:
        return rng.beta(4, 5, reps) - rng.beta(4, 6, reps)

    low, high, n = run_until(cs, draw, lambda lo, hi, est: (lo > 0) | (hi < 0), n_max)
    return coverage(low, high, delta), float(np.mean(n < n_max))


def wor_difference(reps: int, items: int, seed: int) -> tuple[float, float]:
    """A fixed board of N items, drawn in a random order per replication, without replacement.

    Two 0/1 models whose full-board difference is 0.04; stop when the CS excludes 0.
    """
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=items)
    a = (rng.random(items) < 1 / (1 + np.exp(-ability - 0.15))).astype(float)
    b = (rng.random(items) < 1 / (1 + np.exp(-ability))).astype(float)
    d = a - b
    truth = d.mean()
    orders = np.argsort(rng.random((reps, items)), axis=1)  # (R, N) one permutation per row
    cs = BettingCS(batch=reps, kind="difference", population=items,
                   grid=np.linspace(-1, 1, 401))  # fmt: skip
    low, high, n = run_until(
        cs, lambda t: d[orders[:, t]], lambda lo, hi, est: (lo > 0) | (hi < 0), items
    )
    return coverage(low, high, truth), float(np.mean(n < items))


def wor_mean_narrow(reps: int, items: int, width: float, seed: int) -> tuple[float, float]:
    """Finite population of 0/1 scores: stop when narrower than `width`."""
    rng = np.random.default_rng(seed)
    pop = (rng.random(items) < 0.8).astype(float)
    orders = np.argsort(rng.random((reps, items)), axis=1)
    cs = BettingCS(batch=reps, population=items, grid=np.linspace(0, 1, 201))
    low, high, n = run_until(cs, lambda t: pop[orders[:, t]], lambda lo, hi, e: hi - lo < width,
                             items)  # fmt: skip
    return coverage(low, high, pop.mean()), float(np.mean(n < items))


# ---------------------------------------------------------------- default run (a few seconds)


def test_iid_mean_covers_when_stopped_for_width() -> None:
    cov, early = iid_mean(reps=300, mu=0.3, width=0.25, n_max=300, seed=1)
    assert early > 0.9  # the rule did stop most runs, so this is coverage at a stopping time
    assert cov >= small_gate(300)


def test_iid_difference_covers_when_stopped_at_exclusion() -> None:
    cov, early = iid_difference(reps=300, n_max=300, seed=2)
    assert early > 0.01
    assert cov >= small_gate(300)


def test_wor_difference_covers_when_stopped_at_exclusion() -> None:
    cov, early = wor_difference(reps=300, items=200, seed=3)
    assert cov >= small_gate(300)


def test_wor_mean_covers_when_stopped_for_width() -> None:
    cov, early = wor_mean_narrow(reps=300, items=200, width=0.15, seed=4)
    assert early > 0.9
    assert cov >= small_gate(300)


def test_fixed_n_interval_fails_the_same_check() -> None:
    """Negative control: a 95% CLT interval, read every step, stopped when it excludes the truth.

    The same harness that passes the CS must catch this interval's optional-stopping failure.
    """
    rng = np.random.default_rng(5)
    reps, n_max, mu = 400, 300, 0.5
    x = rng.binomial(1, mu, (reps, n_max)).astype(float)
    n = np.arange(1, n_max + 1)
    mean = np.cumsum(x, axis=1) / n
    half = stats.norm.ppf(0.975) * np.sqrt(np.maximum(mean * (1 - mean), 1e-12) / n)
    ever_out = np.any((np.abs(mean - mu) > half)[:, 9:], axis=1)  # from n = 10 on
    assert 1 - ever_out.mean() < 0.8


def test_never_excluding_the_truth_is_at_least_95_percent() -> None:
    """The strongest stopping rule: stop as soon as the CS misses the truth (running max)."""
    rng = np.random.default_rng(6)
    reps, mu = 300, 0.5
    cs = BettingCS(batch=reps, grid=np.linspace(0, 1, 101))
    for _ in range(400):
        cs.update(rng.binomial(1, mu, reps).astype(float))
    low, high = cs.bounds()  # a running intersection: missed once, missed now
    assert coverage(low, high, mu) >= small_gate(reps)
    assert np.mean(high - low) < 0.3  # and it is not covering by being [0, 1]


def test_anytime_p_value_and_e_value_under_the_null() -> None:
    rng = np.random.default_rng(7)
    reps = 400
    cs = BettingCS(batch=reps, kind="difference", grid=np.linspace(-1, 1, 101))
    stopped = np.zeros(reps, bool)
    e_at = np.ones(reps)
    for t in range(300):
        cs.update(rng.choice([-1.0, 0.0, 1.0], size=reps, p=[0.2, 0.6, 0.2]), mask=~stopped)
        p = cs.p_values(0.0)
        now = ~stopped & ((p <= 0.05) | (t == 299) | (cs.estimates() > 0.1))
        e_at[now] = cs.e_values(0.0)[now]
        stopped |= now
    assert np.mean(cs.p_values(0.0) <= 0.05) <= 0.05  # ever rejected (p is a running min)
    se = e_at.std() / np.sqrt(reps)
    assert e_at.mean() <= 1 + 3 * se  # E[e at a stopping time] <= 1 (optional stopping)


def test_p_value_and_interval_agree() -> None:
    """A CS that excludes the null comes with p <= alpha (the same capital, hedged as a sum)."""
    rng = np.random.default_rng(8)
    cs = BettingCS(kind="difference", grid=np.linspace(-1, 1, 201))
    for _ in range(300):
        cs.update(float(rng.binomial(1, 0.65) - rng.binomial(1, 0.35)))
    ci, test = cs.interval(), cs.test(0.0)
    assert ci.excludes(0.0)
    assert test.p_value <= ci.alpha
    assert isinstance(ci, ConfidenceSequence) and "betting" in ci.summary()


def test_coarse_grid_contains_the_fine_grids_interval() -> None:
    """The interval read off a grid bounds the exact CS from outside (monotone capital)."""
    rng = np.random.default_rng(9)
    x = rng.beta(2, 3, 200)
    fine = BettingCS(grid=np.linspace(0, 1, 4001))
    coarse = BettingCS(grid=np.linspace(0, 1, 21))
    wor_fine = BettingCS(population=200, grid=np.linspace(0, 1, 4001))
    wor_coarse = BettingCS(population=200, grid=np.linspace(0, 1, 21))
    for v in x[:150]:
        for cs in (fine, coarse, wor_fine, wor_coarse):
            cs.update(v)
    for small, big in ((fine, coarse), (wor_fine, wor_coarse)):
        assert big.interval().low <= small.interval().low
        assert big.interval().high >= small.interval().high
        assert big.interval().width < 1  # the coarse one still rejected something


def test_without_replacement_collapses_to_the_population_mean() -> None:
    rng = np.random.default_rng(10)
    pop = rng.random(50)
    cs = BettingCS(population=50)
    iid = BettingCS()
    for v in rng.permutation(pop):
        cs.update(v)
        iid.update(v)
    ci = cs.interval()
    step = 1 / (cs.grid.size - 1)
    assert ci.low <= pop.mean() <= ci.high
    assert ci.width <= 2 * step + 8 * EPS
    assert iid.interval().width > 10 * ci.width
    with pytest.raises(ValueError, match="more draws"):
        cs.update(0.5)


def test_capital_matches_confseq() -> None:
    """The hedged capital against the authors' package, confseq 0.0.11 (MIT), to rounding.

    Generated with confseq.betting.betting_mart(x, m, alpha=0.05, N=N, convex_comb=True,
    theta=0.5, trunc_scale=0.75) (default predictable plug-in bets, truncation at 0.75/m), run
    with NumPy's `np.float_` aliased for its NumPy 2 incompatibility; cap[9] and cap[39].
    """
    x = ((np.arange(1, 41) * 7919) % 101) / 100.0  # 40 values in [0, 1]
    expected = {  # N: {m: (capital after 10 draws, after 40)}
        None: {0.3: (1.8562576081670654, 565.1005186677976),
               0.5: (0.5644201564456869, 0.052877544836666776),
               0.62: (4.048377714535138, 18.48854586886791)},
        60: {0.3: (2.539313712805863, np.inf),
             0.5: (0.5791467592310754, 0.05859442038624736),
             0.62: (5.098429387078447, 399.04929160105456)},
    }  # fmt: skip
    rel = 64 * x.size * EPS  # a product of 40 factors, each rounded a few times
    for population, by_m in expected.items():
        cs = BettingCS(population=population, grid=[0.0, 0.3, 0.5, 0.62, 1.0])
        for t, value in enumerate(x, start=1):
            cs.update(value)
            if t in (10, 40):
                for m, pinned in by_m.items():
                    want = pinned[0 if t == 10 else 1]
                    got = cs.e_values(m)[0]
                    assert got == want if np.isinf(want) else got == pytest.approx(want, rel=rel)


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="alpha"):
        BettingCS(alpha=1.5)
    with pytest.raises(ValueError, match="kind"):
        BettingCS(kind="median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lie in"):
        BettingCS().update(1.5)
    with pytest.raises(ValueError, match="grid"):
        BettingCS(grid=[0.5, 0.2])
    with pytest.raises(ValueError, match="not a grid point"):
        BettingCS(grid=[0.0, 0.5, 1.0]).test(0.3)


def test_e_bh_against_a_hand_count() -> None:
    # K = 4, alpha = 0.1: thresholds for k = 1..4 are 40, 20, 13.3, 10.
    # Sorted e: 50 (>= 40), 25 (>= 20), 12 (< 13.3), 11 (>= 10): k* = 4, all rejected.
    assert e_bh([12, 50, 11, 25], 0.1) == (0, 1, 2, 3)
    # 50, 25, 12, 1: k = 2 is the largest that passes.
    assert e_bh([12, 50, 1, 25], 0.1) == (1, 3)
    assert e_bh([1, 2, 3], 0.05) == ()
    assert bonferroni_alpha(0.05, 10) == pytest.approx(0.005, rel=4 * EPS)


def test_bonferroni_family_covers_simultaneously() -> None:
    """Ten pairs, each CS at alpha / 10, stopped when all exclude 0 or at n_max: all cover."""
    rng = np.random.default_rng(11)
    reps, k, n_max = 200, 10, 150
    deltas = np.linspace(-0.2, 0.2, k)
    cs = BettingCS(batch=reps * k, kind="difference", alpha=bonferroni_alpha(0.05, k),
                   grid=np.linspace(-1, 1, 41))  # fmt: skip
    truth = np.tile(deltas, reps)

    def draw(t: int) -> np.ndarray:
        up = rng.random(reps * k) < 0.3 + np.maximum(truth, 0)
        down = rng.random(reps * k) < 0.3 + np.maximum(-truth, 0)
        return up.astype(float) - down.astype(float)

    low, high, _ = run_until(cs, draw, lambda lo, hi, e: (lo > 0) | (hi < 0), n_max)
    mean_truth = truth  # E[up - down] = truth
    covered = ((low <= mean_truth) & (mean_truth <= high)).reshape(reps, k)
    assert covered.all(axis=1).mean() >= small_gate(reps)


# ---------------------------------------------------------------- the hard gates (2,000 reps)


@pytest.mark.long
def test_gate_iid_mean_2000() -> None:
    cov, early = iid_mean(reps=2000, mu=0.3, width=0.15, n_max=1500, seed=101)
    assert early > 0.5
    assert cov >= GATE


@pytest.mark.long
def test_gate_iid_difference_2000() -> None:
    cov, early = iid_difference(reps=2000, n_max=1500, seed=102)
    assert early > 0.1
    assert cov >= GATE


@pytest.mark.long
def test_gate_wor_difference_2000() -> None:
    cov, early = wor_difference(reps=2000, items=800, seed=103)
    assert early > 0.05
    assert cov >= GATE


@pytest.mark.long
def test_gate_wor_mean_2000() -> None:
    cov, early = wor_mean_narrow(reps=2000, items=800, width=0.08, seed=104)
    assert early > 0.5
    assert cov >= GATE
