"""Calibrators: local/tiny-arith teacher forcing, an OpenAI-compatible echo server, bad specs."""

import math
import random

import pytest

from harness.errors import HarnessUsageError
from harness.models.tiny_arith_data import make_problem
from harness.suco.calibrator import load_calibrator
from harness.suco.calibrator_openai import tail_logprobs
from harness.suco.sufficiency import ScoringTemplate, score_prefixes, sufficiency

BARE = ScoringTemplate("", "", "", "")  # tiny-arith knows only digits, + - = and space


@pytest.fixture(scope="module")
def tiny():
    return load_calibrator("local/tiny-arith", batch_size=8, device="cpu")


def test_tiny_arith_prefers_the_right_sum(tiny):
    rng = random.Random(11)
    pairs = []
    for _ in range(30):
        prompt, answer = make_problem(rng, 2)
        wrong = str(int(answer) + rng.choice([-10, -1, 1, 10]))
        pairs += [(prompt, answer), (prompt, wrong)]
    scores = [sufficiency(lp) for lp in tiny.continuation_logprobs(pairs)]
    wins = sum(scores[i] > scores[i + 1] for i in range(0, len(scores), 2))
    assert wins >= 27, wins  # 30/30 at the time of writing


def test_tiny_arith_scores_exactly_the_continuation_tokens(tiny):
    ids, start = tiny.scored_ids("12+34=", "46")
    assert len(ids) - start == 2
    assert tiny.tokenizer.decode(ids[start:]) == "46"
    # an empty context gets a start token so that the first character is predicted
    ids, start = tiny.scored_ids("", "46")
    assert start == 1 and ids[0] == tiny.tokenizer.eos_token_id
    lps = tiny.continuation_logprobs([("12+34=", "46"), ("", "7")])
    assert [len(x) for x in lps] == [2, 1]
    assert all(lp <= 0 for x in lps for lp in x)


def test_batching_and_padding_do_not_change_logprobs(tiny):
    pairs = [("1+2=", "3"), ("12+34=", "46"), ("99-98=", "1"), ("5+5=", "10")]
    one = load_calibrator("local/tiny-arith", batch_size=1, device="cpu")
    batched = tiny.continuation_logprobs(pairs)
    single = one.continuation_logprobs(pairs)
    for a, b in zip(batched, single, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_score_prefixes_with_the_bare_template(tiny):
    # the CoT "4 6 " in tiny-arith's alphabet has no sentence cut: prefixes "" and the whole
    scores = score_prefixes(tiny, "12+34=", "", "46", BARE)
    assert len(scores) == 1 and 0 < scores[0] <= 1


def test_tiny_arith_rejects_text_beyond_its_positions(tiny):
    with pytest.raises(HarnessUsageError, match="positions"):
        tiny.continuation_logprobs([("1+" * 40 + "1=", "41")])


def test_openai_echo_takes_the_continuation_tail(fake_server, monkeypatch):
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("FAKE_API_KEY", "sk-not-a-real-key-123")
    cal = load_calibrator("openai-api/fake/org/model-1")
    (lps,) = cal.continuation_logprobs([("Q: Step. Step. A: ", "42}")])
    assert lps == pytest.approx([math.log(0.7)] * 3)  # one token per character of "42}"
    body = fake_server.requests[0]
    assert body["prompt"] == "Q: Step. Step. A: 42}"
    assert (body["model"], body["max_tokens"], body["echo"], body["logprobs"]) == (
        "org/model-1", 0, True, 0,
    )  # fmt: skip
    assert fake_server.auth == ["Bearer sk-not-a-real-key-123"]
    assert "sk-not" not in repr(cal) and "sk-not" not in str(vars(cal).get("name"))


def test_openai_batches_keep_order(fake_server, monkeypatch):
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    cal = load_calibrator("openai-api/fake/m", max_connections=4)
    pairs = [(f"{'Step ' * k}A:", "7") for k in range(6)]
    got = [sufficiency(lp) for lp in cal.continuation_logprobs(pairs)]
    assert got == pytest.approx([min(0.99, 0.2 + 0.25 * k) for k in range(6)])
    assert fake_server.auth[0] is None  # no key set: no Authorization header


def test_straddling_token_is_scored(fake_server, monkeypatch):
    def merged(body):
        return {"choices": [{"index": 0, "text": body["prompt"], "logprobs": {
            "tokens": ["12", "+3", "4=4", "6"],
            "token_logprobs": [None, -1.0, -0.5, -0.25],
            "text_offset": [0, 2, 4, 7],
        }}]}  # fmt: skip

    fake_server.respond = merged
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    (lps,) = load_calibrator("openai-api/fake/m").continuation_logprobs([("12+34=", "46")])
    assert lps == [-0.5, -0.25]
    assert tail_logprobs([None, -1.0, -2.0], [0, 3, 5], 5) == [-2.0]
    with pytest.raises(ValueError, match="context must not be empty"):
        tail_logprobs([None, -1.0], [0, 1], 0)


def test_server_without_echo_logprobs_is_a_usage_error(fake_server, monkeypatch):
    fake_server.respond = lambda body: {"choices": [{"index": 0, "text": "", "logprobs": None}]}
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("FAKE_API_KEY", "sk-secret-999")
    with pytest.raises(HarnessUsageError, match="does not support echo logprobs") as info:
        load_calibrator("openai-api/fake/m").continuation_logprobs([("a", "b")])
    assert "sk-secret" not in str(info.value)


def test_unreachable_server_and_missing_url(monkeypatch):
    monkeypatch.delenv("NOPE_BASE_URL", raising=False)
    with pytest.raises(HarnessUsageError, match="NOPE_BASE_URL"):
        load_calibrator("openai-api/nope/m")
    cal = load_calibrator("openai-api/nope/m", base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(HarnessUsageError, match="cannot reach"):
        cal.continuation_logprobs([("a", "b")])


@pytest.mark.parametrize(
    "spec", ["openai/gpt-4o", "anthropic/claude-3", "hf/gpt2", "vllm/x", "openai-api/only"]
)
def test_unsupported_specs_name_the_supported_forms(spec):
    with pytest.raises(HarnessUsageError, match="openai-api/NAME/MODEL"):
        load_calibrator(spec)


def test_unknown_argument():
    with pytest.raises(HarnessUsageError, match="unknown argument"):
        load_calibrator("openai-api/x/m", base_url="http://x", temperature=0)
