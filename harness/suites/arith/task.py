"""Suite `arith` (embedded default): seeded multi-digit addition and subtraction.

Each problem is `a+b=` or `a-b=` with operands of exactly `difficulty` digits; the answer is the
exact integer, negative when a subtraction goes below zero. The model's answer is the first
integer in its output. Problems are made from `seed`, so no data is downloaded. It pairs with
`local/tiny-arith`, a character-level model trained on the same format.
"""

from __future__ import annotations

import random
import re

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate

from harness.errors import HarnessUsageError
from harness.models.sample_context import bind_sample
from harness.models.tiny_arith_data import make_problem
from harness.suites.arg_ranges import checked_args, count

_FIRST_INT = re.compile(r"-?\d+")


@scorer(metrics=[accuracy(), stderr()])
def first_integer_match() -> Scorer:
    """Correct when the first integer in the output equals the target exactly."""

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        found = _FIRST_INT.search(text or "")
        answer = found.group(0) if found else None
        ok = answer is not None and int(answer) == int(target.text)
        return Score(value=CORRECT if ok else INCORRECT, answer=answer, explanation=text)

    return score


@task
@checked_args(ranges=dict(difficulty=count(8), n=count(1_000_000)))
def arith(
    difficulty: int = 2, n: int = 200, seed: int = 0, ops: str = "+-", max_tokens: int | None = None
) -> Task:
    """Addition and subtraction of two `difficulty`-digit numbers, `n` problems from `seed`.

    Args:
        difficulty: Digits per operand, 1 to 8.
        n: Number of problems.
        seed: Seed of the problem generator.
        ops: Operators to draw from, `+` and/or `-`.
        max_tokens: Cap on generated tokens; the default, difficulty + 3, fits the answer and an
            end token. Chatty models need more.

    """
    if not 1 <= difficulty <= 8:
        raise HarnessUsageError(f"arith: difficulty must be 1..8 digits, got {difficulty}")
    if n < 1:
        raise HarnessUsageError(f"arith: n must be at least 1, got {n}")
    if not ops or set(ops) - {"+", "-"}:
        raise HarnessUsageError(f"arith: ops must be made of '+' and '-', got {ops!r}")
    rng = random.Random(f"arith-{seed}-{difficulty}")
    samples = []
    for i in range(n):
        prompt, answer = make_problem(rng, difficulty, ops)
        samples.append(Sample(id=f"arith-{i + 1}", input=prompt, target=answer))
    return Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), generate()],
        scorer=first_integer_match(),
        # an answer has at most difficulty + 2 characters (sign, carry); leave room for an end token
        config=GenerateConfig(max_tokens=max_tokens or difficulty + 3, temperature=0.0),
        metadata={"suite": "arith", "difficulty": difficulty, "seed": seed},
    )
