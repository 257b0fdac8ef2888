import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize

from harness.suites.k_parity.schedules import (
    MaskSchedule,
    draw_mask,
    make_schedule,
    md_loss,
    optimal_t1,
    signal_probability,
    window_signal,
)

# Spec k-parity.md §3: k, optimal t1 of U[0, t1], P̄_S there, P_S at 1/(k+1), P̄_S for U[0, 1].
TABLE = [
    (2, 0.5375, 0.3449, 0.4444, 0.2500),
    (3, 0.4156, 0.3318, 0.4219, 0.2000),
    (4, 0.3381, 0.3245, 0.4096, 0.1667),
    (5, 0.2848, 0.3198, 0.4019, 0.1429),
    (6, 0.2459, 0.3165, 0.3966, 0.1250),
    (8, 0.1931, 0.3123, 0.3897, 0.1000),
]


# ---- the §3 table ----------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "t1", "pbar_opt", "ps_peak", "pbar_unif"), TABLE)
def test_spec_table(k, t1, pbar_opt, ps_peak, pbar_unif):
    got = optimal_t1(k)
    assert got == pytest.approx(t1, abs=1e-4)
    assert window_signal(0.0, got, k) == pytest.approx(pbar_opt, abs=1e-4)
    assert signal_probability(1 / (k + 1), k) == pytest.approx(ps_peak, abs=1e-4)
    assert window_signal(0.0, 1.0, k) == pytest.approx(pbar_unif, abs=1e-4)
    assert window_signal(0.0, 1.0, k) == pytest.approx(1 / (k + 2), abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 8, 20])
def test_optimal_t1_matches_independent_maximisation(k):
    # Independent route: average P_S by numerical quadrature, maximise with a bounded search.
    # scipy.integrate.quad(P_S, 0, t1)[0] / t1, scipy.optimize.minimize_scalar(method="bounded")
    def neg_avg(t1):
        return -integrate.quad(lambda s: signal_probability(s, k), 0, t1)[0] / t1

    res = optimize.minimize_scalar(
        neg_avg, bounds=(1e-6, 1.0), method="bounded", options={"xatol": 1e-10}
    )
    assert optimal_t1(k) == pytest.approx(res.x, abs=1e-5)


@pytest.mark.parametrize("k", [2, 3, 6])
@pytest.mark.parametrize(("t0", "t1"), [(0.0, 0.3), (0.1, 0.2), (0.45, 0.55), (0.2, 1.0)])
def test_window_signal_matches_quadrature(k, t0, t1):
    # scipy.integrate.quad of P_S over [t0, t1], divided by the width
    want = integrate.quad(lambda s: signal_probability(s, k), t0, t1)[0] / (t1 - t0)
    assert window_signal(t0, t1, k) == pytest.approx(want, abs=1e-12)


def test_width_01_windows_at_k6():
    want = [0.234, 0.387, 0.310, 0.186, 0.089, 0.033]
    got = [window_signal(i / 10, (i + 1) / 10, 6) for i in range(6)]
    assert got == pytest.approx(want, abs=1e-3)


def test_zero_width_window_is_ps():
    assert window_signal(0.3, 0.3, 4) == signal_probability(0.3, 4)


def test_signal_probability_array_and_errors():
    t = np.array([0.0, 0.25, 1.0])
    got = signal_probability(t, 3)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, [0.0, 4 * 0.25 * 0.75**3, 0.0])
    assert isinstance(signal_probability(0.25, 3), float)
    with pytest.raises(ValueError, match="t must lie in"):
        signal_probability(1.5, 3)
    with pytest.raises(ValueError, match="k must be"):
        signal_probability(0.5, 0)
    with pytest.raises(ValueError, match="0 <= t0 <= t1 <= 1"):
        window_signal(0.5, 0.4, 3)
    with pytest.raises(ValueError, match="k must be"):
        optimal_t1(0)


# ---- P_S by Monte Carlo ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [3, 6])
@pytest.mark.parametrize("t", [0.1, 0.25, 0.5])
def test_signal_probability_monte_carlo(k, t):
    # 1e6 masks over the k+1 positions of S'; binomial sd <= 0.0005, so ±0.002 is >= 4 sd.
    rng = np.random.default_rng(1000 * k + int(100 * t))
    masks = rng.random((10**6, k + 1)) < t
    share = float(np.mean(masks.sum(axis=1) == 1))
    assert abs(share - signal_probability(t, k)) <= 0.002


