"""The toy improvement-operator model of specs/pdr.md §3, as a fake inner model for the real loop.

Answers come from {correct, d1, d2, d3}. A draft with no workspace is correct with p0; with a
workspace it is correct with p_hit when the workspace's answer is the correct one and p_miss
otherwise; wrong mass is spread evenly over the distractors. Distill is a plurality vote over the
drafts, ties broken uniformly at random.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass

from inspect_ai.model import ChatMessage, GenerateConfig

from harness.models.methods.refine_loop import CallOutput

ANSWERS = ("correct", "d1", "d2", "d3")
_ANSWER = re.compile(r"ANSWER: (\w+)")


@dataclass
class ToyOperator:
    """A stochastic fake `CallFn`."""

    rng: random.Random
    p0: float = 0.3
    p_hit: float = 0.8
    p_miss: float = 0.2

    def _draw(self, p_correct: float) -> str:
        if self.rng.random() < p_correct:
            return "correct"
        return self.rng.choice(ANSWERS[1:])

    async def __call__(self, messages: list[ChatMessage], config: GenerateConfig) -> CallOutput:
        text = messages[-1].text
        if text.startswith("You are given a problem"):  # the distill prompt: plurality vote
            counts = Counter(_ANSWER.findall(text.split("Problem:", 1)[1]))
            top = max(counts.values())
            answer = self.rng.choice(sorted(a for a, c in counts.items() if c == top))
            return CallOutput(f"ANSWER: {answer}", 1, 1)
        if "<workspace>" in text:
            ws = text.split("<workspace>", 1)[1].split("</workspace>", 1)[0]
            p = self.p_hit if "ANSWER: correct" in ws else self.p_miss
        else:
            p = self.p0
        return CallOutput(f"ANSWER: {self._draw(p)}", 1, 1)
