"""Rogan-Gladen under prior shift and judge shift (specs/calibrated-judge.md §3 and §5 item 4)."""

import numpy as np
import pytest

from harness.stats._judge_calibration import rogan_gladen
from harness.stats._ppi import ppi_mean

Q0, Q1 = 0.7, 0.9
N_TEST, N_LAB, REPS = 20_000, 2_000, 300


def simulate(theta_c, theta_t, q1_test, seed):
    """RG and PPI estimates over REPS replications; labels from the calibration domain."""
    rng = np.random.default_rng(seed)
    rg, ppi = [], []
    for _ in range(REPS):
        z_lab = rng.binomial(1, theta_c, N_LAB)
        zh_lab = np.where(z_lab == 1, rng.binomial(1, Q1, N_LAB), rng.binomial(1, 1 - Q0, N_LAB))
        z_t = rng.binomial(1, theta_t, N_TEST)
        zh_t = np.where(z_t == 1, rng.binomial(1, q1_test, N_TEST), rng.binomial(1, 1 - Q0, N_TEST))
        m0, m1 = int((z_lab == 0).sum()), int(z_lab.sum())
        q0_hat = float(((zh_lab == 0) & (z_lab == 0)).sum() / m0)
        q1_hat = float(((zh_lab == 1) & (z_lab == 1)).sum() / m1)
        rg.append(rogan_gladen(zh_t.mean(), N_TEST, q0_hat, q1_hat, m0, m1).estimate)
        ppi.append(ppi_mean(z_lab, zh_lab, zh_t).estimate)
    return float(np.mean(rg)), float(np.mean(ppi))


def test_prior_shift_rogan_gladen_unbiased_ppi_biased():
    # θ_c = 0.5, θ_t = 0.8: RG stays at 0.8; PPI goes to θ_c + J(θ_t - θ_c) = 0.68
    rg, ppi = simulate(0.5, 0.8, Q1, seed=11)
    assert rg == pytest.approx(0.8, abs=0.01)
    assert ppi == pytest.approx(0.5 + (Q0 + Q1 - 1) * 0.3, abs=0.01)
    assert ppi - 0.8 == pytest.approx((0.5 - 0.8) * (2 - Q0 - Q1), abs=0.01)


def test_judge_shift_breaks_both_as_predicted():
    # q1 drops to 0.8 on the test set only, θ = 0.6 in both domains
    theta, q1_test = 0.6, 0.8
    rg, ppi = simulate(theta, theta, q1_test, seed=12)
    p_t = theta * q1_test + (1 - theta) * (1 - Q0)
    assert rg == pytest.approx((p_t + Q0 - 1) / (Q0 + Q1 - 1), abs=0.01)  # 0.833 θ = 0.500
    assert ppi == pytest.approx(theta * (1 + q1_test - Q1), abs=0.01)  # 0.540
