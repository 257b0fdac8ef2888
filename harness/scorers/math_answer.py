"""A scorer for problems whose answer is a number: extraction, then `math-verify`."""

from __future__ import annotations

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from harness.answer_extraction import EXTRACTION_MODES, ExtractionMode, extract_answer


def answers_match(extracted: str, target: str) -> bool:
    """Whether `math-verify` finds the extracted answer equal to the target."""
    from math_verify import parse, verify

    gold = parse(f"${target}$")
    pred = parse(f"${extracted}$")
    if not gold or not pred:
        return False
    return bool(verify(gold, pred))


@scorer(metrics=[accuracy(), stderr()])
def math_answer(*, extraction: ExtractionMode = "boxed_or_int") -> Scorer:
    """Score the completion by its extracted final answer, checked with `math-verify`.

    Args:
        extraction: How to find the answer; see `harness.answer_extraction`.

    """
    if extraction not in EXTRACTION_MODES:
        raise ValueError(f"unknown extraction {extraction!r}; valid: {EXTRACTION_MODES}")

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        extracted = extract_answer(text or "", extraction)
        correct = extracted is not None and answers_match(extracted, target.text)
        return Score(
            value=CORRECT if correct else INCORRECT,
            answer=extracted,
            explanation=text[-300:] if text else "(no output)",
            metadata={"extraction": extraction},
        )

    return score
