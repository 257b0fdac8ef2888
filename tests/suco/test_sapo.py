"""R_suff and the SAPO reward: the spec's vectors."""

import math

import pytest

from harness.suco.sapo import sapo_reward, sufficiency_reward


@pytest.mark.parametrize(
    ("length", "t_star", "correct", "expected"),
    [
        (13, 10, True, -0.5),
        (13, 10, False, -0.5),
        (12, 10, True, 0.0),
        (8, 10, False, -0.5),
        (8, 10, True, 0.0),
        (12, math.inf, False, -0.5),
        (12, math.inf, True, 0.0),
        (10, 10, False, 0.0),  # at t*: neither over nor under
    ],
)
def test_spec_vectors(length, t_star, correct, expected):
    assert sufficiency_reward(length, t_star, correct, eps=2) == expected


def test_both_penalties_cannot_stack_but_weights_apply():
    assert sufficiency_reward(20, 3, False, lam_over=0.7) == pytest.approx(-0.7)
    assert sufficiency_reward(1, 3, False, lam_under=0.25) == pytest.approx(-0.25)
    with pytest.raises(ValueError):
        sufficiency_reward(3, float("nan"), True)


def test_total_reward_parts():
    r = sapo_reward(correct=True, format_ok=True, length=13, t_star=10)
    assert (r.total, r.r_correct, r.r_format, r.r_suff) == (0.5, 1.0, 0.0, -0.5)
    r = sapo_reward(correct=False, format_ok=False, length=8, t_star=10, beta=2.0)
    assert r.total == pytest.approx(0 - 1 - 2 * 0.5)
    assert "R = -2.000" in r.summary()
