"""PDR's loop with fake inner models: call graph, concurrency, workspaces, budgets, failures."""

from __future__ import annotations

import random
import re

import anyio
import pytest
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, GenerateConfig

from harness.models.methods.budget import CallRecord, budget_of
from harness.models.methods.distill import DistillSettings, distill_step, parse_rating, vote_scores
from harness.models.methods.refine_loop import (
    AllDraftsFailed,
    CallOutput,
    RefineSettings,
    draft_messages,
    refine,
)
from harness.models.methods.token_count import TokenCounter

WORDS = TokenCounter()


class SpecModel:
    """The budget test vector's fake (specs/pdr.md §3): a 200-token problem, 2,000-token drafts,
    distill inputs of 200 + n * 2,000 tokens and `summary_words`-word summaries."""

    def __init__(self, summary_words: int = 500, fail_seeds: tuple[int, ...] = ()) -> None:
        self.summary_words = summary_words
        self.fail_seeds = set(fail_seeds)
        self.calls: list[tuple[str, int, str]] = []  # (kind, seed, prompt)
        self.in_flight = 0
        self.peak: dict[int, int] = {}  # round -> most draft calls at once

    async def __call__(self, messages: list[ChatMessage], config: GenerateConfig) -> CallOutput:
        text = messages[-1].text
        seed = int(config.seed or 0)
        rnd = seed // 1000
        if text.startswith("You are given a problem"):
            self.calls.append(("distill", seed, text))
            n = len(re.findall(r"^Draft \d+:", text, flags=re.M))
            summary = " ".join([f"SUMMARY-{rnd}"] + ["w"] * (self.summary_words - 1))
            return CallOutput(summary, 200 + n * 2000, self.summary_words)
        self.calls.append(("draft", seed, text))
        self.in_flight += 1
        self.peak[rnd] = max(self.peak.get(rnd, 0), self.in_flight)
        await anyio.sleep(0.01)
        self.in_flight -= 1
        if seed in self.fail_seeds:
            raise RuntimeError(f"boom {seed}")
        workspace = 500 if "<workspace>" in text else 0
        return CallOutput(f"DRAFT-{rnd}.{seed % 1000}", 200 + workspace, 2000)


def _run(model, schedule, kappa=500, scheme="global", k=2, seed=0):
    settings = RefineSettings(tuple(schedule), DistillSettings(scheme, kappa, k, "vote"), seed=seed)
    messages = [ChatMessageSystem(content="sys"), ChatMessageUser(content="PROBLEM")]
    return anyio.run(refine, messages, settings, model, WORDS)


def test_budget_test_vector_and_call_graph():
    model = SpecModel()
    res = _run(model, (8, 4, 1))
    # M1 + 1 + M2 + 1 + M3 calls
    assert [k for k, _, _ in model.calls].count("draft") == 13
    assert [k for k, _, _ in model.calls].count("distill") == 2
    assert res.budget.calls == 15
    # specs/pdr.md §3: B_seq 33,000 (io) / 7,000 (out); B_total 56,500 / 27,000
    assert (res.budget.seq_io, res.budget.seq_out) == (33_000, 7_000)
    assert (res.budget.total_io, res.budget.total_out) == (56_500, 27_000)
    assert res.final.text == "DRAFT-3.0"
    assert [len(r.drafts) for r in res.rounds] == [8, 4, 1]


def test_drafts_of_a_round_run_concurrently_with_distinct_seeds():
    model = SpecModel()
    res = _run(model, (8, 4, 1))
    assert model.peak == {1: 8, 2: 4, 3: 1}
    for r in res.rounds:
        seeds = [d.seed for d in r.drafts]
        assert len(set(seeds)) == len(seeds)


def test_workspaces_are_rebuilt_each_round_and_never_carry_older_drafts():
    model = SpecModel()
    _run(model, (4, 2, 2, 1))
    for kind, seed, prompt in model.calls:
        rnd = seed // 1000
        if kind == "draft":
            assert "DRAFT-" not in prompt  # no draft text ever reaches a draft verbatim
            found = set(re.findall(r"SUMMARY-(\d)", prompt))
            assert found == (set() if rnd == 1 else {str(rnd - 1)})
        else:  # a distill prompt holds its own round's drafts only
            assert set(re.findall(r"DRAFT-(\d)", prompt)) == {str(rnd)}


def test_distill_output_longer_than_kappa_is_cut():
    model = SpecModel(summary_words=800)
    res = _run(model, (3, 2, 1), kappa=50)
    for r in res.rounds[1:]:
        for ws in r.workspaces:
            assert WORDS.count(ws) == 50
            assert ws.startswith(f"SUMMARY-{r.round - 1} w w")
    # the model's own output is what it cost, whatever was kept
    assert res.rounds[0].distill[0].output_tokens == 800


