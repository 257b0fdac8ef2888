import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.sage.theory import (
    closed_form_auroc,
    estimate_factors,
    factors,
    limit_k_infinity,
    reference_quality_shift,
    simulate_auroc,
    simulate_scores,
)

BASE = dict(mu1=0.6, mu0=0.4, sigma1=0.3, sigma0=0.3)

# Spec section 3, closed-form column (mu1 = 0.6, mu0 = 0.4, sigma1 = sigma0 = 0.3); the values
# follow from scipy.stats.norm.cdf((0.2 + d) / sqrt(0.18 * (1 + (k - 1) * rho) / k)).
SPEC_TABLE = [
    (dict(), 0.6813),
    (dict(delta1=0.05, delta0=-0.05), 0.7602),
    (dict(delta1=0.05, delta0=-0.05, k=5, rho=0.3), 0.8568),
    (dict(delta1=-0.05, delta0=0.05, k=5, rho=0.3), 0.6388),
]


@pytest.mark.parametrize(("extra", "expected"), SPEC_TABLE)
def test_closed_form_spec_table(extra, expected):
    assert closed_form_auroc(**BASE, **extra) == pytest.approx(expected, abs=1e-4)


def test_closed_form_independent_formula():
    # Phi of the binormal z computed directly with scipy
    z = (0.2 + 0.1) / math.sqrt(0.18 * (1 + 4 * 0.3) / 5)
    assert closed_form_auroc(**BASE, delta1=0.05, delta0=-0.05, k=5, rho=0.3) == pytest.approx(
        sps.norm.cdf(z), rel=1e-12
    )


def test_factors_multiply_to_z_sage():
    f = factors(**BASE, delta1=0.05, delta0=-0.05, k=5, rho=0.3)
    assert f.z_dir == pytest.approx(0.2 / math.sqrt(0.18), rel=1e-12)
    assert f.shift_factor == pytest.approx(1.5, rel=1e-12)
    assert f.averaging_factor == pytest.approx(math.sqrt(5 / 2.2), rel=1e-12)
    assert f.z_dir * f.shift_factor * f.averaging_factor == pytest.approx(f.z_sage, rel=1e-12)
    assert f.auroc_dir == pytest.approx(0.6813, abs=1e-4)
    assert "SAGE (reconstructed)" in f.summary()
    # the averaging factor saturates at 1 / sqrt(rho): 1.826 at rho = 0.3
    assert factors(**BASE, k=10**9, rho=0.3).averaging_factor == pytest.approx(1.8257, abs=1e-4)


def test_factors_equal_means_has_no_shift_factor():
    f = factors(0.5, 0.5, 0.3, 0.3, delta1=0.05, delta0=-0.05)
    assert math.isnan(f.shift_factor) and f.z_dir == 0.0
    assert f.auroc_sage == pytest.approx(sps.norm.cdf(0.1 / math.sqrt(0.18)), rel=1e-12)


SHIFTS = [(0.0, 0.0), (0.05, -0.05), (-0.05, 0.05), (0.1, 0.02)]


@pytest.mark.parametrize(
    ("k", "shift", "rho"), itertools.product((1, 2, 5, 10), SHIFTS, (0, 0.3, 0.7))
)
def test_simulated_matches_closed_form(k, shift, rho):
    # Monte-Carlo sd of the AUROC at 50,000 per class is about 0.0015-0.0025, so 0.01 is > 4 sd.
    d1, d0 = shift
    sim = simulate_auroc(**BASE, delta1=d1, delta0=d0, k=k, rho=rho, n_per_class=50_000, seed=k)
    assert sim == pytest.approx(
        closed_form_auroc(**BASE, delta1=d1, delta0=d0, k=k, rho=rho), abs=0.01
    )


@pytest.mark.slow
def test_spec_theory_check_full_grid():
    # Spec section 5.1: k in {1, 2, 5, 10, 50}, rho in {0, 0.3, 0.7}, q in {0, .25, .5, .75, 1},
    # 200k samples per class, |closed form - MC| <= 0.005. Good references separate by +0.1,
    # bad ones by -0.1, split evenly between the classes.
    worst = 0.0
    for k, rho, q in itertools.product((1, 2, 5, 10, 50), (0, 0.3, 0.7), (0, 0.25, 0.5, 0.75, 1)):
        d = reference_quality_shift(q, 0.1, -0.1)
        args = dict(**BASE, delta1=d / 2, delta0=-d / 2, k=k, rho=rho)
        sim = simulate_auroc(**args, n_per_class=200_000, seed=k * 100 + int(rho * 10) + int(q * 4))
        worst = max(worst, abs(sim - closed_form_auroc(**args)))
    assert worst <= 0.005


