"""Reward-model scores: a local model's teacher-forced log-probability; an endpoint's score."""

import json
import math

import anyio
import httpx
import pytest

from harness.errors import HarnessUsageError
from harness.suites.mas_prove.search import VerifyRequest
from harness.suites.mas_prove.step_scorers import EndpointStepScorer, Scored, make_scorer
from harness.suites.mas_prove.verifiers import ProcessRewardVerifier, RewardVerifier


class _Fixed:
    """Scores by a table: log p of each (prompt, step); None where it is missing."""

    name = "fixed"

    def __init__(self, table):
        self.table = table

    async def score(self, pairs):
        return Scored(tuple(self.table.get(p) for p in pairs), 7)


def _request(steps, prior=()):
    return VerifyRequest(
        task_type="math", question="q", context="", candidates=tuple(s or "" for s in steps),
        answers=tuple(steps), steps=tuple(steps), step_prompt="12+30=", prior_steps=prior,
        correct=(False,) * len(steps), key="k",
    )  # fmt: skip


def test_reward_ranks_by_probability_and_a_failed_score_is_reward_zero():
    scorer = _Fixed({("12+30=", "42"): -0.1, ("12+30=", "41"): -2.0})
    verdict = anyio.run(RewardVerifier(scorer).rank, _request(["41", None, "42"]))
    assert verdict.order == (2, 0, 1)  # the unscored step last (reward 0)
    assert verdict.tokens == 7 and verdict.detail["logprobs"][1] is None


@pytest.mark.parametrize(("reduction", "expected"), [("min", (1, 0)), ("prod", (0, 1))])
def test_prm_reduces_the_trajectory_by_min_or_product(reduction, expected):
    prior = (("10+2=", "12"),)
    # the shared earlier step (-3.0) is both trajectories' worst: min ties them (index order);
    # the product (a sum of logs) prefers candidate 1's likelier step
    table = {("10+2=", "12"): -3.0, ("12+30=", "42"): -1.0, ("12+30=", "40"): -2.5}
    verifier = ProcessRewardVerifier(_Fixed(table), reduction)
    verdict = anyio.run(verifier.rank, _request(["40", "42"], prior))
    assert verifier.name == f"prm-{reduction}"
    if reduction == "min":
        assert verdict.detail["scores"] == [-3.0, -3.0] and verdict.order == (0, 1)
    else:
        assert verdict.detail["scores"] == [-5.5, -4.0] and verdict.order == (1, 0)


def test_an_endpoint_scorer_reads_the_pooling_route(monkeypatch):
    monkeypatch.setenv("RM_BASE_URL", "http://rm.test/v1")
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((str(request.url), body["model"]))
        if "bad" in body["input"]:
            return httpx.Response(500)
        score = 0.9 if "42" in body["input"] else 0.1
        return httpx.Response(200, json={"data": [{"index": 0, "data": [score]}]})

    scorer = EndpointStepScorer("openai-api/rm/skywork", transport=httpx.MockTransport(handler))
    scored = anyio.run(
        scorer.score, [("12+30=", "42"), ("12+30=", "41"), ("p", "bad"), ("p", None)]
    )
    assert scored.logprobs == (0.9, 0.1, None, None)
    assert seen[0] == ("http://rm.test/pooling", "skywork") and len(seen) == 3


def test_a_reward_model_spec_that_cannot_work_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("RM_BASE_URL", raising=False)
    with pytest.raises(HarnessUsageError, match="RM_BASE_URL"):
        make_scorer("openai-api/rm/skywork")
    with pytest.raises(HarnessUsageError, match="local/"):
        make_scorer("openai/gpt-4o-mini")


@pytest.mark.slow
def test_the_local_scorer_equals_a_direct_forward_pass(random_tiny):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    scorer = make_scorer(f"local/{random_tiny}")
    pairs = [("12+30=", "42"), ("99-10=", "89"), ("1+1=", None)]
    scored = scorer.score_sync(pairs)
    tok = AutoTokenizer.from_pretrained(random_tiny)
    model = AutoModelForCausalLM.from_pretrained(random_tiny).eval()
    for (prompt, step), got in zip(pairs, scored.logprobs, strict=True):
        if step is None:
            assert got is None
            continue
        ids = tok(prompt + step, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        with torch.no_grad():
            logp = model(torch.tensor([ids])).logits.log_softmax(-1)[0]  # (T, V)
        start = len(tok(prompt, add_special_tokens=False)["input_ids"])
        want = sum(float(logp[t - 1, ids[t]]) for t in range(start, len(ids)))
        assert got == pytest.approx(want, abs=1e-4) and math.isfinite(got)
