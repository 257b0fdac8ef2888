"""The band operator and the clipped policy loss (harness.models.methods.band_clip).

Reference values: specs/bandpo.md §3 (derived there with Brent root-finding); here the roots are
also found independently with scipy's brentq on the closed form of g.
"""

import math

import numpy as np
import pytest
import torch
from scipy.optimize import brentq

from harness.models.methods.band_clip import (
    TOL,
    ClipRule,
    band_roots,
    band_rule,
    binary_divergence,
    closed_form_band,
    dcpo_rule,
    fixed_rule,
    grpo_advantages,
    policy_loss,
    ratio_bounds,
    seq_mean_token_mean,
)

P = [0.001, 0.01, 0.05, 0.08, 0.2, 0.5, 0.9, 0.99]
# specs/bandpo.md §3, delta 0.05, upper capped at 10: (low, up) per p
TABLE = {
    "kl": [(0.0, 10), (0.0025, 7.8098), (0.1620, 2.9812), (0.2617, 2.4106), (0.4759, 1.7177),
           (0.6915, 1.3085), (0.8666, 1.0764), (0.9312, 1.0101)],
    "tv": [(0, 10), (0, 6.0), (0, 2.0), (0.3750, 1.6250), (0.75, 1.25), (0.90, 1.10),
           (0.9444, 1.0556), (0.9495, 1.0101)],
    "chi2": [(0, 8.0675), (0, 3.2249), (0.0253, 1.9747), (0.2417, 1.7583), (0.5528, 1.4472),
             (0.7764, 1.2236), (0.9255, 1.0745), (0.9775, 1.0101)],
    "dcpo": [(0.5, 10), (0.5, 5.0), (0.5, 2.5616), (0.5, 2.1583), (0.5, 1.6180), (0.5, 1.3062),
             (0.7687, 1.1872), (0.7973, 1.1723)],
}  # fmt: skip
# the table is printed to 4 decimals: a correct value is within half a unit of the last place
TABLE_TOL = 0.5e-4 + 1e-12


def _rule(name: str) -> ClipRule:
    return dcpo_rule() if name == "dcpo" else band_rule(name, 0.05, u_max=10.0)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_the_specs_table_to_1e_4(name):
    bounds = ratio_bounds(torch.tensor(P, dtype=torch.float64).log(), _rule(name))
    want = np.array(TABLE[name])
    np.testing.assert_allclose(bounds.lower.numpy(), want[:, 0], rtol=0, atol=TABLE_TOL)
    np.testing.assert_allclose(bounds.upper.numpy(), want[:, 1], rtol=0, atol=TABLE_TOL)


def test_uncapped_kl_upper_bound_at_p_0_001_and_the_edge_limits():
    (up,) = band_roots(torch.tensor([0.001]), "kl", 0.05).upper.tolist()
    assert abs(up - 53.55) <= 0.005  # printed to 2 decimals
    # p -> 1: the lower bound tends to e^-delta (KL), 1 - delta (TV), 1 (chi2)
    near = torch.tensor([1 - 1e-9], dtype=torch.float64).log()
    for div, want in (("kl", math.exp(-0.05)), ("tv", 0.95), ("chi2", 1.0)):
        b = ratio_bounds(near, band_rule(div, 0.05))
        assert float(b.upper) == 1.0 and float(b.lower) == pytest.approx(want, abs=1e-15)
    # and the solver's value just inside the edge approaches the same limit
    just_inside = band_roots(torch.tensor([1 - 1e-5], dtype=torch.float64), "kl", 0.05)
    assert float(just_inside.lower) == pytest.approx(math.exp(-0.05), abs=1e-3)


def test_p_near_zero_saturates_to_zero_and_one_over_p():
    tiny = torch.tensor([1e-8, 1e-300], dtype=torch.float64)
    for div in ("kl", "tv", "chi2"):
        b = ratio_bounds(tiny.log(), band_rule(div, 0.05, u_max=1e400))
        assert b.lower.tolist() == [0.0, 0.0]
        assert b.upper.tolist() == pytest.approx((1 / tiny).tolist(), rel=1e-12)
        capped = ratio_bounds(tiny.log(), band_rule(div, 0.05))
        assert capped.upper.tolist() == [10.0, 10.0]


