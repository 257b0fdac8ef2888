"""SAPO's reward: correctness, format and the sufficiency reward R_suff (spec suco.md §2).

R = R_correct + R_format + β·R_suff, with β = 1.0 and

    R_suff = -λ_over·1[L_z > t* + ε] - λ_under·1[y != y*]·1[L_z < t*]

where L_z is the rollout's reasoning length in sentences, λ_over = λ_under = 0.5 and ε = 2
(secondhand). Under-thinking is penalised only when the answer is wrong.

Ours (spec §4): R_correct in {0, 1} and R_format in {0, -1}; a rollout whose prefixes never
reach δ has t* = ∞, so it gets no over-penalty and the under-penalty if its answer is wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def sufficiency_reward(
    length: int,
    t_star: float,
    correct: bool,
    eps: float = 2,
    lam_over: float = 0.5,
    lam_under: float = 0.5,
) -> float:
    """R_suff for a rollout of `length` sentences whose sufficiency point is `t_star` (or inf)."""
    if math.isnan(t_star) or t_star < 0 or length < 0:
        raise ValueError(f"need length >= 0 and t_star >= 0 (or inf), got {length}, {t_star}")
    over = length > t_star + eps
    under = (not correct) and length < t_star
    return 0.0 - lam_over * over - lam_under * under  # 0.0 first: no -0.0


@dataclass(frozen=True, slots=True)
class SapoReward:
    """A SAPO reward and its parts."""

    total: float  # r_correct + r_format + beta * r_suff
    r_correct: float  # 1 if the answer is right, else 0 (ours)
    r_format: float  # 0 if the format is right, else -1 (ours)
    r_suff: float  # the sufficiency reward, before beta
    beta: float  # weight of r_suff

    def summary(self) -> str:
        """One line of text."""
        return (f"R = {self.total:+.3f} (correct {self.r_correct:+.0f}, format "
                f"{self.r_format:+.0f}, {self.beta:g} x suff {self.r_suff:+.3f})")  # fmt: skip


def sapo_reward(
    correct: bool,
    format_ok: bool,
    length: int,
    t_star: float,
    beta: float = 1.0,
    eps: float = 2,
    lam_over: float = 0.5,
    lam_under: float = 0.5,
) -> SapoReward:
    """R = R_correct + R_format + β·R_suff for one rollout; see the module docstring."""
    r_correct = 1.0 if correct else 0.0
    r_format = 0.0 if format_ok else -1.0
    r_suff = sufficiency_reward(length, t_star, correct, eps, lam_over, lam_under)
    return SapoReward(r_correct + r_format + beta * r_suff, r_correct, r_format, r_suff, beta)
