"""Verification-guided parallel search around any step (spec §2, from the authors' code).

`parallel_search(make, n, ...)`:

1. calls the step function `make` n times concurrently with identical inputs (n = 3 by default);
2. a call that raises becomes the refusal placeholder (`REFUSAL`), which still takes part in the
   ranking;
3. builds the verifier's view: the context (given by the caller, see `runner.py`) and each
   candidate flattened to text;
4. the verifier returns a best-first ranking of 0-based indices;
5. keeps `candidates[ranking[0]]`. A verifier that raises, or does not answer within `timeout`
   seconds, falls back to candidate 0.

Every candidate, the verifier's input, its ranking, the chosen index, the fallback reason and the
verifier's tokens go in the returned `SearchRecord`. The placeholder's wording is ours: the
authors' text was not read.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import anyio

Granularity = Literal["agent", "iteration"]
GRANULARITIES: tuple[str, ...] = ("agent", "iteration")
ContextMode = Literal["raw", "none", "summary", "summary+step"]
CONTEXTS: tuple[str, ...] = ("raw", "none", "summary", "summary+step")

T = TypeVar("T")

REFUSAL = "I'm sorry, but I can't help with that."  # a failed candidate's text (ours)


@dataclass(frozen=True)
class Reply:
    """One agent call."""

    role: str  # the agent's role (worker, critic, ...)
    text: str  # its output
    answer: str | None  # the answer read from it (None: none)
    tokens: int  # input + output tokens of the call
    failed: str = ""  # why the call failed ("" when it did not)


@dataclass(frozen=True)
class Outcome:
    """What a step function gives: one call (agent level) or a whole round (iteration level)."""

    text: str  # the outcome flattened to text
    answer: str | None  # what it concludes
    replies: tuple[Reply, ...] = ()  # the calls it made
    failed: str = ""  # why it failed ("" when it did not)

    @classmethod
    def refusal(cls, reason: str) -> Outcome:
        """The placeholder for a candidate whose step function raised."""
        reason = reason or "failed"
        return cls(REFUSAL, None, (Reply("refusal", REFUSAL, None, 0, reason),), reason)


@dataclass(frozen=True)
class VerifyRequest:
    """What a verifier is given to rank."""

    task_type: str  # "math"
    question: str  # the whole problem
    context: str  # the context the verifier sees (after the context strategy)
    candidates: tuple[str, ...]  # each candidate as the verifier sees it
    answers: tuple[str | None, ...]  # each candidate's answer
    steps: tuple[str | None, ...]  # each candidate's step as a reward model reads it
    step_prompt: str  # the step as a reward model reads it
    prior_steps: tuple[tuple[str, str], ...]  # (step prompt, kept answer) of earlier steps
    correct: tuple[bool, ...]  # process labels; only the oracle reads them
    key: str  # a stable key for this search (seeds the random verifier)


@dataclass(frozen=True)
class Verdict:
    """A verifier's answer."""

    order: tuple[int, ...]  # best-first 0-based candidate indices
    tokens: int = 0  # tokens the verifier spent
    calls: int = 0  # model calls the verifier made
    detail: dict[str, Any] = field(default_factory=dict)  # its input, scores, parse fallbacks


class Verifier(Protocol):
    """Ranks candidates best first."""

    name: str  # as the logs and the report name it

    async def rank(self, request: VerifyRequest) -> Verdict:
        """The best-first ranking of `request.candidates`."""
        ...