def test_fixed_clip_allows_much_less_than_the_kl_band_at_p_0_08():
    p = torch.tensor([0.08], dtype=torch.float64)
    kl = ratio_bounds(p.log(), band_rule("kl", 0.05))
    fixed = ratio_bounds(p.log(), fixed_rule())
    assert float((fixed.upper - 1) * p) == pytest.approx(0.016, abs=1e-12)
    assert float((kl.upper - 1) * p) == pytest.approx(0.113, abs=0.5e-3)  # spec: +0.113


GRID = torch.cat([torch.logspace(-5, -1, 40), torch.linspace(0.1, 0.9, 41),
                  1 - torch.logspace(-5, -1, 40)]).double()  # fmt: skip


@pytest.mark.parametrize("div", ["tv", "chi2"])
@pytest.mark.parametrize("delta", [0.02, 0.05, 0.1])
def test_closed_forms_agree_with_bisection_to_1e_6(div, delta):
    solved = band_roots(GRID, div, delta)
    exact = closed_form_band(GRID, div, delta)
    # the bisection returns the midpoint of a bracket of width <= TOL around the root
    assert float((solved.lower - exact.lower).abs().max()) <= 1e-6
    assert float((solved.upper - exact.upper).abs().max()) <= 1e-6


def _g(div: str, p: float, r: float) -> float:
    if div == "kl":
        return -p * math.log(r) + (1 - p) * math.log((1 - p) / (1 - r * p))
    if div == "tv":
        return p * abs(r - 1)
    return p * (r - 1) ** 2 / (1 - p)


@pytest.mark.parametrize("div", ["kl", "tv", "chi2"])
def test_bisection_matches_brent_on_the_closed_form_of_g(div):
    ps = [0.003, 0.02, 0.08, 0.3, 0.5, 0.77, 0.95, 0.999]
    got = band_roots(torch.tensor(ps, dtype=torch.float64), div, 0.05)
    for i, p in enumerate(ps):
        top = 1 / p
        up = (
            top
            if _g(div, p, top * (1 - 1e-15)) <= 0.05
            else brentq(lambda r, p=p: _g(div, p, r) - 0.05, 1.0, top * (1 - 1e-15), xtol=1e-14)
        )
        low = 0.0 if _g(div, p, 1e-300) <= 0.05 else brentq(
            lambda r, p=p: _g(div, p, r) - 0.05, 1e-300, 1.0, xtol=1e-14)  # fmt: skip
        assert abs(float(got.upper[i]) - up) <= TOL / 2 + 1e-12, (p, up)
        assert abs(float(got.lower[i]) - low) <= TOL / 2 + 1e-12, (p, low)


@pytest.mark.parametrize("div", ["kl", "tv", "chi2"])
@pytest.mark.parametrize("delta", [0.02, 0.05, 0.1])
def test_symmetry_identity(div, delta):
    """r_low(p) = [1 - (1 - p) r_up(1 - p)] / p.

    Each root is within TOL/2 of the truth, so the right side carries (1 - p)/p times that
    error: the check is to 1e-6 where p >= 1/2 (the factor is at most 1) and to the
    propagated bound below.
    """
    p = GRID[(GRID > 1e-4) & (GRID < 1 - 1e-4)]
    here = band_roots(p, div, delta)
    mirror = band_roots(1 - p, div, delta)
    right = (1 - (1 - p) * mirror.upper) / p
    bound = TOL / 2 * (1 + (1 - p) / p) + 1e-12
    assert bool(((here.lower - right).abs() <= bound).all())
    half = p >= 0.5
    assert float((here.lower - right)[half].abs().max()) <= 1e-6


