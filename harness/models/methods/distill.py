"""Distill step of PDR: turn a round's drafts into the next round's bounded workspaces.

Schemes (specs/pdr.md §2; `global` is the spec's `global_summary`):
- `global`: one call summarises every draft into a shared text, hard-cut at kappa tokens.
- `shared_topk`: the k best drafts, verbatim, shared by every next-round draft.
- `per_sample_topk`: each next-round draft gets its own top-k selection. How the paper makes the
  selections differ is not known; ours: each draws a random half of the drafts (at least k) and
  keeps that half's k best, so good drafts recur but the selections vary.
- `random_k`: each next-round draft gets k drafts drawn at random (the bootstrapped baseline).

Top-k needs a score per draft (`topk_score`):
- `self`: the inner model rates each draft 0-10 (parallel calls, counted in the budgets);
- `vote` (ours): how many of the round's drafts share the draft's extracted final answer; no
  calls. The paper's oracle scorer needs the ground truth, which a model wrapper never sees.

Every workspace is cut at kappa tokens. When there are no more drafts than k, no scoring is done.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from inspect_ai.model import ChatMessage, ChatMessageUser

from harness.answer_extraction import extract_answer
from harness.models.methods.budget import CallRecord, CallRole
from harness.models.methods.concurrent import gather
from harness.models.methods.prompts import distill_prompt, drafts_block, rate_prompt
from harness.models.methods.token_count import TokenCounter

DistillScheme = Literal["global", "shared_topk", "per_sample_topk", "random_k"]
DISTILL_SCHEMES: tuple[str, ...] = ("global", "shared_topk", "per_sample_topk", "random_k")
TopkScore = Literal["self", "vote"]
TOPK_SCORES: tuple[str, ...] = ("self", "vote")

# (role, round, index, messages, temperature) -> the call's record; never raises
CallOne = Callable[[CallRole, int, int, list[ChatMessage], float], Awaitable[CallRecord]]

_FIRST_INT = re.compile(r"\d+")


@dataclass(frozen=True)
class DistillSettings:
    """How workspaces are built."""

    scheme: DistillScheme = "global"  # see the module docstring
    kappa: int = 500  # workspace bound in tokens
    k: int = 2  # drafts kept by the top-k and random-k schemes
    topk_score: TopkScore = "self"  # how top-k ranks drafts

    def __post_init__(self) -> None:
        if self.scheme not in DISTILL_SCHEMES:
            raise ValueError(
                f"distill must be one of {', '.join(DISTILL_SCHEMES)}, got {self.scheme!r}"
            )
        if self.topk_score not in TOPK_SCORES:
            raise ValueError(
                f"topk_score must be one of {', '.join(TOPK_SCORES)}, got {self.topk_score!r}"
            )
        if self.kappa < 1:
            raise ValueError(f"workspace_tokens must be at least 1, got {self.kappa}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")


@dataclass(frozen=True)
class DistillResult:
    """Workspaces for the next round, one per next-round draft, and the calls made."""

    workspaces: tuple[str, ...]  # one per next-round draft
    calls: tuple[CallRecord, ...]  # distill or rating calls of this step


def parse_rating(text: str) -> float:
    """The first integer of a rating reply, clipped to 0-10; -1 when there is none."""
    found = _FIRST_INT.search(text)
    return -1.0 if found is None else float(min(10, int(found.group(0))))


def vote_scores(drafts: list[str]) -> list[float]:
    """For each draft, how many drafts share its extracted answer (0 when it has none)."""
    answers = [extract_answer(d) for d in drafts]
    counts = Counter(a for a in answers if a is not None)
    return [float(counts[a]) if a is not None else 0.0 for a in answers]


def top_k(scores: list[float], k: int, among: list[int] | None = None) -> list[int]:
    """Indices of the k best scores among `among` (default all), ties to the earlier draft."""
    pool = list(range(len(scores))) if among is None else among
    return sorted(sorted(pool, key=lambda i: (-scores[i], i))[:k])


async def distill_step(
    problem: str,
    drafts: list[str],
    n_next: int,
    round_: int,
    settings: DistillSettings,
    call_one: CallOne,
    counter: TokenCounter,
    rng: random.Random,
) -> DistillResult:
    """Build `n_next` workspaces from the round's successful drafts."""
    kappa = settings.kappa
    if settings.scheme == "global":
        prompt = distill_prompt(problem, drafts, kappa)
        rec = await call_one("distill", round_, 0, [ChatMessageUser(content=prompt)], 0.0)
        ws = counter.truncate(rec.text, kappa)
        return DistillResult((ws,) * n_next, (rec,))

    n, k = len(drafts), settings.k
    calls: tuple[CallRecord, ...] = ()
    if settings.scheme == "random_k":
        picks = [sorted(rng.sample(range(n), min(k, n))) for _ in range(n_next)]
    else:
        scores = [0.0] * n
        if n > k:
            if settings.topk_score == "vote":
                scores = vote_scores(drafts)
            else:
                rate = [
                    call_one(
                        "rate", round_, i, [ChatMessageUser(content=rate_prompt(problem, d))], 0.0
                    )
                    for i, d in enumerate(drafts)
                ]
                calls = tuple(await gather(rate))
                scores = [parse_rating(c.text) if c.error is None else -1.0 for c in calls]
        if settings.scheme == "shared_topk":
            picks = [top_k(scores, k)] * n_next
        else:
            half = max(k, math.ceil(n / 2))
            picks = [top_k(scores, k, rng.sample(range(n), min(half, n))) for _ in range(n_next)]
    workspaces = tuple(counter.truncate(drafts_block([drafts[i] for i in p]), kappa) for p in picks)
    return DistillResult(workspaces, calls)
