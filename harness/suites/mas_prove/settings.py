"""The suite's options, checked before anything runs: a bad one is a one-line usage error.

Lists are written `a,b,c`. Verifier models are resolved here, so a judge, reward model or
summariser that does not exist stops the run before its first sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import Model

from harness.errors import HarnessUsageError
from harness.suites.mas_prove.patterns import PATTERNS
from harness.suites.mas_prove.search import CONTEXTS, GRANULARITIES, Verifier
from harness.suites.mas_prove.step_scorers import StepScorer, make_scorer
from harness.suites.mas_prove.verifiers import (
    VERIFIERS,
    JudgeVerifier,
    MajorityVerifier,
    OracleVerifier,
    ProcessRewardVerifier,
    RandomVerifier,
    Reduction,
    RewardVerifier,
)

# verifiers that read the context: only they are run under more than one context strategy
READS_CONTEXT = ("judge", "reward", "prm")

_models: dict[str, Model] = {}
_scorers: dict[str, StepScorer] = {}


def parse_list(text: str, valid: tuple[str, ...], what: str) -> tuple[str, ...]:
    """`a,b,c` as a tuple, each checked against `valid` (a usage error names the valid ones)."""
    items = tuple(dict.fromkeys(p.strip() for p in str(text).split(",") if p.strip()))
    if not items:
        raise HarnessUsageError(f"mas-prove: -T {what} is empty; choose from {', '.join(valid)}")
    for item in items:
        if item not in valid:
            raise HarnessUsageError(
                f"mas-prove: -T {what}: unknown '{item}'; choose from {', '.join(valid)}"
            )
    return items


def resolve_model(spec: str, what: str, args: dict[str, Any] | None = None) -> Model:
    """An inspect model for a verifier's spec, or a usage error saying why it cannot be one."""
    from inspect_ai.model import get_model

    key = f"{spec} {json.dumps(args or {}, sort_keys=True)}"
    if key in _models:
        return _models[key]
    provider, sep, name = spec.partition("/")
    if not sep or not provider or not name:
        raise HarnessUsageError(
            f"mas-prove: -T {what}={spec!r} needs the form PROVIDER/NAME, e.g. scripted/judge"
        )
    try:
        model = get_model(spec, **(args or {}))
    except HarnessUsageError as ex:
        raise HarnessUsageError(f"mas-prove: -T {what}: {ex}") from None
    except Exception as ex:  # inspect raises several types for a model it cannot make
        raise HarnessUsageError(
            f"mas-prove: -T {what}={spec!r} is not a model that can be used here "
            f"({type(ex).__name__}: {str(ex).splitlines()[0][:160]})"
        ) from None
    _models[key] = model
    return model


def resolve_scorer(spec: str) -> StepScorer:
    """A step scorer for the reward and process-reward verifiers (cached per spec)."""
    if spec not in _scorers:
        _scorers[spec] = make_scorer(spec)
    return _scorers[spec]


@dataclass(frozen=True)
class VerifierSpecs:
    """Which models the verifiers use."""

    judge_model: str  # the LLM judge's model spec
    reward_model: str  # the reward model's and PRM's scorer spec
    prm_reduction: Reduction  # min or prod
    judge_max_tokens: int | None  # the judge's output cap
    judge_args: dict[str, Any] = field(default_factory=dict)  # the judge model's arguments


def build_verifier(name: str, specs: VerifierSpecs) -> Verifier | None:
    """The verifier called `name` (None for `none`)."""
    if name == "none":
        return None
    if name == "oracle":
        return OracleVerifier()
    if name == "random":
        return RandomVerifier()
    if name == "majority":
        return MajorityVerifier()
    if name == "judge":
        judge = resolve_model(specs.judge_model, "judge_model", specs.judge_args)
        return JudgeVerifier(judge, max_tokens=specs.judge_max_tokens)
    if name == "reward":
        return RewardVerifier(resolve_scorer(specs.reward_model))
    if name == "prm":
        return ProcessRewardVerifier(resolve_scorer(specs.reward_model), specs.prm_reduction)
    raise ValueError(f"unknown verifier {name!r}; valid: {VERIFIERS}")


@dataclass(frozen=True)
class Grid:
    """The configurations a task runs."""

    patterns: tuple[str, ...]  # MAS patterns
    verifiers: tuple[str, ...]  # verifiers, `none` for the unverified baseline
    granularities: tuple[str, ...]  # agent, iteration
    contexts: tuple[str, ...]  # context strategies (for the verifiers that read context)

    def configs(self) -> list[tuple[str, str, str, str]]:
        """(pattern, verifier, granularity, context); `none` has one, with "-" for the rest."""
        out = []
        for pattern in self.patterns:
            for verifier in self.verifiers:
                if verifier == "none":
                    out.append((pattern, "none", "-", "-"))
                    continue
                contexts = self.contexts if verifier in READS_CONTEXT else self.contexts[:1]
                for granularity in self.granularities:
                    for context in contexts:
                        out.append((pattern, verifier, granularity, context))
        return out


def parse_grid(patterns: str, verifiers: str, granularities: str, contexts: str) -> Grid:
    """The grid from the task's `-T` lists, every item checked."""
    return Grid(
        parse_list(patterns, PATTERNS, "patterns"),
        parse_list(verifiers, VERIFIERS, "verifiers"),
        parse_list(granularities, GRANULARITIES, "granularities"),
        parse_list(contexts, CONTEXTS, "contexts"),
    )


def check_counts(n: int, **counts: int) -> None:
    """N and the other counts must be at least 1."""
    if n < 1:
        raise HarnessUsageError(f"mas-prove: -T n (candidates per search) must be >= 1, got {n}")
    for key, value in counts.items():
        if value < 1:
            raise HarnessUsageError(f"mas-prove: -T {key} must be at least 1, got {value}")
