"""The §5 task (ours, specs/imgcot.md §5): three mod-10 operations and their chain of thought.

A problem starts at x₀ ∈ 0..9 and applies three operations (op ∈ {+, −, ×}, operand 1..9), each
mod 10. The question is `x₀ op₁ b₁ op₂ b₂ op₃ b₃`; the chain of thought is three steps joined by
";", each written in one of two surface forms drawn at random, "x op b = y" or "y = x op b"
(the same content in another word order); the answer is y₃. Every step is 5 tokens, so every
CoT is 17 tokens. The vocabulary is the 10 digits, + − × = ; and 3 specials: 18 tokens.
Everything here is reconstructed (the paper's datasets were not read).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DIGITS = tuple(str(d) for d in range(10))
OPS = ("+", "−", "×")
VOCAB = (*DIGITS, *OPS, "=", ";", "<pad>", "<think>", "<ans>")
TOKEN = {t: i for i, t in enumerate(VOCAB)}
PAD, THINK, ANS, SEMI = TOKEN["<pad>"], TOKEN["<think>"], TOKEN["<ans>"], TOKEN[";"]
STEPS = 3  # operations per problem
STEP_LEN = 5  # tokens per step, in either surface form
COT_LEN = STEPS * STEP_LEN + STEPS - 1  # 17: the steps and the ";" between them
QUESTION_LEN = 1 + 2 * STEPS  # 7: x₀ op₁ b₁ op₂ b₂ op₃ b₃


def apply(x: int, op: str, b: int) -> int:
    """One operation, mod 10."""
    if op == "+":
        return (x + b) % 10
    if op == "−":
        return (x - b) % 10
    if op == "×":
        return (x * b) % 10
    raise ValueError(f"unknown operation {op!r}; operations: {', '.join(OPS)}")


@dataclass(frozen=True)
class Problem:
    """One problem: its question, its steps (as tokens, in their surface form) and its answer."""

    question: tuple[str, ...]  # x₀ op₁ b₁ op₂ b₂ op₃ b₃
    steps: tuple[tuple[str, ...], ...]  # each step's 5 tokens, "x op b = y" or "y = x op b"
    answer: int  # y₃

    @property
    def cot(self) -> tuple[str, ...]:
        """The chain of thought's tokens: the steps joined by ";"."""
        out: list[str] = []
        for j, step in enumerate(self.steps):
            out += ([";"] if j else []) + list(step)
        return tuple(out)

    @property
    def cot_text(self) -> str:
        """The CoT as rendered: one step per line, no spaces."""
        return "\n".join("".join(step) for step in self.steps)


def make_problem(rng: random.Random) -> Problem:
    """One problem from a seeded generator."""
    x = rng.randrange(10)
    question, steps = [str(x)], []
    for _ in range(STEPS):
        op, b = rng.choice(OPS), rng.randint(1, 9)
        y = apply(x, op, b)
        question += [op, str(b)]
        forward = rng.random() < 0.5  # the surface form: linguistic variation, same content
        step = (str(x), op, str(b), "=", str(y)) if forward else (str(y), "=", str(x), op, str(b))
        steps.append(step)
        x = y
    return Problem(tuple(question), tuple(steps), x)


def make_problems(seed: int, n_train: int, n_test: int) -> tuple[list[Problem], list[Problem]]:
    """The seed's training and test problems, drawn independently.

    A test problem may repeat one seen in training, as in any finite draw from 2,430 questions
    × 8 surface forms.
    """
    rng = random.Random(f"imgcot-problems-{seed}")
    train = [make_problem(rng) for _ in range(n_train)]
    test = [make_problem(rng) for _ in range(n_test)]
    return train, test


def encode(tokens: tuple[str, ...] | list[str]) -> list[int]:
    """Token ids."""
    return [TOKEN[t] for t in tokens]
