"""Seeded addition and subtraction problems: tiny-arith trains on them, `arith` asks them."""

from __future__ import annotations

import random


def make_problem(rng: random.Random, digits: int, ops: str = "+-") -> tuple[str, str]:
    """One problem with operands of exactly `digits` digits (1 digit: 0-9).

    Returns:
        The prompt (for example `"123+456="`) and the answer as a decimal string, which is
        negative when a subtraction goes below zero.

    """
    low = 0 if digits == 1 else 10 ** (digits - 1)
    high = 10**digits - 1
    a, b = rng.randint(low, high), rng.randint(low, high)
    op = rng.choice(ops)
    answer = a + b if op == "+" else a - b
    return f"{a}{op}{b}=", str(answer)