def test_draw_mask_rate_per_row():
    g = torch.Generator().manual_seed(0)
    t = torch.tensor([0.0, 0.1, 0.5, 1.0])
    m = draw_mask(t, 200_000, g)
    assert m.shape == (4, 200_000) and m.dtype == torch.bool
    rate = m.float().mean(dim=1)
    assert rate[0] == 0.0 and rate[3] == 1.0
    # sd of the rate at t=0.5 is about 0.0011
    assert rate[1:3].tolist() == pytest.approx([0.1, 0.5], abs=0.005)


# ---- md_loss ---------------------------------------------------------------------------------


def _hand_ce(logits, targets, masked):
    """Per-sequence sum of masked cross-entropy, computed with math on Python floats."""
    sums = []
    for b in range(len(targets)):
        s = 0.0
        for i in range(len(targets[b])):
            if masked[b][i]:
                z = logits[b][i]
                lse = math.log(sum(math.exp(v) for v in z))
                s += lse - z[targets[b][i]]
        sums.append(s)
    return sums


def _batch():
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(3, 5, 2, generator=g, dtype=torch.float64)
    targets = torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0], [0, 0, 1, 1, 1]])
    masked = torch.tensor(
        [
            [True, False, False, True, False],
            [False, True, True, True, False],
            [True, True, True, True, True],
        ]
    )
    t = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)
    return logits, targets, masked, t


def test_md_loss_inv_t_is_per_sample():
    logits, targets, masked, t = _batch()
    sums = _hand_ce(logits.tolist(), targets.tolist(), masked.tolist())
    T = targets.shape[1]
    want_w = sum(s / tb / T for s, tb in zip(sums, t.tolist(), strict=True)) / len(sums)
    want_u = sum(s / T for s in sums) / len(sums)
    # applying the batch-mean weight instead of the per-sample one would give this
    wrong = (sum(1 / tb for tb in t.tolist()) / len(sums)) * want_u

    inv = md_loss(logits, targets, masked, t, MaskSchedule("window", 0.0, 1.0, "inv_t"))
    plain = md_loss(logits, targets, masked, t, MaskSchedule("window", 0.0, 1.0, "none"))
    assert inv.item() == pytest.approx(want_w, rel=1e-12)
    assert plain.item() == pytest.approx(want_u, rel=1e-12)
    assert abs(inv.item() - plain.item()) > 0.1
    assert abs(inv.item() - wrong) > 0.01


def test_md_loss_empty_mask_contributes_zero():
    logits, targets, masked, t = _batch()
    masked[0] = False
    t[0] = 0.0  # a t = 0 draw masks nothing; its clamped 1/t weight must not matter
    sched = MaskSchedule("uniform", 0.0, 1.0, "inv_t")
    logits.requires_grad_(True)
    loss = md_loss(logits, targets, masked, t, sched)
    rest = md_loss(logits[1:], targets[1:], masked[1:], t[1:], sched)
    # the empty row is kept in the mean (not resampled): loss = (0 + 2·rest) / 3
    assert loss.item() == pytest.approx(rest.item() * 2 / 3, rel=1e-12)
    loss.backward()
    assert torch.all(logits.grad[0] == 0)

    only_empty = md_loss(logits[:1], targets[:1], masked[:1], t[:1], sched)
    assert only_empty.item() == 0.0


def test_md_loss_ignores_unmasked_positions_even_if_infinite():
    logits, targets, masked, t = _batch()
    logits[0, 1] = torch.tensor([math.inf, -math.inf], dtype=torch.float64)  # unmasked, CE = inf
    sched = MaskSchedule("uniform", 0.0, 1.0, "none")
    assert math.isfinite(md_loss(logits, targets, masked, t, sched).item())


