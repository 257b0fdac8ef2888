"""Was this student distilled from a fingerprinted teacher? The radioactivity tests.

The student reads evaluation texts (its own training traces: supervised; fresh fingerprinted
traces: unsupervised). Each context c_t (the h tokens before position t) is kept at its first
occurrence in a fixed text order; n counts the kept contexts.

- Open mode (ADFP's code, `compute_pvalue`): v_c = sum_v q_S(v | prefix) m(c, v), the student's
  green mass; v-bar their mean; p = exp(-2 n (v-bar - gamma)^2) if v-bar > gamma, else 1
  (Hoeffding). Valid under H0 because the mask at c is never used before c's first occurrence,
  so v_c - gamma is a bounded supermartingale difference (Azuma; special tokens are always red,
  which only makes it conservative).
- Closed mode (ADFP's code): one student token sampled per kept context; its green indicator
  is the value; the same Hoeffding statistic, and the exact binomial p beside it.
- Reading mode (Sander et al.): the student's top-1 prediction at every position, scored once
  per (context, prediction) tuple; exact binomial p.

References:
    Sander et al., "Watermarking Makes Language Models Radioactive", arXiv 2402.14904.
    Xu et al., "Antidistillation Fingerprinting", arXiv 2602.03812.

"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from scipy import stats

from harness.suites.provenance.greenlist import GreenList

Mode = Literal["open", "closed", "reading"]
LN10 = math.log(10.0)


@dataclass(frozen=True)
class StudentReadings:
    """What a student predicts on a set of texts, independent of any key.

    Attributes:
        contexts: (n, h) each kept context, in first-occurrence order.
        probs: (n, V) the student's next-token distribution at that first occurrence.
        top_contexts: (m, h) contexts of the unique (context, top-1) tuples.
        top_tokens: (m,) the student's top-1 token of each.

    """

    contexts: np.ndarray
    probs: np.ndarray
    top_contexts: np.ndarray
    top_tokens: np.ndarray


@dataclass(frozen=True, slots=True)
class FingerprintTest:
    """One test of one student under one key.

    Attributes:
        mode: open, closed or reading.
        n: Contexts (or tuples) scored.
        mean: v-bar (open), the green share (closed, reading).
        excess: mean - gamma.
        p_value: Hoeffding (open, closed) or exact binomial (reading) p.
        neg_log10_p: -log10 p, from the exponent (no underflow).
        p_exact: The exact binomial p where the values are 0/1 (closed, reading); nan (open).

    """

    mode: Mode
    n: int
    mean: float
    excess: float
    p_value: float
    neg_log10_p: float
    p_exact: float = math.nan


@torch.no_grad()
def read_student(
    model: torch.nn.Module, texts: np.ndarray, start: int, h: int, batch: int = 100
) -> StudentReadings:
    """The student's predictions on texts (N, L) at positions start..L (the one after the end too).

    Position t's context is texts[:, t-h:t]; it needs t >= h.
    """
    texts = np.asarray(texts, dtype=np.int64)
    start = max(start, h)
    seen: set[tuple[int, ...]] = set()
    top_seen: set[tuple[int, ...]] = set()
    ctx_rows: list[tuple[int, ...]] = []
    prob_rows: list[np.ndarray] = []
    top_rows: list[tuple[int, ...]] = []
    for lo in range(0, texts.shape[0], batch):
        chunk = texts[lo : lo + batch]
        q = torch.softmax(model(torch.from_numpy(chunk)).float(), -1).numpy()  # (B, L, V)
        top = q.argmax(-1)  # (B, L)
        for row in range(chunk.shape[0]):
            for t in range(start, chunk.shape[1] + 1):
                ctx = tuple(chunk[row, t - h : t].tolist())
                pred = int(top[row, t - 1])
                if ctx not in seen:
                    seen.add(ctx)
                    ctx_rows.append(ctx)
                    prob_rows.append(q[row, t - 1])
                if (*ctx, pred) not in top_seen:
                    top_seen.add((*ctx, pred))
                    top_rows.append((*ctx, pred))
    vocab = int(q.shape[-1]) if texts.size else 0
    top = np.array(top_rows, dtype=np.int64).reshape(-1, h + 1)
    return StudentReadings(
        np.array(ctx_rows, dtype=np.int64).reshape(-1, h),
        np.stack(prob_rows) if prob_rows else np.zeros((0, vocab)),
        top[:, :h],
        top[:, h],
    )


def hoeffding(mean: float, n: int, gamma: float) -> tuple[float, float]:
    """(p, -log10 p) of exp(-2 n (mean - gamma)^2) when mean > gamma, else (1, 0)."""
    if n == 0 or mean <= gamma:
        return 1.0, 0.0
    exponent = 2.0 * n * (mean - gamma) ** 2
    return math.exp(-exponent), exponent / LN10


def _binomial(green: int, n: int, gamma: float) -> tuple[float, float]:
    if n == 0 or green == 0:
        return 1.0, 0.0
    log_p = float(stats.binom.logsf(green - 1, n, gamma))
    return math.exp(log_p), -log_p / LN10


def fingerprint_test(
    readings: StudentReadings,
    key: int,
    rule: GreenList,
    mode: Mode = "open",
    seed: int = 0,
) -> FingerprintTest:
    """Test the student's readings for the fingerprint of `key`."""
    gamma = rule.gamma
    if mode == "reading":
        n = readings.top_tokens.size
        keys = np.full(n, key, dtype=np.uint64)
        green = int(rule.is_green(keys, readings.top_contexts, readings.top_tokens).sum())
        p, nl = _binomial(green, n, gamma)
        mean = green / n if n else math.nan
        return FingerprintTest("reading", n, mean, mean - gamma, p, nl, p)
    n = readings.contexts.shape[0]
    mask = rule.mask(np.full(n, key, dtype=np.uint64), readings.contexts)  # (n, V)
    if mode == "open":
        mean = float((readings.probs * mask).sum(1).mean()) if n else math.nan
        p, nl = hoeffding(mean, n, gamma)
        return FingerprintTest("open", n, mean, mean - gamma, p, nl)
    if mode != "closed":
        raise ValueError(f"mode must be open, closed or reading, got {mode!r}")
    rng = np.random.default_rng(seed)
    cum = np.cumsum(readings.probs, axis=1)
    draw = np.minimum((cum < rng.random(n)[:, None] * cum[:, -1:]).sum(1), mask.shape[1] - 1)
    green = int(mask[np.arange(n), draw].sum())
    mean = green / n if n else math.nan
    p, nl = hoeffding(mean, n, gamma)
    return FingerprintTest("closed", n, mean, mean - gamma, p, nl, _binomial(green, n, gamma)[0])


def open_means(readings: StudentReadings, keys: np.ndarray, rule: GreenList) -> np.ndarray:
    """v-bar under each of many keys (K,), the readings shared: the false-positive sweep."""
    out = np.empty(len(keys))
    n = readings.contexts.shape[0]
    for i, key in enumerate(keys):
        mask = rule.mask(np.full(n, key, dtype=np.uint64), readings.contexts)
        out[i] = (readings.probs * mask).sum(1).mean()
    return out
