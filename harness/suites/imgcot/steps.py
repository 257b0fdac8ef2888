"""Loose ImgCoT's key-step selection (reconstructed) and the token budget.

The paper keeps "a few key textual steps" chosen by low token log-likelihood next to the visual
latents (arXiv 2601.22730, abstract). The rule here is ours (specs/imgcot.md §2, reconstructed
step 4): step j's score is its mean token log-likelihood under an explicit-CoT model,
teacher-forced on the question and the previous steps,

    ℓ_j = (1/|s_j|) · Σ_t log p(s_{j,t} | q, s_{<j}, s_{j,<t}),

and the m steps with the smallest ℓ_j are kept, in their original order. Ties go to the
earlier step. `highest` (the m largest ℓ) and `random` are the spec's control arms.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Rule = Literal["lowest", "highest", "random"]
RULES: tuple[str, ...] = ("lowest", "highest", "random")


def step_scores(token_logprobs: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """ℓ_j for each step: the mean of its tokens' log-probabilities.

    Args:
        token_logprobs: Per step, the log-probability of each of its tokens.

    Raises:
        ValueError: A step with no tokens (its mean is undefined).

    """
    out = []
    for j, lps in enumerate(token_logprobs):
        if len(lps) == 0:
            raise ValueError(f"step {j} has no tokens; its mean log-likelihood is undefined")
        out.append(float(np.mean(np.asarray(lps, dtype=np.float64))))
    return tuple(out)


def select_steps(
    scores: Sequence[float], m: int, rule: Rule = "lowest", rng: random.Random | None = None
) -> tuple[int, ...]:
    """Indices of the m kept steps, in their original order.

    Args:
        scores: ℓ_j per step.
        m: How many steps to keep, 0 <= m <= len(scores).
        rule: `lowest` (Loose ImgCoT), `highest` or `random` (the controls).
        rng: The generator for `random` (required there).

    """
    n = len(scores)
    if not 0 <= m <= n:
        raise ValueError(f"m must be in 0..{n} (the number of steps), got {m}")
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if rule == "random":
        if rng is None:
            raise ValueError("rule 'random' needs a seeded rng")
        return tuple(sorted(rng.sample(range(n), m)))
    sign = 1.0 if rule == "lowest" else -1.0
    order = sorted(range(n), key=lambda j: (sign * scores[j], j))  # stable: earlier step first
    return tuple(sorted(order[:m]))


@dataclass(frozen=True)
class TokenBudget:
    """Tokens a hybrid sequence spends against the explicit CoT's."""

    latents: int  # k latent tokens
    text: int  # tokens of the kept textual steps
    cot: int  # tokens of the full explicit CoT

    @property
    def total(self) -> int:
        """Latents plus kept text."""
        return self.latents + self.text

    @property
    def compression(self) -> float:
        """Explicit CoT tokens per hybrid token (inf for an empty hybrid)."""
        return self.cot / self.total if self.total else float("inf")

    @property
    def below_cot(self) -> bool:
        """Whether the hybrid spends strictly fewer tokens than the CoT (spec §2 step 4)."""
        return self.total < self.cot


def token_budget(k: int, kept_lengths: Sequence[int], cot_length: int) -> TokenBudget:
    """The budget of k latents and the kept steps (their token counts) against the CoT."""
    if k < 0 or cot_length < 0 or any(n < 0 for n in kept_lengths):
        raise ValueError(f"token counts must be >= 0, got k={k}, kept={kept_lengths}, "
                         f"cot={cot_length}")  # fmt: skip
    return TokenBudget(k, int(sum(kept_lengths)), cot_length)