def test_md_loss_shape_errors():
    logits, targets, masked, t = _batch()
    sched = make_schedule("uniform", k=3)
    with pytest.raises(ValueError, match="shape"):
        md_loss(logits, targets, masked, t[:2], sched)
    with pytest.raises(ValueError, match="need logits"):
        md_loss(logits[:, :4], targets, masked, t, sched)
    with pytest.raises(ValueError, match="bool"):
        md_loss(logits, targets, masked.long(), t, sched)


# ---- MaskSchedule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "lo", "hi"),
    [
        ({"kind": "uniform"}, 0.0, 1.0),
        ({"kind": "window", "a": 0.45, "b": 0.55}, 0.45, 0.55),
        ({"kind": "optimal"}, 0.0, 0.4156),
    ],
)
def test_sample_t_stays_in_range(kwargs, lo, hi):
    sched = make_schedule(k=3, **kwargs)
    assert (sched.t0, sched.t1) == pytest.approx((lo, hi), abs=1e-4)
    g = torch.Generator().manual_seed(1)
    t = sched.sample_t(100_000, g)
    assert t.shape == (100_000,)
    assert t.min().item() >= sched.t0 and t.max().item() <= sched.t1
    assert t.mean().item() == pytest.approx((sched.t0 + sched.t1) / 2, abs=0.005)
    # it spans the range, not one point of it
    assert t.max().item() - t.min().item() > 0.95 * (sched.t1 - sched.t0)


def test_sample_t_fixed_is_constant():
    sched = make_schedule("fixed", k=3, t=0.25)
    assert sched.t0 == sched.t1 == 0.25
    t = sched.sample_t(1000, torch.Generator().manual_seed(0))
    assert torch.all(t == 0.25)


def test_sample_t_is_reproducible():
    sched = make_schedule("uniform", k=3)
    a = sched.sample_t(10, torch.Generator().manual_seed(3))
    b = sched.sample_t(10, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_loss_weight():
    t = torch.tensor([0.0, 0.5, 0.25])
    inv = make_schedule("uniform", k=3, weighting="inv_t").loss_weight(t)
    assert inv.tolist() == pytest.approx([1e6, 2.0, 4.0])
    assert torch.all(make_schedule("uniform", k=3).loss_weight(t) == 1)


def test_describe():
    assert make_schedule("optimal", k=3).describe() == "optimal U[0, 0.4156], unweighted"
    assert (
        make_schedule("window", k=4, a=0.45, b=0.55, weighting="inv_t").describe()
        == "window U[0.45, 0.55], weighted by 1/t"
    )
    assert make_schedule("fixed", k=4, t=0.2).describe() == "fixed t=0.2, unweighted"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "cosine"}, r"valid kinds: \('uniform', 'window', 'fixed', 'optimal'\)"),
        ({"kind": "uniform", "weighting": "1/t"}, r"valid weightings: \('none', 'inv_t'\)"),
        ({"kind": "window", "a": 0.5, "b": 0.5}, "0 <= a < b <= 1"),
        ({"kind": "window", "a": -0.1, "b": 0.5}, "0 <= a < b <= 1"),
        ({"kind": "window", "a": 0.5, "b": 1.2}, "0 <= a < b <= 1"),
        ({"kind": "window", "a": 0.1}, "0 <= a < b <= 1"),
        ({"kind": "fixed", "t": 0.0}, "0 < t <= 1"),
        ({"kind": "fixed", "t": 1.5}, "0 < t <= 1"),
        ({"kind": "fixed"}, "0 < t <= 1"),
        ({"kind": "uniform", "t": 0.3}, "does not take"),
        ({"kind": "optimal", "a": 0.0, "b": 0.3}, "does not take"),
        ({"kind": "uniform", "k": 0}, "k must be"),
    ],
)
def test_make_schedule_errors(kwargs, match):
    kwargs = {"k": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_schedule(**kwargs)


def test_direct_construction_is_validated():
    with pytest.raises(ValueError, match="valid kinds"):
        MaskSchedule("linear", 0.0, 1.0, "none")
    with pytest.raises(ValueError, match="0 < t0 == t1 <= 1"):
        MaskSchedule("fixed", 0.2, 0.3, "none")
    with pytest.raises(ValueError, match="0 <= t0 < t1 <= 1"):
        MaskSchedule("window", 0.6, 0.3, "none")
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_schedule("uniform", k=3).t0 = 0.5
