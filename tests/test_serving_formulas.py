"""UniBoost's formulas (spec §5.1) and the M/G/1 check (spec §5.2)."""

import math

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.suites.serving.boost import (
    ALPHA,
    FIRST,
    GammaAda,
    GammaAdaConfig,
    boost,
    priority,
    step_gamma,
    target_gamma,
)
from harness.suites.serving.mg1 import poisson_jobs, serve

# spec §3: b_γ in seconds at α = 64 µs/token; the spec prints 4 decimals
TABLE = {
    1: (7.3544, 5.0547, 2.7807, 1.4878, 0.7493),
    10: (0.5055, 0.2781, 0.0749, 0.0080, 0.0002),
    100: (0.0278, 0.0075, 0.0, 0.0, 0.0),
}
TOKENS = (10, 100, 1_000, 4_000, 10_000)


@pytest.mark.parametrize("gamma", sorted(TABLE))
def test_boost_table_to_1e4(gamma):
    got = [boost(ALPHA * t, gamma) for t in TOKENS]
    # 5e-5: the table is rounded to 4 decimals; the formula itself is exact to ~1e-15
    assert got == pytest.approx(TABLE[gamma], abs=5e-5)


def test_boost_is_decreasing_and_convex_in_w():
    w = np.linspace(1e-4, 2.0, 400)
    b = np.array([boost(float(x), 10.0) for x in w])
    assert np.all(np.diff(b) < 0)
    assert np.all(np.diff(b, 2) > 0)


def test_ordering_crossover():
    phi_a = priority(0.0, ALPHA * 4000, 10.0)
    assert phi_a == pytest.approx(-0.00805, abs=5e-6)
    assert priority(0.49, ALPHA * 10, 10.0) == pytest.approx(-0.0155, abs=5e-5)
    assert priority(0.49, ALPHA * 10, 10.0) < phi_a  # B first
    assert priority(0.50, ALPHA * 10, 10.0) == pytest.approx(-0.0055, abs=5e-5)
    assert priority(0.50, ALPHA * 10, 10.0) > phi_a  # A first
    # the crossover: a_B = b(10 tokens) - b(4000 tokens) = 0.49742 s; the spec's 0.4975 is
    # the difference of its rounded table entries (0.5055 - 0.0080), hence 1e-4
    crossover = boost(ALPHA * 10, 10.0) - boost(ALPHA * 4000, 10.0)
    assert crossover == pytest.approx(0.4975, abs=1e-4)
    assert (
        priority(crossover - 1e-6, ALPHA * 10, 10.0)
        < phi_a
        < priority(crossover + 1e-6, ALPHA * 10, 10.0)
    )


def test_stable_form_at_the_extremes():
    eps = np.finfo(float).eps
    tiny = boost(1e-12, 1.0)  # γw = 1e-12: ln(1e12) + γw/2, no cancellation
    assert tiny == pytest.approx(math.log(1e12), rel=10 * eps)
    large = boost(50.0, 1.0)  # γw = 50: e^-50, not 0 and not an overflow
    assert large == pytest.approx(math.exp(-50.0), rel=10 * eps)
    assert boost(1e300, 1e300) == 0.0  # e^{-1e600} underflows to 0, never overflows
    assert math.isfinite(boost(1e-300, 1e-300))


def test_non_positive_work_goes_first():
    assert boost(0.0, 10.0) == FIRST == 1e9
    assert boost(-1.0, 10.0) == 1e9
    with pytest.raises(ValueError):
        boost(1.0, 0.0)


def test_gamma_ada_update_arithmetic():
    c = GammaAdaConfig()
    assert target_gamma(1.0, c) == 200.0  # r = 1: γ_max
    assert step_gamma(10.0, 1.0, c) == pytest.approx(10 + 0.3 * (200 - 10))  # 67
    assert step_gamma(10.0, 1.0, c) == pytest.approx(67.0)
    assert target_gamma(2.0, c) == pytest.approx(40.0)
    assert target_gamma(0.5, c) == 200.0  # r < 1 counts as a flat tail
    assert step_gamma(1.0, 100.0, c) == 1.0  # clamped at γ_min (target 0.5)


