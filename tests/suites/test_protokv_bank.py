"""ProtoKV's bank and the baselines: the unit vectors of specs/protokv.md §3 and §5 checks 1-2."""

import math

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.suites.protokv import (
    BankConfig,
    HeavyHitters,
    ProtoBank,
    ProtoKVCache,
    SinkWindow,
    SlidingWindow,
    UniformThinning,
    budget_split,
    log_mass_bias,
)
from harness.suites.protokv.bank import ema, idle_decay
from harness.suites.protokv.pq import subspaces, top_codes

TOL = 1e-9  # spec §5 check 1; every value below is a handful of float64 operations


def _bank(k=1, p=1, d=2, **over):
    return ProtoBank(BankConfig(k, modes=2, groups=1, codes=2, **over), tokens=p, dim=d)


def test_ema_unit_vector_through_an_absorb():
    assert np.allclose(ema(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.05), [0.95, 0.05],
                       atol=TOL, rtol=0)  # fmt: skip
    bank = _bank()
    bank.absorb(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]]), t=0)  # seeds the slot
    bank.absorb(np.array([[0.0, 1.0]]), np.array([[0.0, 1.0]]), t=1)  # joins it
    assert np.abs(bank.keys[0, 0] - [0.95, 0.05]).max() <= TOL
    assert np.abs(bank.values[0, 0] - [0.95, 0.05]).max() <= TOL
    assert bank.counts[0] == 2 and bank.anchors[0] == 1


def test_idle_decay_and_deactivation():
    assert idle_decay(10, 0.05) == 9 and idle_decay(1, 0.05) == 0
    bank = _bank(k=2)
    frame = np.array([[1.0, 0.0]])
    bank.absorb(frame, frame, t=0)
    bank.absorb(-frame, -frame, t=200)  # a second, far slot, not idle
    bank.counts[0] = 10
    bank.maintain(t=130, newest=None)  # slot 0 idle (130 − 0 > 120): 10 -> 9
    assert bank.counts[0] == 9 and bank.active[0]
    bank.counts[0] = 1
    bank.maintain(t=131, newest=None)  # 1 -> 0 < n_min: deactivated, nothing to re-seed from
    assert bank.counts[0] == 0 and not bank.active[0]
    newest = np.array([[0.0, 3.0]])
    bank.maintain(t=132, newest=(newest, newest))  # recycled from the newest near frame
    assert bank.active[0] and bank.counts[0] == 1 and bank.anchors[0] == 132
    assert np.array_equal(bank.keys[0], newest)


def test_merge_is_mass_weighted_and_counts_add():
    bank = _bank(k=2, p=1, d=1)
    bank.absorb(np.array([[0.0]]), np.array([[0.0]]), t=0)
    bank.absorb(np.array([[4.0]]), np.array([[4.0]]), t=1)
    bank.counts[:] = [3, 1]
    bank.hist_k[0, 0, 0] = [2, 0]
    bank.hist_k[1, 0, 0] = [1, 1]
    bank.merge(0, 1)
    assert abs(bank.keys[0, 0, 0] - 1.0) <= TOL and bank.counts[0] == 4
    assert bank.hist_k[0, 0, 0].tolist() == [3, 1] and not bank.active[1]


def test_near_identical_slots_merge_in_maintenance_and_far_ones_do_not():
    bank = _bank(k=3, p=1, d=2)
    a, b = np.array([[1.0, 0.0]]), np.array([[1.0, 0.1]])  # ‖a − b‖/√2 = 0.07 < 0.20
    bank.absorb(a, a, t=0)
    bank.absorb(b, b, t=1)
    bank.absorb(-a, -a, t=2)
    bank.maintain(t=3, newest=(a * 5, a * 5))
    assert bank.counts.tolist() == [2, 1, 1]  # 0 and 1 merged; 1 re-seeded from the newest
    assert np.array_equal(bank.keys[1], a * 5) and np.array_equal(bank.keys[2], -a)


def test_log_mass_bias_unit_vector():
    assert abs(log_mass_bias([20])[0] - math.log(20)) <= TOL
    assert round(float(log_mass_bias([20])[0]), 4) == 2.9957
    assert log_mass_bias([0.0, 1.0]).tolist() == [0.0, 0.0]  # log max(n, 1)


@pytest.mark.parametrize(("m", "s", "k", "w"), [(8, 2, 3, 2), (32, 8, 3, 8)])
def test_budget_split_unit_vectors(m, s, k, w):
    b = budget_split(m, s)
    assert (b.prototypes, b.window, b.prototypes * b.modes + b.window) == (k, w, m)


def test_budget_split_refuses_the_shipped_script_and_m_below_s():
    with pytest.raises(HarnessUsageError, match="M >= S \\+ 1 = 9"):
        budget_split(3, 8)  # the shipped script's M = 3 with the default S = 8
    with pytest.raises(HarnessUsageError, match="M >= S"):
        budget_split(8, 8)
    assert budget_split(9, 8) == budget_split(9, 8, 1)  # W = 1: the smallest legal split


