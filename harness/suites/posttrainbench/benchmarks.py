"""The CPU instance's benchmarks: tiny tasks made from a seed, with fixed held-out splits.

- `add2`: two-digit addition, `Q: 23+45=?` answered `68` (exact match).
- `copyfmt`: template following, `Q: bracket kolp` answered `[kolp]`, with the templates
  bracket `[w]`, paren `(w)` and angle `<w>`.

Each benchmark's items are split once, by a fixed seed, into `train` (the agent gets it),
`val` (the agent's `evaluate.py` scores on it) and `test` (only the pristine evaluator sees
it). The splits are disjoint as strings. A model's answer is its completion up to the first
newline, stripped; it must equal the target exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

PROMPT = "Q: {question}\nA: "
SPLIT_SEED = 20260308  # fixed: every run of the suite sees the same splits
TEST_SIZE = 100
VAL_SIZE = 50
_FORMATS = {"bracket": "[{}]", "paren": "({})", "angle": "<{}>"}
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class Item:
    """One benchmark item."""

    id: str  # stable id, e.g. "add2-test-007"
    prompt: str  # the full prompt the model sees
    target: str  # the exact answer


@dataclass(frozen=True)
class Splits:
    """A benchmark's three disjoint splits."""

    name: str  # benchmark name
    train: tuple[Item, ...]  # given to the agent
    val: tuple[Item, ...]  # scored by the agent's evaluate.py
    test: tuple[Item, ...]  # scored by the pristine evaluator only


def _add2(rng: random.Random) -> list[tuple[str, str]]:
    pairs = [(a, b) for a in range(10, 100) for b in range(10, 100)]
    return [(f"{a}+{b}=?", str(a + b)) for a, b in pairs]


def _copyfmt(rng: random.Random) -> list[tuple[str, str]]:
    words: set[str] = set()
    while len(words) < 1200:
        words.add("".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 6))))
    out = []
    for word in sorted(words):
        name = rng.choice(sorted(_FORMATS))
        out.append((f"{name} {word}", _FORMATS[name].format(word)))
    return out


MAKERS: dict[str, Callable[[random.Random], list[tuple[str, str]]]] = {
    "add2": _add2,
    "copyfmt": _copyfmt,
}
BENCHMARKS = tuple(MAKERS)


@cache
def splits(name: str) -> Splits:
    """The fixed train/val/test splits of benchmark `name`."""
    if name not in MAKERS:
        raise ValueError(f"unknown benchmark {name!r}; benchmarks: {', '.join(BENCHMARKS)}")
    rng = random.Random(f"{SPLIT_SEED}-{name}")
    pairs = MAKERS[name](rng)
    rng.shuffle(pairs)

    def items(part: str, chunk: list[tuple[str, str]]) -> tuple[Item, ...]:
        return tuple(
            Item(f"{name}-{part}-{i:04d}", PROMPT.format(question=q), a)
            for i, (q, a) in enumerate(chunk)
        )

    test = items("test", pairs[:TEST_SIZE])
    val = items("val", pairs[TEST_SIZE : TEST_SIZE + VAL_SIZE])
    train = items("train", pairs[TEST_SIZE + VAL_SIZE :])
    return Splits(name, train, val, test)


def answer_of(completion: str) -> str:
    """The model's answer: its completion up to the first newline, stripped."""
    return completion.split("\n", 1)[0].strip()


def rows(items: tuple[Item, ...]) -> list[dict[str, str]]:
    """Items as `{"prompt", "completion"}` rows, the JSONL format of `sft.py`."""
    return [{"prompt": i.prompt, "completion": i.target} for i in items]