@pytest.mark.parametrize("div", ["kl", "tv", "chi2"])
def test_g_is_zero_at_one_and_monotone_on_each_side(div):
    for p in (0.001, 0.05, 0.3, 0.5, 0.9, 0.999):
        pt = torch.tensor(p, dtype=torch.float64)
        left = torch.linspace(0, 1, 2001, dtype=torch.float64)
        right = torch.linspace(1, 1 / p, 2001, dtype=torch.float64)
        g_left = binary_divergence(div, pt, left)
        g_right = binary_divergence(div, pt, right)
        assert float(binary_divergence(div, pt, torch.tensor(1.0, dtype=torch.float64))) == 0
        # non-increasing, then non-decreasing (rounding allows one ulp of the values)
        slack = 4 * torch.finfo(torch.float64).eps * g_left.abs().max()
        assert bool((g_left[1:] - g_left[:-1] <= slack).all())
        assert bool((g_right[1:] - g_right[:-1] >= -slack).all())


@pytest.mark.parametrize("div", ["kl", "tv", "chi2"])
def test_band_narrows_as_p_grows_and_widens_with_delta(div):
    p = torch.linspace(0.01, 0.99, 99, dtype=torch.float64)
    small, big = band_roots(p, div, 0.02), band_roots(p, div, 0.1)
    assert bool((small.upper[1:] <= small.upper[:-1] + 1e-9).all())
    assert bool((small.lower[1:] >= small.lower[:-1] - 1e-9).all())
    assert bool((big.upper >= small.upper).all() and (big.lower <= small.lower).all())


def test_upper_never_exceeds_one_over_p():
    gen = torch.Generator().manual_seed(0)
    edges = torch.tensor([0.0, -1e-12, -700.0, -1000.0], dtype=torch.float64)
    logp = torch.cat([-torch.rand(2000, generator=gen, dtype=torch.float64) * 30, edges])
    p = logp.clamp(-700, 0).exp()
    for div in ("kl", "tv", "chi2"):
        for relax in (False, True):
            b = ratio_bounds(logp, band_rule(div, 0.1, relax=relax, u_max=1e300))
            limit = 1 / p if not relax else torch.maximum(1 / p, torch.tensor(1.2))
            assert bool((b.upper <= limit * (1 + 1e-12)).all())
            assert bool((b.lower >= 0).all() and (b.lower <= 1).all() and (b.upper >= 1).all())


def test_relax_widens_to_at_least_the_fixed_window():
    logp = torch.tensor([0.9, 0.5, 0.99], dtype=torch.float64).log()
    plain = ratio_bounds(logp, band_rule("kl", 0.05))
    relaxed = ratio_bounds(logp, band_rule("kl", 0.05, relax=True))
    assert (
        relaxed.lower.tolist()
        == torch.minimum(plain.lower, torch.tensor(0.8, dtype=torch.float64)).tolist()
    )
    assert (
        relaxed.upper.tolist()
        == torch.maximum(plain.upper, torch.tensor(1.2, dtype=torch.float64)).tolist()
    )
    assert float(relaxed.upper[0]) == pytest.approx(1.2) and float(plain.upper[0]) < 1.1


def test_float32_input_gives_float32_bounds_of_the_float64_solution():
    p = torch.tensor(P)
    b32 = ratio_bounds(p.log(), band_rule("kl"))
    b64 = ratio_bounds(p.double().log(), band_rule("kl"))
    assert b32.upper.dtype == torch.float32
    # rounding the input's log to float32 moves p by at most one ulp of log p; the band moves
    # by far less than 1e-5 for these p
    assert float((b32.upper.double() - b64.upper).abs().max()) < 1e-5


def test_no_gradient_reaches_the_bounds():
    old = torch.tensor([[-0.1, -2.0, -4.0]], dtype=torch.float64, requires_grad=True)
    new = (old.detach() + torch.tensor([[0.5, 1.5, -0.7]], dtype=torch.float64)).requires_grad_()
    adv = torch.tensor([[1.0, 1.0, -1.0]], dtype=torch.float64)
    for rule in (band_rule("kl"), band_rule("chi2"), dcpo_rule(), fixed_rule()):
        bounds = ratio_bounds(old, rule)
        assert not bounds.lower.requires_grad and bounds.lower.grad_fn is None
        assert not bounds.upper.requires_grad and bounds.upper.grad_fn is None
        out = policy_loss(new, old, adv, torch.ones_like(adv), rule=rule)
        assert not out.bounds.upper.requires_grad
        old.grad = None
        new.grad = None
        out.loss.backward()
        assert old.grad is None  # the old policy (and the bounds made from it) are constants
        assert new.grad is not None