def test_top_s_decoding_unit_vector():
    top = top_codes(np.array([[6, 2, 0], [0, 5, 3]]), 2, beam=8, eps=1e-5)
    assert top.tuples == ((0, 1), (0, 2))
    # the ε smoothing moves each probability by at most about C·ε / Σh = 3e-5 / 8
    assert top.probs == pytest.approx((0.46875, 0.28125), abs=1e-5)


def test_subspaces_are_the_nearest_divisor():
    assert subspaces(32, 8) == 8 and subspaces(30, 8) == 10 and subspaces(7, 4) == 7
    assert subspaces(32, 5) == 4  # 4 and 8 are 1 and 3 away


def _random_bank(rng, k=3, p=2, d=8, s=2):
    bank = ProtoBank(BankConfig(k, modes=s, groups=2, codes=4, codebook_frames=4), p, d)
    for t in range(12):
        f = rng.standard_normal((p, d))
        bank.absorb(f, f, t)
    bank.counts[:] = rng.integers(1, 51, size=k)
    return bank


def test_log_mass_bias_equals_adding_log_n_to_each_pseudo_token_logit():
    # spec §5 check 1: a random bank with n_k in [1, 50]; the bias, applied once per
    # pseudo-token, gives each prototype-k token the logit + log n_k, which is also the
    # softmax weight of n_k copies of that token: the mass is counted exactly.
    rng = np.random.default_rng(0)
    for _ in range(20):
        bank = _random_bank(rng)
        pseudo = bank.synthesise()
        k, s, p = 3, 2, 2
        q = rng.standard_normal(8)
        logits = pseudo.keys @ q  # (K·S·P,)
        owner = np.repeat(np.arange(k), s * p)
        assert np.array_equal(pseudo.bias, np.log(bank.counts)[owner])
        biased = np.exp(logits + pseudo.bias)
        copies = np.exp(logits) * bank.counts[owner]  # n_k copies of each pseudo-token
        tol = 64 * np.finfo(float).eps  # a softmax over 12 terms
        assert np.abs(biased / biased.sum() - copies / copies.sum()).max() <= tol
        assert not bank.synthesise(bias=False).bias.any()


def _stream(rng, frames, p=4, d=32):
    return rng.standard_normal((frames, p, d)) / math.sqrt(d)


def _proto(m=8, s=2, p=4, d=32, g=4, c=8):
    b = budget_split(m, s)
    return ProtoKVCache(b, BankConfig(b.prototypes, s, g, c), p, d)


def test_exposed_length_is_m_times_p_after_every_frame_past_m():
    rng = np.random.default_rng(1)
    cache = _proto()
    for t, frame in enumerate(_stream(rng, 100)):
        cache.observe(frame, frame, t)
        seen = t + 1
        size = cache.exposed().size
        assert size == (min(seen, 8) * 4 if seen <= 8 else 8 * 4), (seen, size)
        if seen > 8 and seen % 10 == 0:
            views = cache.views()
            assert {v.size for v in views.values()} == {32}


def test_constant_footprint_after_100_and_2000_frames():
    # spec §5 check 2: the persistent state's bytes and the exposed KV count do not grow
    rng = np.random.default_rng(2)
    cache = _proto()
    frames = _stream(rng, 2000)
    sizes = {}
    for t, frame in enumerate(frames):
        cache.observe(frame, frame, t)
        if t + 1 in (100, 2000):
            sizes[t + 1] = (cache.bank.state_bytes(), cache.exposed().size)
    assert sizes[100] == sizes[2000] and sizes[100][1] == 32
    assert cache.bank.fitted and not cache.bank._warmup  # the warm-up buffer is gone


def test_sliding_window_and_sinks_keep_the_right_tokens():
    frames = np.arange(10 * 2 * 1, dtype=float).reshape(10, 2, 1)  # token value = its index
    window, sink = SlidingWindow(3), SinkWindow(6, sink=2)
    for t, f in enumerate(frames):
        window.observe(f, f, t)
        sink.observe(f, f, t)
    assert window.exposed().keys[:, 0].tolist() == [14, 15, 16, 17, 18, 19]
    assert sink.exposed().keys[:, 0].tolist() == [0, 1, 16, 17, 18, 19]


def test_uniform_thinning_is_the_authors_floor_selection():
    cache = UniformThinning(4)
    for t in range(3):
        f = np.arange(2 * t, 2 * t + 2, dtype=float)[:, None]
        cache.observe(f, f, t)
    # 4 kept, then 6 tokens: ⌊i·6/4⌋ = 0, 1, 3, 4 (the newest, 5, is dropped)
    assert cache.exposed().keys[:, 0].tolist() == [0, 1, 3, 4]


def test_h2o_keeps_recent_half_and_the_heaviest_of_the_rest():
    cache = HeavyHitters(4, heavy=2)
    hub = np.array([[3.0, 0.0]])  # every later token attends mostly to this one
    cache.observe(np.r_[hub, [[0.0, 0.1]]], np.r_[hub, [[0.0, 0.1]]], 0)
    for t in range(1, 5):
        f = np.array([[1.0, 0.0], [0.0, -0.1 * t]])
        cache.observe(f, f, t)
    kept = cache.exposed().keys
    assert len(kept) == 4 and any((kept == hub[0]).all(1))
    assert (kept[-2:] == np.array([[1.0, 0.0], [0.0, -0.4]])).all()  # the 2 most recent
