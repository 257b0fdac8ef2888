"""The Parallel-Distill-Refine loop, of which Sequential Refinement is the one-draft case.

PDR (Madaan et al., "Rethinking Thinking Tokens: LLMs as Improvement Operators", arXiv
2510.01123; specs/pdr.md): for each round r of a schedule M = (M_1, ..., M_R) with M_R = 1,
generate M_r drafts in parallel, each conditioned on its workspace from the round before, and
unless it is the last round distill them into the next round's workspaces. The answer is the single
draft of round R. Workspaces are rebuilt every round and never carry earlier rounds' drafts.

Round 1 drafts see the sample's messages unchanged, so the schedule (1,) is direct generation.
SR with R rounds is the schedule (1,) * R with the `global` (summary) or, for its `verbatim`
workspace, the `shared_topk` k=1 distill step.

A draft whose inner call raises is recorded and the round goes on with the others; if every
draft of a round fails, `AllDraftsFailed` is raised and the sample fails alone. A failed distill
call leaves the next round without a workspace, and is recorded too.

This module knows nothing of inspect's eval machinery: it calls an async `CallFn`, so tests run
it with fakes and the provider (`refine_api`) runs it through the inner model.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from inspect_ai.model import ChatMessage, ChatMessageUser, GenerateConfig
from inspect_ai.util import span

from harness.models.methods.budget import Budget, CallRecord, CallRole, budget_of
from harness.models.methods.concurrent import gather
from harness.models.methods.distill import DistillSettings, distill_step
from harness.models.methods.prompts import WORKSPACE_PREAMBLE, with_workspace
from harness.models.methods.token_count import TokenCounter


@dataclass(frozen=True)
class CallOutput:
    """What an inner call returned."""

    text: str  # the completion
    input_tokens: int  # prompt tokens
    output_tokens: int  # completion tokens


CallFn = Callable[[list[ChatMessage], GenerateConfig], Awaitable[CallOutput]]


class AllDraftsFailed(RuntimeError):
    """Every draft of a round failed, so the sample has no answer."""


@dataclass(frozen=True)
class RefineSettings:
    """A PDR or SR run."""

    schedule: tuple[int, ...]  # drafts per round, M_1..M_R, with M_R = 1
    distill: DistillSettings  # how workspaces are built
    temperature: float = 0.7  # draft sampling temperature (distill and rating calls use 0)
    seed: int = 0  # base seed; call (round r, index i) gets seed + 1000 r + i

    def __post_init__(self) -> None:
        if not self.schedule or any(m < 1 for m in self.schedule):
            raise ValueError(f"rounds must be positive draft counts, got {self.schedule}")
        if self.schedule[-1] != 1:
            raise ValueError(
                f"the last round must have one draft (its draft is the answer), got {self.schedule}"
            )
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")


@dataclass(frozen=True)
class RoundRecord:
    """One round: the workspace each draft saw, the drafts, and the distill step after it."""

    round: int  # 1-based
    workspaces: tuple[str, ...]  # what each draft saw ("" = none)
    drafts: tuple[CallRecord, ...]  # the round's draft calls, failed ones included
    distill: tuple[CallRecord, ...]  # distill or rating calls after the round (none after R)

    def as_dict(self) -> dict:
        """JSON-ready record."""
        return {
            "round": self.round,
            "workspaces": list(self.workspaces),
            "drafts": [c.as_dict() for c in self.drafts],
            "distill": [c.as_dict() for c in self.distill],
        }


@dataclass(frozen=True)
class RefineResult:
    """The answer, every round, and the budgets."""

    final: CallRecord  # the last round's draft
    rounds: tuple[RoundRecord, ...]  # in order
    budget: Budget  # sequential and total tokens


def last_user_text(messages: list[ChatMessage]) -> str:
    """The problem as the task wrote it: the last user message's text."""
    for m in reversed(messages):
        if m.role == "user":
            return m.text
    return "\n\n".join(m.text for m in messages)


def draft_messages(messages: list[ChatMessage], workspace: str) -> list[ChatMessage]:
    """The sample's messages, with the workspace put before the last user message's text."""
    if not workspace:
        return list(messages)
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            out[i] = ChatMessageUser(content=with_workspace(out[i].text, workspace))
            return out
    return [*out, ChatMessageUser(content=WORKSPACE_PREAMBLE.format(workspace=workspace))]


def _rng(settings: RefineSettings, problem: str) -> random.Random:
    digest = hashlib.sha256(problem.encode()).hexdigest()[:16]
    return random.Random(f"{settings.seed}-{digest}")


async def refine(
    messages: list[ChatMessage],
    settings: RefineSettings,
    call: CallFn,
    counter: TokenCounter,
    config: GenerateConfig | None = None,
) -> RefineResult:
    """Run PDR (or SR) on the sample's messages through `call`."""
    base = config or GenerateConfig()
    problem = last_user_text(messages)
    rng = _rng(settings, problem)

    async def call_one(
        role: CallRole, round_: int, index: int, msgs: list[ChatMessage], temperature: float
    ) -> CallRecord:
        seed = settings.seed + 1000 * round_ + (index if role == "draft" else 500 + index)
        cfg = base.model_copy(update={"temperature": temperature, "seed": seed})
        try:
            out = await call(msgs, cfg)
        except Exception as ex:  # an inner failure is recorded; the caller decides what it costs
            return CallRecord(role, round_, index, seed, 0, 0, "", f"{type(ex).__name__}: {ex}")
        return CallRecord(
            role, round_, index, seed, out.input_tokens, out.output_tokens, out.text, None
        )

    workspaces: tuple[str, ...] = ("",) * settings.schedule[0]
    rounds: list[RoundRecord] = []
    last = len(settings.schedule)
    for r, m in enumerate(settings.schedule, start=1):
        jobs = [
            call_one("draft", r, i, draft_messages(messages, workspaces[i]), settings.temperature)
            for i in range(m)
        ]
        async with span(f"round {r}"):
            drafts = tuple(await gather(jobs))
        ok = [d for d in drafts if d.error is None]
        if not ok:
            rounds.append(RoundRecord(r, workspaces, drafts, ()))
            errors = "; ".join(d.error or "" for d in drafts)
            raise AllDraftsFailed(f"all {m} drafts of round {r} failed: {errors}")
        distilled: tuple[CallRecord, ...] = ()
        next_ws: tuple[str, ...] = ()
        if r < last:
            step = await distill_step(
                problem, [d.text for d in ok], settings.schedule[r], r, settings.distill,
                call_one, counter, rng,
            )  # fmt: skip
            distilled, next_ws = step.calls, step.workspaces
        rounds.append(RoundRecord(r, workspaces, drafts, distilled))
        workspaces = next_ws
    budget = budget_of([(list(x.drafts), list(x.distill)) for x in rounds])
    return RefineResult(ok[0], tuple(rounds), budget)
