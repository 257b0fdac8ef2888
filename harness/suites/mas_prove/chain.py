"""The seeded arithmetic chain task: 3 to 6 dependent steps that `local/tiny-arith` can attempt.

A problem starts from a two-digit number and applies steps `op b` in turn, so step k reads the
value step k - 1 produced: `37`, `+25` -> 62, `-48` -> 14, `+19` -> 33. Every intermediate value
and every operand has two digits (10..99): tiny-arith was trained on operands of equal width
only, and gets `98+1=` wrong. A step is asked as the bare expression `62-48=`, tiny-arith's only
format.

The value a step is asked about is the one the system carried, not the true one: after a wrong
step, later steps work on the wrong number, and the chain is right only when its final value is.
A step is *correct* when its answer equals the exact result of its own expression (the oracle's
process label); the chain is correct when the final value equals the problem's answer.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

LOW, HIGH = 10, 99  # every intermediate value stays in this range (two digits)
_FIRST_INT = re.compile(r"-?\d+")


@dataclass(frozen=True)
class ChainProblem:
    """One chain: a start value and the steps applied to it."""

    id: str  # sample-independent problem id, `chain-N`
    start: int  # the first value, 10..99
    steps: tuple[tuple[str, int], ...]  # (operator "+" or "-", operand) per step
    answer: int  # the value after every step

    def values(self) -> list[int]:
        """The true value before each step and after the last: len(steps) + 1 numbers."""
        out = [self.start]
        for op, b in self.steps:
            out.append(apply(out[-1], op, b))
        return out

    def text(self) -> str:
        """The whole problem in words, for judges and logs."""
        ops = ", then ".join(f"{'add' if op == '+' else 'subtract'} {b}" for op, b in self.steps)
        return f"Start from {self.start}; {ops}. What is the result?"


def apply(value: int, op: str, b: int) -> int:
    """`value op b`."""
    if op == "+":
        return value + b
    if op == "-":
        return value - b
    raise ValueError(f"unknown operator {op!r}; valid: '+', '-'")


def make_chain(rng: random.Random, n_steps: int, number: int) -> ChainProblem:
    """A chain of `n_steps` steps whose operands and values all stay in 10..99."""
    if n_steps < 1:
        raise ValueError(f"n_steps must be at least 1, got {n_steps}")
    start = rng.randint(LOW, HIGH)
    value, steps = start, []
    for _ in range(n_steps):
        # "+" needs value + 10 <= 99, "-" needs value - 10 >= 10; one of them always holds
        ops = [op for op, ok in (("+", value + LOW <= HIGH), ("-", value - LOW >= LOW)) if ok]
        op = rng.choice(ops)
        b = rng.randint(LOW, HIGH - value) if op == "+" else rng.randint(LOW, value - LOW)
        steps.append((op, b))
        value = apply(value, op, b)
    return ChainProblem(f"chain-{number}", start, tuple(steps), value)


def make_chains(n: int, seed: int, min_steps: int = 3, max_steps: int = 6) -> list[ChainProblem]:
    """`n` chains from `seed`, each of `min_steps` to `max_steps` steps."""
    if not 1 <= min_steps <= max_steps:
        raise ValueError(f"need 1 <= min_steps <= max_steps, got {min_steps}, {max_steps}")
    rng = random.Random(f"mas-prove-chain-{seed}")
    return [make_chain(rng, rng.randint(min_steps, max_steps), i + 1) for i in range(n)]


def first_integer(text: str) -> int | None:
    """The first integer in a model's output (tiny-arith's answer), or None."""
    found = _FIRST_INT.search(text or "")
    return int(found.group(0)) if found else None
