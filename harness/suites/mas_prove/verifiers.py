"""The verifiers that rank a search's candidates (spec §2; the issue's calibration verifiers).

- `judge`: an LLM judge through any model spec. Our system prompt states the spec's criteria
  (final-answer correctness, reasoning quality, completeness, logical consistency; ignore length
  and style); the judge explains, then writes `<ranking>i,j,k</ranking>` with 1-based numbers,
  parsed by `ranking.parse_ranking` with the identity fallback.
- `reward`: one scalar per candidate from a step scorer (`step_scorers.py`): the probability a
  model gives the candidate's step after its prompt, ranked high to low; a failed scoring
  request gets reward 0 (spec §2).
- `prm`: per-step scores of the trajectory with the candidate as its last step, reduced by
  `min` or `prod` (the reduction is in the verifier's name, `prm-min` or `prm-prod`).
- `oracle` puts candidates with a right process label first; `random` shuffles, seeded by the
  search's key; `majority` ranks by how many candidates share the answer (ties: lower index).
  These three calibrate the others: the oracle bounds what a verifier can add, random shows
  what the search adds without skill.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model

from harness.suites.mas_prove.ranking import parse_ranking
from harness.suites.mas_prove.search import Verdict, VerifyRequest
from harness.suites.mas_prove.step_scorers import StepScorer

VerifierName = Literal["none", "oracle", "random", "majority", "judge", "reward", "prm"]
VERIFIERS: tuple[str, ...] = ("none", "oracle", "random", "majority", "judge", "reward", "prm")
Reduction = Literal["min", "prod"]

JUDGE_SYSTEM = (
    "You are an impartial judge. Rank the candidate responses to the question from best to "
    "worst by, in order: the correctness of the final answer, the quality of the reasoning, "
    "completeness, and logical consistency. Ignore length and style. First explain your "
    "evaluation briefly, then give the ranking as <ranking>i,j,k</ranking>, listing the "
    "1-based candidate numbers from best to worst."
)  # our wording of the criteria the spec lists


def _stable_desc(scores: list[float]) -> tuple[int, ...]:
    """Indices by descending score; equal scores keep their order."""
    return tuple(sorted(range(len(scores)), key=lambda i: (-scores[i], i)))


@dataclass(frozen=True)
class OracleVerifier:
    """Right candidates first (by the process labels), in their order."""

    name: str = "oracle"  # as logged

    async def rank(self, request: VerifyRequest) -> Verdict:
        """Right before wrong, stable."""
        return Verdict(_stable_desc([float(c) for c in request.correct]))


@dataclass(frozen=True)
class RandomVerifier:
    """A uniformly random ranking, seeded by the search's key."""

    name: str = "random"  # as logged

    async def rank(self, request: VerifyRequest) -> Verdict:
        """A seeded shuffle."""
        order = list(range(len(request.candidates)))
        random.Random(request.key).shuffle(order)
        return Verdict(tuple(order))


@dataclass(frozen=True)
class MajorityVerifier:
    """Candidates whose answer most candidates share first; no answer counts zero."""

    name: str = "majority"  # as logged

    async def rank(self, request: VerifyRequest) -> Verdict:
        """By the size of each candidate's answer group, ties by index."""
        counts = Counter(a for a in request.answers if a is not None)
        votes = [float(counts[a]) if a is not None else 0.0 for a in request.answers]
        return Verdict(_stable_desc(votes), detail={"votes": votes})


def judge_prompt(request: VerifyRequest) -> str:
    """The judge's user message: the question, the context, then "Candidate i Response"."""
    parts = [f"Task type: {request.task_type}", f"Question:\n{request.question}"]
    if request.context:
        parts.append(f"Context so far:\n{request.context}")
    for i, text in enumerate(request.candidates, 1):
        parts.append(f"Candidate {i} Response:\n{text}")
    parts.append("Rank the candidates, best first, as <ranking>i,j,k</ranking>.")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class JudgeVerifier:
    """An LLM judge through any inspect model."""

    model: Model  # the judge
    name: str = "judge"  # as logged
    max_tokens: int | None = None  # the judge's output cap (None: the model's default)

    async def rank(self, request: VerifyRequest) -> Verdict:
        """Ask the judge; parse `<ranking>` with the identity fallback."""
        prompt = judge_prompt(request)
        output = await self.model.generate(
            [ChatMessageSystem(content=JUDGE_SYSTEM), ChatMessageUser(content=prompt)],
            config=GenerateConfig(max_tokens=self.max_tokens, temperature=0.0),
        )
        parsed = parse_ranking(output.completion, len(request.candidates))
        tokens = output.usage.total_tokens if output.usage else 0
        detail: dict[str, Any] = {
            "judge_model": str(self.model),
            "judge_output": output.completion,
            "parse_fallback": parsed.fallback,
        }
        return Verdict(parsed.order, tokens, 1, detail)


@dataclass(frozen=True)
class RewardVerifier:
    """A scalar per candidate: the step scorer's probability of the candidate's step."""

    scorer: StepScorer  # where the scores come from
    name: str = "reward"  # as logged

    async def rank(self, request: VerifyRequest) -> Verdict:
        """Rank by log-probability of (step prompt, candidate); failures get reward 0."""
        pairs = [(request.step_prompt, c) for c in request.steps]
        scored = await self.scorer.score(pairs)
        logps = [s if s is not None else -math.inf for s in scored.logprobs]
        detail = {"scorer": self.scorer.name, "logprobs": _json_floats(logps)}
        return Verdict(_stable_desc(logps), scored.tokens, 0, detail)


@dataclass(frozen=True)
class ProcessRewardVerifier:
    """Per-step scores of the earlier steps and the candidate, reduced by min or product."""

    scorer: StepScorer  # where the per-step scores come from
    reduction: Reduction = "min"  # how a trajectory's step scores become one

    @property
    def name(self) -> str:
        """`prm-min` or `prm-prod`."""
        return f"prm-{self.reduction}"

    async def rank(self, request: VerifyRequest) -> Verdict:
        """Score every step of each trajectory; reduce in log space (product = sum of logs)."""
        prior = list(request.prior_steps)
        pairs = prior + [(request.step_prompt, c) for c in request.steps]
        scored = await self.scorer.score(pairs)
        logps = [s if s is not None else -math.inf for s in scored.logprobs]
        shared, own = logps[: len(prior)], logps[len(prior) :]
        reduce = min if self.reduction == "min" else sum
        totals = [float(reduce(shared + [x])) for x in own]
        detail = {
            "scorer": self.scorer.name,
            "reduction": self.reduction,
            "prior_step_logprobs": _json_floats(shared),
            "step_logprobs": _json_floats(own),
            "scores": _json_floats(totals),
        }
        return Verdict(_stable_desc(totals), scored.tokens, 0, detail)


def _json_floats(values: list[float]) -> list[float | None]:
    """Floats for the log; -inf (reward 0) becomes None."""
    return [None if not math.isfinite(v) else round(v, 6) for v in values]