def test_loss_values_gradients_dual_clip_and_aggregation():
    rule = fixed_rule(0.2, 0.2)
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], dtype=torch.float64))
    ratio = torch.tensor([[1.5, 0.9, 30.0], [0.5, 1.1, 1.0]], dtype=torch.float64)
    new = (old + ratio.log()).requires_grad_()
    adv = torch.tensor([[1.0, 1.0, -1.0], [-2.0, -2.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    out = policy_loss(new, old, adv, mask, rule=rule)
    # per token: max(-A r, -A clip(r)); A < 0: min(that, -A c), c = 10
    want = torch.tensor([[-1.2, -0.9, 10.0], [1.6, 2.2, 0.0]], dtype=torch.float64)
    expected = ((want[0].mean()) + (want[1, :2].mean())) / 2  # seq-mean-token-mean
    assert float(out.loss.detach()) == pytest.approx(float(expected), abs=1e-12)
    assert out.clipped.tolist() == [[True, False, False], [True, False, False]]
    assert out.clip_fraction == pytest.approx(2 / 5)
    out.loss.backward()
    grad = new.grad
    # clipped tokens and the dual-clipped one get no gradient; others -A r / (2 * len)
    assert grad[0, 0] == 0 and grad[0, 2] == 0 and grad[1, 0] == 0 and grad[1, 2] == 0
    assert float(grad[0, 1]) == pytest.approx(-1.0 * 0.9 / 3 / 2, abs=1e-12)
    assert float(grad[1, 1]) == pytest.approx(2.0 * 1.1 / 2 / 2, abs=1e-12)


def test_kl_penalty_is_k3_with_its_clamps():
    logp = torch.tensor([[-1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([[-1.5, 30.0]], dtype=torch.float64)
    out = policy_loss(logp, logp.detach(), torch.zeros_like(logp), torch.ones_like(logp),
                      rule=band_rule(), ref_logprob=ref, kl_coef=0.5)  # fmt: skip
    x = -0.5
    want = ((math.exp(x) - x - 1) + 10.0) / 2  # the second x clamps to 20, k3 to 10
    assert float(out.kl) == pytest.approx(want, abs=1e-12)
    assert float(out.loss.detach()) == pytest.approx(0.5 * want, abs=1e-12)


def test_seq_mean_token_mean_skips_empty_rows():
    values = torch.tensor([[1.0, 3.0], [5.0, 7.0], [100.0, 100.0]])
    mask = torch.tensor([[1, 1], [1, 0], [0, 0]])
    assert float(seq_mean_token_mean(values, mask)) == pytest.approx((2.0 + 5.0) / 2)


def test_grpo_advantages_use_the_unbiased_std_and_a_group_of_one_has_mean_0_std_1():
    r = torch.tensor([[1.0, -1.0, -1.0, -1.0]])
    a = grpo_advantages(r)
    std = float(torch.tensor([1.0, -1.0, -1.0, -1.0]).std(unbiased=True))
    assert a[0, 0].item() == pytest.approx(1.5 / (std + 1e-6))
    one = grpo_advantages(torch.tensor([[0.7], [-1.0]], dtype=torch.float64))
    assert one.tolist() == [[0.7 / (1 + 1e-6)], [-1.0 / (1 + 1e-6)]]
    assert grpo_advantages(torch.ones(1, 4)).abs().max().item() == 0.0


def test_bad_rules_and_shapes_are_refused():
    with pytest.raises(ValueError, match="divergence"):
        band_rule("hellinger")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delta"):
        band_rule("kl", 0.0)
    with pytest.raises(ValueError, match="kind"):
        ClipRule("other")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        policy_loss(torch.zeros(2, 3), torch.zeros(2, 2), torch.zeros(2, 3), torch.ones(2, 3),
                    rule=fixed_rule())  # fmt: skip
