"""Synthetic seq2seq tasks for the tiny block-diffusion MoE: reverse, sort and addition.

A sequence is `TASK digits > answer EOS PAD…`, 32 tokens, from a vocabulary of 18 (ours; the
spec's §6 model had 17). Reverse and sort take 3-12 digits; addition takes two numbers of up to
5 digits written `a + b` (the spec measured that it does not learn in the CPU budget; it stays
for fidelity).
Everything is drawn from a seed. Test prompts come from a generator stream of their own and are
distinct from each other; they are not checked against the training stream, so a short prompt
(there are only 10^3 three-digit reversals) may also have been seen in training.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

DIGITS = [str(i) for i in range(10)]
VOCAB = [*DIGITS, "+", ">", "R", "S", "A", "<eos>", "<pad>", "<mask>"]  # 18 ids
# ids of the special tokens
PLUS, SEP, REV, SORT, ADD, EOS, PAD, MASK = (VOCAB.index(t) for t in VOCAB[10:])
SEQ_LEN = 32
TASKS = ("reverse", "sort", "add")


@dataclass(frozen=True)
class Example:
    """One problem: the prompt ids and the answer ids (EOS included, PAD excluded)."""

    task: str  # reverse, sort or add
    prompt: tuple[int, ...]  # TASK digits > (ends with SEP)
    answer: tuple[int, ...]  # answer digits, then EOS

    def sequence(self, length: int = SEQ_LEN) -> list[int]:
        """Prompt, answer and padding: the full training sequence."""
        seq = [*self.prompt, *self.answer]
        return seq + [PAD] * (length - len(seq))


def _digits(g: torch.Generator, lo: int, hi: int) -> list[int]:
    n = int(torch.randint(lo, hi + 1, (1,), generator=g))
    return torch.randint(0, 10, (n,), generator=g).tolist()


def make_example(task: str, g: torch.Generator) -> Example:
    """Draw one problem of `task`."""
    if task == "reverse":
        xs = _digits(g, 3, 12)
        return Example(task, (REV, *xs, SEP), (*xs[::-1], EOS))
    if task == "sort":
        xs = _digits(g, 3, 12)
        return Example(task, (SORT, *xs, SEP), (*sorted(xs), EOS))
    if task == "add":
        a, b = (int(torch.randint(0, 100_000, (1,), generator=g)) for _ in range(2))
        enc = [int(c) for c in str(a)], [int(c) for c in str(b)]
        return Example(task, (ADD, *enc[0], PLUS, *enc[1], SEP),
                       (*[int(c) for c in str(a + b)], EOS))  # fmt: skip
    raise ValueError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")


def training_batch(
    g: torch.Generator, batch: int, tasks: tuple[str, ...] = TASKS
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of sequences (B, 32) and their prompt lengths (B,), tasks drawn uniformly."""
    rows, plens = [], []
    for _ in range(batch):
        task = tasks[int(torch.randint(0, len(tasks), (1,), generator=g))]
        ex = make_example(task, g)
        rows.append(ex.sequence())
        plens.append(len(ex.prompt))
    return torch.tensor(rows), torch.tensor(plens)


def eval_prompts(seed: int, n: int, tasks: tuple[str, ...] = TASKS) -> list[Example]:
    """`n` distinct test problems for a seed, tasks in turn."""
    g = torch.Generator().manual_seed(7_000_000 + seed)
    seen: set[tuple[int, ...]] = set()
    out: list[Example] = []
    while len(out) < n:
        ex = make_example(tasks[len(out) % len(tasks)], g)
        if ex.prompt not in seen:
            seen.add(ex.prompt)
            out.append(ex)
    return out


def render(ids: list[int] | tuple[int, ...]) -> str:
    """Readable text of ids."""
    return "".join(VOCAB[i] if len(VOCAB[i]) == 1 else f" {VOCAB[i]} " for i in ids).strip()
