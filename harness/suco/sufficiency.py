r"""SuCo's sufficiency score S(z | x, y*) and the text it is computed on.

S is the geometric mean of the teacher-forced probabilities of the gold answer's tokens after a
CoT prefix z (spec suco.md §2, secondhand from the paper): S = exp(mean_i log π(y*_i | x, z,
y*_{<i})).

The scoring template is **ours** (the paper's is unknown, spec §4). The calibrator reads

    context      = prompt + think_open + z + think_close + lead_in
    continuation = y* + answer_close

and only the continuation's tokens are scored. Defaults: `<think>`, `</think>`, the lead-in
`The final answer is \boxed{` and the closing `}`. The closing brace is scored with y* so that a
gold answer that is a prefix of the answer the model believes in ("4" against "46") is not
mistaken for a sufficient one; the price is one more, usually near-certain, token in the mean.
For a model without those characters (the character-level `local/tiny-arith`), set every part to
"" but the answer.

References:
    J. Wang et al., "SuCo: Sufficiency-guided Continuous Adaptive Reasoning", arXiv 2606.17687
    (2026).

"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from harness.suco.segment import prefixes

if TYPE_CHECKING:
    from harness.suco.calibrator import Calibrator

RECONSTRUCTED = (
    "SuCo scoring template, sentence splitter, delta0/alpha, R_correct/R_format values, the "
    "rollout t* and tie-breaks are ours (spec suco.md §4)"
)


def sufficiency(logprobs: Sequence[float]) -> float:
    """Geometric mean of the answer-token probabilities, exp(mean log p), in log space.

    Args:
        logprobs: Natural-log probabilities of the m answer tokens (m >= 1); `-inf` is allowed
            and gives 0.

    Raises:
        ValueError: no log-probabilities, or one is NaN or positive.

    """
    if len(logprobs) == 0:
        raise ValueError("sufficiency needs at least one answer-token log-probability")
    total = 0.0
    for lp in logprobs:
        lp = float(lp)
        if math.isnan(lp) or lp > 1e-6:  # a little slack for float32 log_softmax at p = 1
            raise ValueError(f"a log-probability must be <= 0 and not NaN, got {lp}")
        total += min(lp, 0.0)
    return math.exp(total / len(logprobs))


class ScoringText(NamedTuple):
    """One (context, continuation) pair for a calibrator; only the continuation is scored."""

    context: str  # prompt + think_open + z + think_close + lead_in
    continuation: str  # y* + answer_close


@dataclass(frozen=True, slots=True)
class ScoringTemplate:
    r"""The layout around the CoT prefix and the gold answer (ours; see the module docstring)."""

    think_open: str = "<think>"  # opens the CoT
    think_close: str = "</think>"  # closes the CoT
    lead_in: str = "The final answer is \\boxed{"  # text between the CoT and the answer
    answer_close: str = "}"  # scored together with the answer

    def text(self, prompt: str, cot: str, answer: str) -> ScoringText:
        """The (context, continuation) pair for CoT prefix `cot` and gold answer `answer`."""
        if not answer:
            raise ValueError("the gold answer is empty; there is nothing to score")
        context = prompt + self.think_open + cot + self.think_close + self.lead_in
        return ScoringText(context, answer + self.answer_close)


DEFAULT_TEMPLATE = ScoringTemplate()


def scoring_text(
    prompt: str, cot: str, answer: str, template: ScoringTemplate = DEFAULT_TEMPLATE
) -> ScoringText:
    """The (context, continuation) pair of the scoring template; see `ScoringTemplate`."""
    return template.text(prompt, cot, answer)


def score_prefixes(
    calibrator: Calibrator,
    prompt: str,
    cot: str,
    answer: str,
    template: ScoringTemplate = DEFAULT_TEMPLATE,
) -> list[float]:
    """S(z_{<=t}) for every sentence prefix t = 0..T of `cot` (index 0 is the empty CoT).

    `prompt` is passed through the calibrator's `render_prompt` (its chat template, if any).
    """
    context_prompt = calibrator.render_prompt(prompt)
    pairs = [template.text(context_prompt, z, answer) for z in prefixes(cot)]
    return [sufficiency(lps) for lps in calibrator.continuation_logprobs(pairs)]