@dataclass(frozen=True)
class SearchRecord:
    """One search, as the log keeps it."""

    where: str  # which step and unit, for example "step 2, debate round 1"
    granularity: str  # agent or iteration
    candidates: tuple[str, ...]  # every candidate's text (placeholders included)
    answers: tuple[str | None, ...]  # every candidate's answer
    correct: tuple[bool, ...]  # every candidate's process label
    failed: tuple[str, ...]  # why each candidate failed ("" when it did not)
    verifier: str  # the verifier's name
    verifier_input: dict[str, Any]  # context and candidates as the verifier saw them
    ranking: tuple[int, ...]  # the ranking used (the identity after a fallback)
    chosen: int  # the index kept
    fallback: str  # why candidate 0 was kept without a ranking ("" when ranked)
    verifier_tokens: int  # tokens the verifier spent
    verifier_calls: int  # model calls the verifier made
    detail: dict[str, Any]  # the verifier's own detail

    @property
    def mixed(self) -> bool:
        """Whether some candidates were right and some wrong."""
        return 0 < sum(self.correct) < len(self.correct)

    def as_dict(self) -> dict[str, Any]:
        """The record as plain JSON-able data."""
        return {
            "where": self.where,
            "granularity": self.granularity,
            "candidates": list(self.candidates),
            "answers": list(self.answers),
            "correct": list(self.correct),
            "failed": list(self.failed),
            "verifier": self.verifier,
            "verifier_input": self.verifier_input,
            "ranking": list(self.ranking),
            "chosen": self.chosen,
            "fallback": self.fallback,
            "verifier_tokens": self.verifier_tokens,
            "verifier_calls": self.verifier_calls,
            "detail": self.detail,
        }


async def gather(*awaitables: Awaitable[T]) -> list[T]:
    """Await all concurrently, results in order; an exception cancels the rest and propagates.

    Like inspect's `collect` (and anyio-based, so it runs under trio too), without a span per
    task: a span costs two transcript events, a third of inspect's time per call here.
    """
    results: list[Any] = [None] * len(awaitables)

    async def run(i: int, awaitable: Awaitable[T]) -> None:
        results[i] = await awaitable

    async with anyio.create_task_group() as group:
        for i, awaitable in enumerate(awaitables):
            group.start_soon(run, i, awaitable)
    return results


async def _guarded(make: Callable[[], Awaitable[Outcome]]) -> Outcome:
    try:
        return await make()
    except Exception as ex:  # a failed candidate is the placeholder, not a crash (spec §2.2)
        return Outcome.refusal(f"{type(ex).__name__}: {str(ex)[:200]}")


async def parallel_search(
    make: Callable[[], Awaitable[Outcome]],
    *,
    n: int,
    verifier: Verifier,
    view: Callable[[tuple[Outcome, ...]], Awaitable[VerifyRequest]],
    where: str,
    granularity: str,
    timeout: float = 120.0,
) -> tuple[Outcome, SearchRecord]:
    """Draw `n` candidates of `make` concurrently, rank them, keep the best.

    Args:
        make: The step function; each call draws one candidate.
        n: Candidates per search (at least 1).
        verifier: Ranks the candidates.
        view: Builds the verifier's request from the candidates (context strategy applied).
        where: Which step and unit this is, for the log.
        granularity: "agent" or "iteration", for the log.
        timeout: Seconds the verifier may take before candidate 0 is kept.

    Returns:
        The kept candidate and the search's record.

    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    outcomes = tuple(await gather(*(_guarded(make) for _ in range(n))))
    request = await view(outcomes)
    identity = tuple(range(n))
    fallback, verdict = "", Verdict(identity)
    try:
        with anyio.fail_after(timeout):
            verdict = await verifier.rank(request)
        if sorted(verdict.order) != list(identity):
            fallback = f"the ranking {list(verdict.order)} is not a permutation of 0..{n - 1}"
            verdict = Verdict(identity, verdict.tokens, verdict.calls, verdict.detail)
    except TimeoutError:
        fallback = f"the verifier did not answer within {timeout:g} s"
    except Exception as ex:  # a failed verifier keeps candidate 0 (spec §2.5)
        fallback = f"the verifier failed: {type(ex).__name__}: {str(ex)[:200]}"
    order = identity if fallback else verdict.order
    chosen = order[0]
    record = SearchRecord(
        where=where,
        granularity=granularity,
        candidates=tuple(o.text for o in outcomes),
        answers=tuple(o.answer for o in outcomes),
        correct=request.correct,
        failed=tuple(o.failed for o in outcomes),
        verifier=verifier.name,
        verifier_input={"context": request.context, "candidates": list(request.candidates)},
        ranking=tuple(order),
        chosen=chosen,
        fallback=fallback,
        verifier_tokens=verdict.tokens,
        verifier_calls=verdict.calls,
        detail=verdict.detail,
    )
    return outcomes[chosen], record
