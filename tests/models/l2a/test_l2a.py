"""The L2A layer, its caches and pruning: specs/l2a.md §5 checks 2, 3 and 6, and more."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from harness.kernels.sparse_global_attention_reference import sparse_global_attention_reference
from harness.models.l2a.inference import (
    L2ACache,
    decode,
    kv_cache_bytes,
    prune_global_layers,
    routing_rates,
)
from harness.models.l2a.model import (
    VARIANTS,
    L2AConfig,
    L2AModel,
    lambda_at,
    masked_dense_global,
    sparsity_regulariser,
)
from harness.models.l2a.recall import IGNORE, N_KEYS, VOCAB, parse, recall_batch, render

SMALL = dict(vocab=VOCAB, seq_len=48, d_model=32, n_layer=2, n_head=2, window=6)


def model_for(variant: str, seed: int = 0, **kw) -> L2AModel:
    torch.manual_seed(seed)
    return L2AModel(L2AConfig(attention=variant, **{**SMALL, **kw}))  # type: ignore[arg-type]


def randomise_router(model: L2AModel, seed: int = 1) -> None:
    """Router weights that route about half the tokens (zero-initialised routes all)."""
    gen = torch.Generator().manual_seed(seed)
    for block in model.blocks:
        if hasattr(block, "router"):
            block.router.weight.data = torch.randn(block.router.weight.shape, generator=gen)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("training", [False, True])
def test_check2_perturbing_token_j_changes_no_output_before_j(variant, training):
    model = model_for(variant)
    randomise_router(model)
    model.train(training)
    x = torch.randint(0, VOCAB, (2, 40), generator=torch.Generator().manual_seed(3))
    for j in (5, 20, 39):
        y = x.clone()
        y[:, j] = (y[:, j] + 1) % VOCAB
        torch.manual_seed(7)  # the same leakage coins for both forwards
        a, _ = model(x)
        torch.manual_seed(7)
        b, _ = model(y)
        assert torch.equal(a[:, :j], b[:, :j]), f"{variant}: output before {j} changed"
        assert not torch.allclose(a[:, j:], b[:, j:]), "the perturbation had no effect at all"


def test_swa_sees_exactly_the_last_w_keys():
    model = model_for("swa", n_layer=1).eval()
    x = torch.randint(0, VOCAB, (1, 40), generator=torch.Generator().manual_seed(4))
    w, i = model.cfg.window, 30
    base, _ = model(x)
    for j, inside in ((i - w, False), (i - w + 1, True), (i, True)):
        y = x.clone()
        y[0, j] = (y[0, j] + 1) % VOCAB
        out, _ = model(y)
        changed = not torch.allclose(base[0, i], out[0, i])
        assert changed == inside, f"key {j} for query {i} with W={w}"


@pytest.mark.parametrize("seq_len", [16, 64])
def test_check3_every_token_routed_at_initialisation(seq_len):
    model = model_for("l2a")
    x = torch.randint(0, VOCAB, (3, seq_len), generator=torch.Generator().manual_seed(5))
    _, routings = model(x)
    assert len(routings) == model.cfg.n_layer
    for r in routings:
        assert r.routed.all()
        assert torch.allclose(r.gate, torch.full_like(r.gate, 0.5))
    assert routing_rates(model, [x]) == (1.0, 1.0)
    assert float(sparsity_regulariser(routings)) == pytest.approx(0.25 * seq_len)  # R = T/4


def test_sparsity_regulariser_is_the_layer_mean_of_the_batch_mean_of_summed_squares():
    model = model_for("l2a")
    randomise_router(model)
    x = torch.randint(0, VOCAB, (4, 24), generator=torch.Generator().manual_seed(6))
    _, routings = model.eval()(x)
    by_hand = sum((r.gate**2).sum(1).mean() for r in routings) / len(routings)
    assert float(sparsity_regulariser(routings)) == pytest.approx(float(by_hand))
    assert float(sparsity_regulariser([])) == 0.0


def test_lambda_is_zero_in_warmup_then_ramps_linearly_to_its_value():
    total, lam = 100, 1e-5
    assert [lambda_at(s, total, lam) for s in range(10)] == [0.0] * 10
    ramp = [lambda_at(s, total, lam) for s in range(10, 100)]
    assert ramp[-1] == pytest.approx(lam)
    assert all(b > a for a, b in zip(ramp, ramp[1:], strict=False))
    assert ramp[44] == pytest.approx(lam * 45 / 90)


def _unrouted_router_grads(leakage: float, forwards: int) -> list[bool]:
    """Per (forward, layer): did some unrouted token get a non-zero router gradient?"""
    model = model_for("l2a", leakage=leakage)
    randomise_router(model)
    model.train()
    gen = torch.Generator().manual_seed(8)
    seen = []
    torch.manual_seed(9)
    for _ in range(forwards):
        x = torch.randint(0, VOCAB, (2, 24), generator=gen)
        logits, routings = model(x)
        for r in routings:
            r.gate.retain_grad()
        F.cross_entropy(logits.transpose(1, 2), x).backward()  # CE only: R would touch every g
        for r in routings:
            unrouted = ~r.routed
            assert unrouted.any() and r.routed.any(), "the test needs both kinds of token"
            grads = r.gate.grad[unrouted]
            seen.append(bool((grads != 0).any()))
            assert r.dense == seen[-1], "unrouted tokens get gradient exactly on dense steps"
        model.zero_grad(set_to_none=True)
    return seen


def test_check6_without_leakage_unrouted_router_gradients_are_exactly_zero():
    assert not any(_unrouted_router_grads(0.0, 30))


def test_check6_with_leakage_unrouted_tokens_get_gradient_on_about_a_tenth_of_steps():
    seen = _unrouted_router_grads(0.1, 200)  # 400 layer forwards: 40 expected, sd 6
    share = sum(seen) / len(seen)
    assert 0.05 <= share <= 0.16, share


def test_sparse_path_equals_the_gathered_reference_and_dense_path_differs_only_unrouted():
    gen = torch.Generator().manual_seed(10)
    q, k, v = (torch.randn(2, 2, 30, 16, generator=gen, dtype=torch.float64) for _ in range(3))
    routed = torch.rand(2, 30, generator=gen) < 0.3
    got = masked_dense_global(q, k, v, routed)
    want = sparse_global_attention_reference(q, k, v, routed)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    assert got.transpose(1, 2)[~routed].abs().max() == 0  # unrouted rows exactly zero


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoding_through_the_caches_equals_the_full_forward(variant):
    model = model_for(variant).eval()
    randomise_router(model)
    x = torch.randint(0, VOCAB, (3, 30), generator=torch.Generator().manual_seed(11))
    want, routings = model(x)
    cache = L2ACache()
    got = decode(model, x, cache)
    torch.testing.assert_close(got.logits, want, rtol=1e-4, atol=1e-5)
    if variant == "l2a":
        assert torch.equal(got.routed, torch.stack([r.routed for r in routings], dim=-1))
        assert got.routed.any() and not got.routed.all()
    for layer in cache.layers:
        assert layer.window_k.shape[2] == model.cfg.window  # trimmed to W
        if variant == "swa":
            assert layer.global_k is None
        else:
            assert layer.global_k.shape[2] == 30  # every token, routed or not
    kept = 0 if variant == "swa" else model.cfg.n_layer
    assert cache.nbytes() == kv_cache_bytes(model.cfg, 30, kept, batch=3).model


def test_pruning_drops_rarely_routing_layers_and_their_global_cache():
    model = model_for("l2a").eval()
    randomise_router(model, seed=2)  # the two layers route different shares of tokens
    x = torch.randint(0, VOCAB, (4, 30), generator=torch.Generator().manual_seed(12))
    rates = routing_rates(model, [x])
    threshold = (min(rates) + max(rates)) / 2
    assert min(rates) < threshold < max(rates)
    result = prune_global_layers(model, rates, threshold)
    low = rates.index(min(rates))
    assert result.pruned == (low,)
    assert not model.blocks[low].global_enabled and model.blocks[1 - low].global_enabled
    want, _ = model(x)
    cache = L2ACache()
    got = decode(model, x, cache)
    torch.testing.assert_close(got.logits, want, rtol=1e-4, atol=1e-5)
    assert cache.layers[low].global_k is None
    kv = kv_cache_bytes(model.cfg, 30, 1, batch=4)
    assert cache.nbytes() == kv.model
    assert kv.saved == pytest.approx(1 - (2 * 6 + 30) / (2 * 30))
    with pytest.raises(ValueError, match="routing rates"):
        prune_global_layers(model, (0.5,), 0.1)


def test_recall_batch_layout():
    b = recall_batch(16, 64, 8, torch.Generator().manual_seed(13))
    assert b.tokens.shape == (16, 64)
    assert b.query[:, -8:].all() and not b.query[:, :-8].any()
    assert (b.targets[~b.query] == IGNORE).all()
    for row, target in zip(b.tokens.tolist(), b.targets.tolist(), strict=True):
        first = row[:32]
        keys = [t for t in first if t < N_KEYS]
        assert len(keys) == len(set(keys)) == 8  # 8 distinct keys, all in the first half
        assert all(t >= N_KEYS + 24 for t in row[32:56])  # filler until the queries
        for pos in range(56, 64):
            s = first.index(row[pos])
            assert s % 2 == 0 and first[s + 1] == target[pos]  # the value after the key
    with pytest.raises(ValueError, match="pairs"):
        recall_batch(1, 16, 8, torch.Generator())


def test_render_and_parse_round_trip_and_bad_names_are_named():
    tokens = list(range(VOCAB))
    assert parse(render(tokens)) == tokens
    with pytest.raises(ValueError, match="x9"):
        parse("k1 x9 v2")


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(attention="sparse"), "attention"),
        (dict(d_model=30, n_head=4), "d_model"),
        (dict(window=0), "window"),
        (dict(tau=0.0), "tau"),
        (dict(leakage=1.5), "leakage"),
    ],
)
def test_bad_config_says_which_setting(kw, match):
    with pytest.raises(ValueError, match=match):
        L2AConfig(**kw)
