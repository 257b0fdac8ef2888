"""`local/`: a checkpoint from disk, micro-batching, equality with a bare loop, log-probs."""

import asyncio

import pytest
import torch
from inspect_ai.model import GenerateConfig, get_model
from transformers import GPT2Config, GPT2LMHeadModel

from harness.errors import HarnessUsageError
from harness.eval import EvalRequest, run
from harness.models.batch_generate import GenRequest, generate_batch
from harness.models.local import _loaded, resolve_checkpoint
from harness.models.micro_batcher import MicroBatcher
from harness.models.tiny_arith import build_tokenizer


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(0)
    tok = build_tokenizer()
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok), n_positions=32, n_embd=32, n_layer=1, n_head=2,
            eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        )
    )  # fmt: skip
    path = tmp_path / "ckpt"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    yield path
    _loaded.clear()


def test_eval_through_local_batches_and_matches_bare_loop(checkpoint, tmp_path):
    ok, rows, _ = run(
        EvalRequest(
            suite="arith",
            models=(f"local/{checkpoint}",),
            task_args={"n": 40, "difficulty": 2},
            model_args={"batch_size": 16},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    assert ok and rows[0].n == 40 and rows[0].errors == 0
    # other tests in this process may have loaded models too: take this checkpoint's
    [(model, tok, batcher)] = [v for k, v in _loaded.items() if k[0] == str(checkpoint.resolve())]
    assert max(batcher.batch_sizes) > 1, "requests were never batched"
    assert sum(batcher.batch_sizes) == 40

    from inspect_ai.log import read_eval_log

    log = read_eval_log(rows[0].log)
    by_prompt = {s.input: s.output.completion for s in log.samples}
    prompts = sorted(by_prompt)[:8]
    bare = generate_batch(model, tok, [GenRequest(p, max_new_tokens=5) for p in prompts])
    assert [r.text for r in bare] == [by_prompt[p] for p in prompts]
    assert any(r.text for r in bare), "random weights should still emit some characters"


def test_logprobs_and_usage(checkpoint):
    model = get_model(f"local/{checkpoint}")
    config = GenerateConfig(max_tokens=4, logprobs=True, top_logprobs=3)
    out = asyncio.run(model.generate("12+34=", config=config))
    lps = out.choices[0].logprobs.content
    assert len(lps) == out.usage.output_tokens > 0
    assert out.usage.input_tokens == len("12+34=")
    for lp in lps:
        assert lp.logprob <= 0
        tops = [t.logprob for t in lp.top_logprobs]
        assert tops == sorted(tops, reverse=True) and lp.logprob <= tops[0] + 1e-6


def test_unknown_local_model_is_usage_error(tmp_path):
    with pytest.raises(HarnessUsageError, match="not a built-in model"):
        resolve_checkpoint(str(tmp_path / "nothing"))


def test_micro_batcher_isolates_a_failing_request():
    def run(batch):
        if "bad" in batch:
            raise RuntimeError("bad input")
        return [x.upper() for x in batch]

    batcher = MicroBatcher(run, key=lambda _: 0, max_batch=8, gather_s=0.05)

    async def main():
        return await asyncio.gather(
            *(batcher.submit(x) for x in ["a", "b", "bad", "c"]), return_exceptions=True
        )

    results = asyncio.run(main())
    assert results[:2] == ["A", "B"] and results[3] == "C"
    assert isinstance(results[2], RuntimeError)


def test_a_prompt_longer_than_the_context_fails_alone_or_keeps_its_tail(checkpoint):
    # n_positions is 32: 30 characters plus 4 new tokens do not fit, "12+34=" does
    long_prompt = "1" * 24 + "12+34="
    model = get_model(f"local/{checkpoint}", batch_size=8)
    config = GenerateConfig(max_tokens=4)

    async def both():
        return await asyncio.gather(
            model.generate(long_prompt, config=config),
            model.generate("12+34=", config=config),
            return_exceptions=True,
        )

    bad, good = asyncio.run(both())
    assert isinstance(bad, ValueError) and "context of 32" in str(bad)
    assert good.usage.input_tokens == 6
    kept = get_model(f"local/{checkpoint}", truncate="left", memoize=False)
    out = asyncio.run(kept.generate(long_prompt, config=config))
    assert out.usage.input_tokens == 28 and out.metadata == {"truncated_prompt_tokens": 2}
    with pytest.raises(HarnessUsageError, match="truncate must be"):
        get_model(f"local/{checkpoint}", truncate="right", memoize=False)


def test_inspects_model_info_lookup_loads_no_checkpoint(monkeypatch):
    import harness.models.l2a.local_model as l2a_local
    import harness.models.team.local_model as team_local

    def refuse(*args, **kwargs):
        raise AssertionError("the model-info lookup loaded a checkpoint")

    monkeypatch.setattr(l2a_local.L2ARecallLocal, "__init__", refuse)
    monkeypatch.setattr(team_local.TeamMoeLocal, "__init__", refuse)
    from inspect_ai.model._model_info import MODEL_INFO_LOOKUP_API_KEY

    from harness.models.local import MODEL_INFO_LOOKUP

    assert MODEL_INFO_LOOKUP == MODEL_INFO_LOOKUP_API_KEY  # inspect's private constant
    for name in ("local/l2a-recall", "local/team-moe"):
        model = get_model(name, api_key=MODEL_INFO_LOOKUP)
        assert model.api.own is None


BUILT_INS = ("tiny-arith", "tiny-arith-small", "smollm2-135m", "team-moe", "l2a-recall")


def test_built_in_local_models_are_registered():
    from harness import registry

    assert set(BUILT_INS) <= set(registry.names("local-model"))
    with pytest.raises(HarnessUsageError, match="did you mean local/team-moe"):
        resolve_checkpoint("team-mo")


def test_a_built_ins_factory_gets_the_m_args_it_names_typed(monkeypatch):
    import harness.models.team.local_model as team_local

    seen = {}

    def record(self, seed: int = 0, decoding: str = "vanilla", preset: str = "quick") -> None:
        seen.update(seed=seed, decoding=decoding, preset=preset)

    monkeypatch.setattr(team_local.TeamMoeLocal, "__init__", record)
    model = get_model("local/team-moe", seed="3", decoding="team", batch_size=8, memoize=False)
    assert seen == {"seed": 3, "decoding": "team", "preset": "quick"}
    assert isinstance(model.api.own, team_local.TeamMoeLocal)
    with pytest.raises(HarnessUsageError, match="-M seed must be an int, got 'x'"):
        get_model("local/team-moe", seed="x", memoize=False)
    with pytest.raises(HarnessUsageError, match="no -M argument 'variant'.*seed, decoding, preset"):
        get_model("local/team-moe", variant="l2a", memoize=False)


def test_a_checkpoint_model_has_no_suite_arguments(checkpoint):
    with pytest.raises(
        HarnessUsageError,
        match="no -M argument 'decoding'; its -M arguments are: "
        "batch_size, device, dtype, max_tokens, truncate$",
    ):
        get_model(f"local/{checkpoint}", decoding="team", memoize=False)
    with pytest.raises(HarnessUsageError, match="answers by itself"):
        resolve_checkpoint("team-moe")


def test_a_checkpoint_missing_a_weight_is_refused_not_run_from_a_random_init(checkpoint):
    from safetensors.torch import load_file, save_file

    from harness.models.local import load_causal_lm

    assert load_causal_lm(checkpoint) is not None  # its tied head is not missing
    weights = load_file(checkpoint / "model.safetensors")
    del weights["transformer.ln_f.weight"]
    save_file(weights, checkpoint / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(HarnessUsageError, match=r"transformer\.ln_f\.weight.*refused"):
        load_causal_lm(checkpoint)
    with pytest.raises(HarnessUsageError, match="random init"):
        asyncio.run(get_model(f"local/{checkpoint}").generate("12+34="))
