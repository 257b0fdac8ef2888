"""`suco/` early exit with a fake reasoner whose answer probability grows sentence by sentence."""

from __future__ import annotations

import math

import anyio
import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    get_model,
    modelapi,
)

from harness.errors import HarnessUsageError
from harness.eval import EvalRequest, build_models, run

SENTENCES = ["Step one. ", "Step two. ", "Step three. ", "Step four. ", "Step five."]
# S after t sentences: the answer is two tokens, each with this probability
P_AFTER = [0.1, 0.3, 0.5, 0.8, 0.85, 0.9]


class FakeReasoner(ModelAPI):
    """Two sentences per reasoning chunk; probes answer "46" with P_AFTER[t] as S."""

    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **_):
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input, tools, tool_choice, config):
        last = input[-1].text
        assert input[-1].role == "assistant" and last.startswith("<think>")
        if "</think>" in last:  # a probe: S depends on how many sentences the prefix holds
            t = sum(s.strip() in last for s in SENTENCES)
            lp = math.log(P_AFTER[t])
            content = [Logprob(token="4", logprob=lp), Logprob(token="6", logprob=lp)]
            choice = ChatCompletionChoice(
                message=ChatMessageAssistant(content="46"),
                stop_reason="stop",
                logprobs=Logprobs(content=content),
            )
            return ModelOutput(model="fake", choices=[choice], usage=ModelUsage(
                input_tokens=10, output_tokens=2, total_tokens=12))  # fmt: skip
        done = len(last) - len("<think>")
        pieces = [s for s in SENTENCES if "".join(SENTENCES).find(s) >= done][:2]
        out = "".join(pieces)
        finished = "".join(SENTENCES).endswith(out) or not out
        output = ModelOutput.from_content(
            model="fake", content=out + ("</think>" if finished else "")
        )
        output.choices[0].stop_reason = "stop" if finished else "max_tokens"
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return output


@modelapi(name="fakereason")
def fakereason():
    return FakeReasoner


def _generate(**args):
    model = get_model("suco/fakereason/x", memoize=False, **args)
    out = anyio.run(model.generate, "What is 12+34?")
    return out, out.metadata["harness_method"]


def test_exits_at_the_first_sufficient_sentence():
    out, md = _generate(delta=0.75)
    assert md["exited_early"] and md["sentences_kept"] == 3
    assert (
        out.completion
        == "<think>Step one. Step two. Step three. </think>The final answer is \\boxed{46}"
    )
    assert [p["t"] for p in md["probes"]] == [0, 1, 2, 3]
    assert md["probes"][3]["s"] == pytest.approx(0.8)
    # probe t=0, chunk 1 (t=1 complete), probe 1, chunk 2, probes 2 and 3
    assert [c["role"] for c in md["calls"]] == [
        "probe",
        "reason",
        "probe",
        "reason",
        "probe",
        "probe",
    ]
    assert md["budget"]["seq_io"] == md["budget"]["total_io"] == 4 * 12 + 2 * 15
    assert "our derivation" in md["reconstructed"]


def test_without_a_sufficient_prefix_the_whole_reasoning_is_kept():
    out, md = _generate(delta=0.95)
    assert not md["exited_early"] and md["sentences_kept"] == 5
    assert out.completion.startswith("<think>Step one.") and "Step five.</think>" in out.completion
    assert [p["t"] for p in md["probes"]] == [0, 1, 2, 3, 4, 5]


def test_an_empty_cot_can_suffice():
    _, md = _generate(delta=0.05)
    assert md["exited_early"] and md["sentences_kept"] == 0 and len(md["calls"]) == 1


def test_default_delta_is_delta0_plus_alpha_times_complexity():
    _, md = _generate()
    assert md["delta"] == pytest.approx(0.75)
    _, md = _generate(delta0=0.5, alpha=0.4, complexity=1.0)
    assert md["delta"] == pytest.approx(0.9) and md["sentences_kept"] == 5


def test_through_harness_eval_budgets_reach_the_sample(tmp_path):
    ok, rows, _ = run(EvalRequest(suite="arith", models=("suco/fakereason/x",), limit=3,
                                    log_dir=str(tmp_path / "logs"), display="none"))  # fmt: skip
    assert ok and rows[0].errors == 0
    log = read_eval_log(rows[0].log)
    for sample in log.samples:
        assert sample.metadata["method"] == "suco"
        assert sample.metadata["budget_seq_io"] == sample.metadata["budget_total_io"] > 0
    assert "suco/fakereason/x" in log.eval.metadata["harness_methods"]


def test_an_inner_model_without_logprobs_needs_a_calibrator(tmp_path):
    ok, rows, _ = run(EvalRequest(suite="arith", models=("suco/scripted/x",), limit=2,
                                    model_args={"inner_answer": "46"},
                                    log_dir=str(tmp_path / "logs"), display="none"))  # fmt: skip
    assert rows[0].errors == 2
    log = read_eval_log(rows[0].log)
    assert "calibrator=SPEC" in log.samples[0].error.message


@pytest.mark.parametrize(
    ("args", "message"),
    [({"delta0": 0.9, "alpha": 0.3}, "delta0"), ({"delta": 0}, "delta must be"),
     ({"chunk_tokens": 0}, ">= 1"), ({"foo": 1}, "inner_NAME")],
)  # fmt: skip
def test_bad_arguments_are_usage_errors(args, message):
    with pytest.raises(HarnessUsageError, match=message):
        build_models(("suco/fakereason/x",), args, None)
