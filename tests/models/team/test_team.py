"""TEAM on the tiny block-diffusion MoE: the spec's acceptance checks 1-4 and the training."""

import pytest
import torch

from harness.models.team.decode import VARIANTS, TeamRules, generate
from harness.models.team.model import BlockDiffusionMoE, MoeConfig, MoeControl, MoeFFN, MoeStats
from harness.models.team.tasks import MASK, SEP, eval_prompts, training_batch
from harness.models.team.train import TrainConfig, block_mask_batch, load_or_train, train

SMALL = MoeConfig(d_model=32, n_layer=2, n_head=4, n_expert=8, d_expert=32)
OFF = TeamRules(speculation=False, caching=False, limited=False)


@pytest.fixture(scope="module")
def model() -> BlockDiffusionMoE:
    torch.manual_seed(0)
    return train(TrainConfig(seed=0, steps=40, model=SMALL))[0]


def test_block_masking_noises_one_answer_block_per_row():
    g = torch.Generator().manual_seed(0)
    seqs, plens = training_batch(g, 64)
    inputs, masked, t = block_mask_batch(seqs, plens, 8, 0.02, g)
    pos = torch.arange(seqs.shape[1])
    assert not (masked & (pos[None] < plens[:, None])).any()  # prompt tokens never masked
    blocks = [set((pos[row] // 8).tolist()) for row in masked]
    assert all(len(b) <= 1 for b in blocks) and sum(map(len, blocks)) > 32
    assert ((t >= 0.02) & (t <= 1)).all() and torch.equal(inputs[masked], seqs[masked] * 0 + MASK)
    assert torch.equal(inputs[~masked], seqs[~masked])


def test_training_is_deterministic_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    torch.set_num_threads(1)
    cfg = TrainConfig(seed=3, steps=5, model=SMALL)
    a, sa = load_or_train(cfg)
    b, sb = load_or_train(cfg)
    assert not sa["cached"] and sb["cached"]
    c = train(cfg)[0]
    for x, y, z in zip(a.state_dict().values(), b.state_dict().values(), c.state_dict().values(),
                       strict=True):  # fmt: skip
        assert torch.equal(x, y) and torch.equal(x, z)


def test_check1_everything_off_equals_vanilla_on_100_prompts(model):
    for ex in eval_prompts(1, 100):
        a, sa = generate(model, ex.prompt, None)
        b, sb = generate(model, ex.prompt, OFF)
        assert a == b
        assert (sa.forwards, sa.tokens, sa.experts) == (sb.forwards, sb.tokens, sb.experts)


def test_check2_candidates_are_isolated(model):
    prompt = eval_prompts(0, 1)[0].prompt
    n_full = len(prompt) // 8
    cache = model.prefill(torch.tensor(prompt[: n_full * 8]))
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 10, (32,), generator=g)
    tokens[::3] = MASK
    positions = torch.arange(n_full * 8, n_full * 8 + 8).repeat(4)
    groups = torch.arange(4).repeat_interleave(8)
    with torch.no_grad():
        base, _, _ = model.rows(tokens, positions, groups, cache)
        changed = tokens.clone()
        changed[16:24] = torch.randint(0, 10, (8,), generator=g)  # candidate 2 only
        other, _, _ = model.rows(changed, positions, groups, cache)
        alone, _, _ = model.rows(tokens[:8], positions[:8], groups[:8], cache)
    keep = groups != 2
    assert not torch.equal(base[~keep], other[~keep])  # candidate 2 did change
    torch.testing.assert_close(base[keep], other[keep], rtol=0, atol=1e-5)
    torch.testing.assert_close(base[:8], alone, rtol=0, atol=1e-5)  # same as a lone forward


def test_check3_cold_rows_stay_inside_necessary():
    torch.manual_seed(0)
    moe = MoeFFN(MoeConfig(d_model=16, n_expert=8, top_k=2, d_expert=16)).eval()
    x = torch.randn(40, 16)
    cold = torch.zeros(40, dtype=torch.bool)
    cold[::4] = True
    stats = MoeStats()
    probs, ids, _ = moe.route(x)
    necessary = set(ids[~cold].flatten().tolist())
    calls = []
    orig = moe._limit

    def spy(*args):
        out = orig(*args)
        calls.append(out)
        return out

    moe._limit = spy
    with torch.no_grad():
        moe(x, MoeControl(cold=cold), stats)
    lids, lw = calls[0]
    used = set(lids[cold][lw[cold] > 0].tolist())
    assert used <= necessary and stats.cold_violations == 0
    assert torch.allclose(lw[cold].sum(-1), torch.ones(int(cold.sum())))


def test_check3_no_violations_while_decoding(model):
    cold = 0
    for ex in eval_prompts(2, 30):
        _, stats = generate(model, ex.prompt, VARIANTS["team"])
        assert stats.cold_violations == 0
        cold += stats.cold_rows
    assert cold > 0, "no cold row in 30 prompts: the rule was never exercised"


def test_check4_cached_rows_call_no_expert():
    torch.manual_seed(0)
    moe = MoeFFN(MoeConfig(d_model=16, n_expert=8, top_k=2, d_expert=16)).eval()
    x = torch.randn(12, 16)
    cached = torch.tensor([True, False] * 6)
    stored = torch.randn(12, 16)
    stats = MoeStats()
    with torch.no_grad():
        y = moe(x, MoeControl(cached=cached, stored=stored), stats)
        full = moe(x)
    assert stats.rows == 6 and stats.calls == 12  # only the 6 live rows were routed, top-2
    assert torch.equal(y[cached], stored[cached])
    torch.testing.assert_close(y[~cached], full[~cached])


def test_check4_a_token_is_cached_exactly_one_step_after_it_is_unmasked(model):
    followed = 0
    for ex in eval_prompts(4, 20):
        _, stats = generate(model, ex.prompt, VARIANTS["team"], trace=True)
        for now, nxt in zip(stats.trace, stats.trace[1:], strict=False):
            # unmasked in the step before `now`: recomputed in `now`, not cached
            assert not set(now["cached"]) & set(now["unmasked_before"])
            if nxt["block_start"] == now["block_start"]:
                # ... and cached from the step after (a decoded token never turns back to MASK)
                assert set(now["unmasked_before"]) <= set(nxt["cached"])
                followed += bool(now["unmasked_before"])
    assert followed > 0


def test_team_accepts_more_tokens_per_forward(model):
    v = [generate(model, ex.prompt, None)[1] for ex in eval_prompts(5, 20)]
    t = [generate(model, ex.prompt, VARIANTS["team"])[1] for ex in eval_prompts(5, 20)]
    assert sum(s.tokens for s in t) / sum(s.forwards for s in t) > sum(s.tokens for s in v) / sum(
        s.forwards for s in v
    )
    assert all(s.tokens >= 1 for s in t)


def test_prompt_ends_with_sep():
    assert all(ex.prompt[-1] == SEP for ex in eval_prompts(0, 30))


def test_local_team_moe_decodes_a_prompt(tmp_path, monkeypatch):
    import asyncio

    from inspect_ai.model import GenerateConfig, get_model

    from harness.models.team.local_model import parse_prompt

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(
        "harness.models.team.config.PRESETS",
        {
            "tiny": {
                "steps": 3,
                "d_model": 32,
                "n_layer": 1,
                "n_expert": 4,
                "d_expert": 16,
                "n_test": 2,
            }
        },
    )
    model = get_model("local/team-moe", config=GenerateConfig(), preset="tiny", decoding="team")
    out = asyncio.run(model.generate("R345>"))
    assert set(out.completion) <= set("0123456789+>RSA <eos><pad><mask>")
    assert out.metadata["decoding"]["tpf"] > 0 and out.usage.input_tokens == 5
    assert list((tmp_path / "team").glob("*.pt"))
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        parse_prompt("reverse 345")
