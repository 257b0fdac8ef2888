"""The real PDR and SR code paths on the toy improvement-operator model (specs/pdr.md §3, §5.2).

Exact values, derived in the spec by enumeration: PDR (8, 4, 1) 0.47213, SR with two refinements
0.42800, single pass 0.3. The default run uses 3,000 tasks per arm (the 3-SE window is about
+-0.027, and PDR - SR = 0.044 is 3.4 of its standard errors); the `long` run (`make test-long`,
about 6 minutes on 2 cores) uses the spec's 100,000.
"""

from __future__ import annotations

import math
import random

import anyio
import pytest
from inspect_ai.model import ChatMessageUser

from harness.models.methods.distill import DistillSettings
from harness.models.methods.refine_loop import RefineSettings, refine
from harness.models.methods.token_count import TokenCounter
from tests.models.methods.toy_operator import ToyOperator

PDR_EXACT, SR_EXACT, SINGLE = 0.47213, 0.42800, 0.3


def accuracy(schedule: tuple[int, ...], n: int, seed: int, **toy: float) -> float:
    """Share of n toy tasks the loop answers correctly."""
    model = ToyOperator(random.Random(seed), **toy)
    settings = RefineSettings(schedule, DistillSettings("global", 50), seed=seed)
    messages = [ChatMessageUser(content="toy problem")]

    async def run() -> int:
        hits = 0
        for _ in range(n):
            res = await refine(messages, settings, model, TokenCounter())
            hits += res.final.text == "ANSWER: correct"
        return hits

    return anyio.run(run) / n


def within_3se(p_hat: float, p: float, n: int) -> bool:
    return abs(p_hat - p) <= 3 * math.sqrt(p * (1 - p) / n)


def _check(n: int) -> None:
    pdr = accuracy((8, 4, 1), n, seed=11)
    sr = accuracy((1, 1, 1), n, seed=12)
    single = accuracy((1,), n, seed=13)
    assert within_3se(pdr, PDR_EXACT, n), pdr
    assert within_3se(sr, SR_EXACT, n), sr
    assert within_3se(single, SINGLE, n), single
    assert pdr > sr > single
    # a workspace that carries no information gives no gain
    flat = accuracy((8, 4, 1), n, seed=14, p_hit=0.3, p_miss=0.3)
    assert within_3se(flat, SINGLE, n), flat


def test_toy_operator_matches_the_exact_accuracies():
    _check(3_000)


@pytest.mark.long
def test_toy_operator_matches_the_exact_accuracies_at_spec_scale():
    _check(100_000)