def test_single_draft_failure_is_recorded_and_the_round_goes_on():
    model = SpecModel(fail_seeds=(1002,))
    res = _run(model, (4, 2, 1))
    bad = [d for d in res.rounds[0].drafts if d.error]
    assert len(bad) == 1 and "boom 1002" in bad[0].error
    # the distill prompt saw the three good drafts only
    distill_prompt = next(p for k, s, p in model.calls if k == "distill" and s // 1000 == 1)
    assert len(re.findall(r"^Draft \d+:", distill_prompt, flags=re.M)) == 3
    assert res.final.text == "DRAFT-3.0"


def test_every_draft_of_a_round_failing_raises():
    model = SpecModel(fail_seeds=(2000, 2001))
    with pytest.raises(AllDraftsFailed, match="all 2 drafts of round 2"):
        _run(model, (3, 2, 1))


def test_sr_is_pdr_with_one_draft_per_round():
    a, b = SpecModel(), SpecModel()
    res_a = _run(a, (1, 1, 1))
    res_b = _run(b, (1, 1, 1))
    assert res_a.budget == res_b.budget
    # one draft per round, each refining the previous round's summary
    assert [k for k, _, _ in a.calls] == ["draft", "distill", "draft", "distill", "draft"]
    # schedule (1,) is direct generation: the sample's messages unchanged
    model = SpecModel()
    res = _run(model, (1,))
    assert model.calls[0][2] == "PROBLEM" and res.budget.calls == 1


def test_schedule_validation():
    with pytest.raises(ValueError, match="last round"):
        RefineSettings((4, 2), DistillSettings())
    with pytest.raises(ValueError, match="positive"):
        RefineSettings((4, 0, 1), DistillSettings())
    with pytest.raises(ValueError, match="distill must be one of"):
        DistillSettings("best")  # type: ignore[arg-type]


def test_budget_of_takes_the_longest_parallel_call():
    def rec(role, out, inp=10):
        return CallRecord(role, 1, 0, None, inp, out, "x")

    b = budget_of([([rec("draft", 5), rec("draft", 9)], [rec("rate", 3), rec("rate", 4)])])
    assert (b.seq_out, b.total_out, b.calls) == (9 + 4, 5 + 9 + 3 + 4, 4)
    assert (b.seq_io, b.total_io) == (19 + 14, 15 + 19 + 13 + 14)


def test_draft_messages_keep_the_sample_and_put_the_workspace_first():
    msgs = [ChatMessageSystem(content="sys"), ChatMessageUser(content="12+34=")]
    out = draft_messages(msgs, "WS")
    assert out[0].text == "sys" and out[1].text.endswith("</workspace>\n\n12+34=")
    assert draft_messages(msgs, "") == msgs


async def _rate_calls(scheme: str, k: int, drafts: list[str], n_next: int, score="self"):
    calls: list[tuple[str, int]] = []

    async def call_one(role, rnd, index, msgs, temperature):
        calls.append((role, index))
        text = str(10 - index) if role == "rate" else "summary"
        return CallRecord(role, rnd, index, None, 1, 1, text)

    res = await distill_step(
        "P", drafts, n_next, 1, DistillSettings(scheme, 1000, k, score), call_one, WORDS,
        random.Random(0),
    )  # fmt: skip
    return res, calls


def test_topk_schemes_select_and_bound_the_workspaces():
    drafts = [f"answer {i} \\boxed{{{i % 2}}}" for i in range(6)]
    res, calls = anyio.run(_rate_calls, "shared_topk", 2, drafts, 3)
    assert [r for r, _ in calls] == ["rate"] * 6  # the model rated each draft
    assert len(set(res.workspaces)) == 1 and "answer 0" in res.workspaces[0]
    assert "answer 1" in res.workspaces[0] and "answer 2" not in res.workspaces[0]
    res, calls = anyio.run(_rate_calls, "random_k", 2, drafts, 4)
    assert calls == [] and len(res.workspaces) == 4
    assert all(len(re.findall("Draft", w)) == 2 for w in res.workspaces)
    res, _ = anyio.run(_rate_calls, "per_sample_topk", 2, drafts, 8)
    assert len(set(res.workspaces)) > 1  # selections differ between next-round drafts
    res, calls = anyio.run(_rate_calls, "shared_topk", 2, drafts, 2, "vote")
    assert calls == []
    # fewer drafts than k: no scoring, every draft kept
    res, calls = anyio.run(_rate_calls, "shared_topk", 3, drafts[:2], 1)
    assert calls == [] and "answer 1" in res.workspaces[0]


def test_rating_and_vote_parsing():
    assert parse_rating("I'd say 7/10") == 7.0
    assert parse_rating("15") == 10.0 and parse_rating("none") == -1.0
    assert vote_scores(["\\boxed{3}", "x 3", "\\boxed{4}", "no"]) == [2.0, 2.0, 1.0, 0.0]
