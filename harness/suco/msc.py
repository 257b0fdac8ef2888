"""Minimal sufficient CoT (MSC): the first sentence prefix whose sufficiency reaches δ.

t* = the smallest t with S(z_{<=t}) >= δ(x) (secondhand, spec suco.md §2); taking the first such
t makes every shorter prefix fall below δ. When no prefix reaches δ, t* = argmax_t S(z_{<=t}),
ties broken towards the shorter prefix (the tie-break is ours).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MSCResult:
    """Where the minimal sufficient CoT ends."""

    t_star: int  # sentences in the MSC (0 = the empty CoT)
    score: float  # S(z_{<=t*})
    reached: bool  # S(z_{<=t*}) >= δ; False means the argmax fallback was taken

    def summary(self) -> str:
        """One line of text."""
        how = "reached" if self.reached else "not reached (argmax fallback)"
        return f"t* = {self.t_star}, S = {self.score:.4f}, threshold {how}"


def find_msc(scores: Sequence[float], delta: float) -> MSCResult:
    """The MSC for prefix scores `scores[t]` = S(z_{<=t}), t = 0..T (index 0 = empty CoT).

    Raises:
        ValueError: no scores, or a NaN score or threshold.

    """
    if len(scores) == 0:
        raise ValueError("find_msc needs the score of at least the empty prefix (t = 0)")
    values = [float(s) for s in scores]
    if math.isnan(delta) or any(math.isnan(s) for s in values):
        raise ValueError(f"find_msc: NaN in scores or threshold (delta={delta})")
    for t, s in enumerate(values):
        if s >= delta:
            return MSCResult(t, s, True)
    best = max(range(len(values)), key=lambda t: (values[t], -t))  # ties: the shorter prefix
    return MSCResult(best, values[best], False)