@pytest.mark.parametrize("rho", (0, 0.3, 0.7, 1))
@pytest.mark.parametrize("shift", (0.0, 0.02, 0.1, 0.5))
def test_non_decreasing_in_k_for_nonnegative_shift(rho, shift):
    values = [
        closed_form_auroc(**BASE, delta1=shift / 2, delta0=-shift / 2, k=k, rho=rho)
        for k in range(1, 60)
    ]
    assert all(b >= a for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("rho", (0.1, 0.3, 0.7))
@pytest.mark.parametrize(("d1", "d0"), ((0.05, -0.05), (-0.05, 0.05), (0.0, 0.0)))
def test_k_infinity_limit(rho, d1, d0):
    limit = limit_k_infinity(**BASE, delta1=d1, delta0=d0, rho=rho)
    f = factors(**BASE, delta1=d1, delta0=d0)
    assert limit == pytest.approx(
        sps.norm.cdf(f.z_dir * f.shift_factor / math.sqrt(rho)), rel=1e-12
    )
    assert closed_form_auroc(**BASE, delta1=d1, delta0=d0, k=10**8, rho=rho) == pytest.approx(
        limit, abs=1e-6
    )


def test_k_infinity_limit_without_correlation():
    assert limit_k_infinity(**BASE, rho=0) == 1.0
    # exactly representable means, so that the shifted gap is exactly 0
    assert limit_k_infinity(1.0, 0.5, 0.3, 0.3, delta1=-0.25, delta0=0.25, rho=0) == 0.5
    assert limit_k_infinity(**BASE, delta1=-0.3, rho=0) == 0.0


def test_reference_quality_shift():
    assert reference_quality_shift(1, 0.1, -0.1) == pytest.approx(0.1)
    assert reference_quality_shift(0.5, 0.1, -0.1) == pytest.approx(0.0)
    assert reference_quality_shift(0.25, 0.1, -0.1) < 0  # mostly bad references hurt
    with pytest.raises(ValueError, match="q must be"):
        reference_quality_shift(1.5, 0.1, -0.1)


def test_k1_reference_ignored_gives_direct_score():
    # rho = 1 and no shift: the one anchored score repeats the direct judgment
    s = simulate_scores(**BASE, delta1=0, delta0=0, k=1, rho=1, n_per_class=100, seed=0)
    np.testing.assert_allclose(s.per_ref[:, 0], s.direct, rtol=0, atol=1e-15)


def test_estimate_factors_recovers_simulated_parameters():
    truth = dict(mu1=0.6, mu0=0.4, sigma1=0.3, sigma0=0.25, delta1=0.05, delta0=-0.03)
    s = simulate_scores(**truth, k=5, rho=0.3, n_per_class=20_000, seed=5)
    est = estimate_factors(s.direct, s.per_ref, s.is_error)
    for name, value in truth.items():
        assert getattr(est, name) == pytest.approx(value, abs=0.01), name
    assert est.rho == pytest.approx(0.3, abs=0.03)
    assert (est.k, est.n_correct, est.n_error) == (5, 20_000, 20_000)
    assert est.factors.auroc_sage == pytest.approx(est.observed_auroc_sage, abs=0.02)
    assert est.factors.auroc_dir == pytest.approx(est.observed_auroc_dir, abs=0.02)
    assert est.factors.auroc_sage == pytest.approx(
        closed_form_auroc(**truth, k=5, rho=0.3), abs=0.02
    )
    assert "SAGE (reconstructed)" in est.summary()


def test_estimate_factors_k1_and_wrong_sign():
    s = simulate_scores(**BASE, delta1=-0.05, delta0=0.05, k=1, rho=0.5, n_per_class=5_000, seed=2)
    est = estimate_factors(s.direct, s.per_ref, s.is_error)
    assert math.isnan(est.rho) and est.factors.averaging_factor == 1.0
    assert est.factors.shift_factor < 1
    assert est.observed_auroc_sage < est.observed_auroc_dir
    assert est.factors.auroc_sage == pytest.approx(est.observed_auroc_sage, abs=0.02)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="rho"):
        closed_form_auroc(**BASE, rho=1.5)
    with pytest.raises(ValueError, match="k must"):
        closed_form_auroc(**BASE, k=0)
    with pytest.raises(ValueError, match="sigma"):
        closed_form_auroc(0.6, 0.4, 0, 0)
    with pytest.raises(ValueError, match="shapes"):
        estimate_factors(np.zeros(4), np.zeros(4), np.array([0, 0, 1, 1]))
    with pytest.raises(ValueError, match="two correct and two wrong"):
        estimate_factors(np.zeros(3), np.zeros((3, 2)), np.array([0, 0, 1]))