def test_gamma_ada_waits_for_200_samples_and_updates_every_5_s():
    ada = GammaAda(GammaAdaConfig())
    for _ in range(199):
        ada.record(1.0)
    assert not ada.tick(5.0) and ada.gamma == 10.0 and not ada.history
    ada.record(1.0)
    assert ada.tick(10.0)  # due at 10 s; the one at 5 s passed without enough samples
    assert ada.gamma == pytest.approx(67.0)  # every latency equal: r = 1
    assert [u.time for u in ada.history] == [10.0]
    assert not ada.converged()  # fewer than 10 updates


def test_gamma_ada_converges_on_a_fixed_ratio():
    ada = GammaAda(GammaAdaConfig())
    rng = np.random.default_rng(0)
    for x in rng.exponential(1.0, 2000):  # exponential: r = ln(100)/ln(20) = 1.537
        ada.record(float(x))
    for t in range(1, 60):
        ada.tick(5.0 * t)
    assert ada.converged()
    assert ada.gamma == pytest.approx(target_gamma(ada.history[-1].ratio, ada.config), rel=1e-3)


def test_bad_controller_constants_are_one_line():
    with pytest.raises(HarnessUsageError):
        GammaAdaConfig(gamma0=500.0)


def _instance() -> tuple[np.ndarray, np.ndarray]:
    """1,000 jobs: gaps >= 0.01, sizes >= 0.01 on a grid whose neighbours differ by 0.69%."""
    rng = np.random.default_rng(7)
    sizes = 0.01 * np.exp(np.log(1000.0) * np.arange(1000) / 1000)  # 0.01 .. 10
    sizes = rng.permutation(sizes)
    arrivals = np.cumsum(0.01 + rng.exponential(3.0, 1000))
    return arrivals, sizes


def test_large_gamma_is_exactly_fcfs_and_small_gamma_exactly_sjf():
    a, s = _instance()
    fcfs = serve(a, s, "fcfs")
    sjf = serve(a, s, "sjf")
    assert np.array_equal(fcfs.order, np.arange(1000))
    assert np.array_equal(serve(a, s, "boost", 1e3).order, fcfs.order)
    assert np.array_equal(serve(a, s, "boost", 1e-6).order, sjf.order)
    assert not np.array_equal(sjf.order, fcfs.order)  # jobs did wait together
    # every job's start is when the server freed or it arrived, never earlier
    assert np.all(sjf.start >= a - 1e-12)


def _mg1_check(seed: int) -> None:
    """Spec §5.2: γ-Boost at its best γ in {0.1, 0.3, 1, 3} beats min(FCFS, SJF) P99.

    Load 0.8, Exp(1) sizes, 200k jobs, non-preemptive. FCFS's P99 must land near the spec's
    23.1-23.6 band (22.6-24.1: our seeds are not the spec's) and γ = 20 must reproduce FCFS
    within 0.01 on P99 and on the mean.
    """
    rng = np.random.default_rng(seed)
    a, s = poisson_jobs(200_000, 0.8, rng.exponential(1.0, 200_000), rng)
    fcfs, sjf = serve(a, s, "fcfs"), serve(a, s, "sjf")
    assert 22.6 <= fcfs.percentile(99) <= 24.1
    assert fcfs.response.mean() == pytest.approx(5.0, abs=0.3)
    assert sjf.response.mean() == pytest.approx(2.9, abs=0.2)
    best = min(serve(a, s, "boost", g).percentile(99) for g in (0.1, 0.3, 1.0, 3.0))
    assert best <= min(fcfs.percentile(99), sjf.percentile(99)), seed
    near = serve(a, s, "boost", 20.0)
    assert abs(near.percentile(99) - fcfs.percentile(99)) < 0.01
    assert abs(near.response.mean() - fcfs.response.mean()) < 0.01


def test_mg1_check_one_seed():
    _mg1_check(0)


@pytest.mark.long
def test_mg1_check_three_seeds():
    for seed in range(3):
        _mg1_check(seed)
