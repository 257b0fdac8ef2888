"""The synthetic source: an order-1 sparse Markov chain over word tokens (ours, spec §5).

250 word tokens plus BOS and EOS in a vocabulary of 256 (ids 252-255 unused). Every word has
`successors` possible next words with Dirichlet(1) weights drawn from the seed; the first word
is uniform. Its exact next-token distributions make it a teacher too (`MarkovTeacher`), and
its exact negative log-likelihood a utility measure (an off-support token counts as an error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

WORDS = 250
BOS, EOS = 250, 251
VOCAB = 256
SPECIAL = (BOS, EOS, 252, 253, 254, 255)  # always red


@dataclass(frozen=True)
class MarkovSource:
    """Transition matrix and sampler of the source.

    Attributes:
        transition: (VOCAB, VOCAB) next-token probabilities; rows of non-words are uniform
            over words.
        seed: The seed it was drawn from.

    """

    transition: np.ndarray
    seed: int

    @property
    def entropy_bits(self) -> float:
        """Mean next-token entropy under the stationary distribution, bits."""
        p = self.transition[:WORDS, :WORDS]
        with np.errstate(divide="ignore", invalid="ignore"):
            rows = -np.where(p > 0, p * np.log2(p), 0.0).sum(1)
        vals, vecs = np.linalg.eig(p.T)
        pi = np.abs(np.real(vecs[:, np.argmin(np.abs(vals - 1))]))
        return float((pi / pi.sum()) @ rows)

    def sample(self, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """Sample n texts of `length` word tokens (N, L)."""
        out = np.empty((n, length), dtype=np.int64)
        out[:, 0] = rng.integers(0, WORDS, n)
        cum = np.cumsum(self.transition, axis=1)
        for t in range(1, length):
            u = rng.random(n)[:, None]
            out[:, t] = np.minimum((u > cum[out[:, t - 1]]).sum(1), WORDS - 1)
        return out

    def nll(self, tokens: np.ndarray, start: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Per-token NLL (nats) of tokens[:, start:] and an off-support flag (NLL then inf)."""
        tokens = np.asarray(tokens)
        p = self.transition[tokens[:, start - 1 : -1], tokens[:, start:]]
        with np.errstate(divide="ignore"):
            return -np.log(p), p == 0


def make_source(seed: int = 0, successors: int = 4) -> MarkovSource:
    """The source of a seed: each word's successors and their Dirichlet(1) weights."""
    rng = np.random.default_rng(seed)
    transition = np.zeros((VOCAB, VOCAB))
    for word in range(WORDS):
        nxt = rng.choice(WORDS, size=successors, replace=False)
        transition[word, nxt] = rng.dirichlet(np.ones(successors))
    transition[WORDS:, :WORDS] = 1.0 / WORDS
    return MarkovSource(transition, seed)


class MarkovTeacher:
    """The source as a teacher: exact next-token logits (log-probabilities, -inf off support)."""

    def __init__(self, source: MarkovSource) -> None:
        """Logits of every row of the source."""
        with np.errstate(divide="ignore"):
            self.logits = torch.from_numpy(np.log(source.transition)).float()  # (V, V)

    def start(self, prefix: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Next-token logits after a prefix (B, P)."""
        return self.logits[prefix[:, -1]], None

    def step(self, state: Any, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Next-token logits after one more token per row."""
        return self.logits[tokens], None


def perplexity(nll: np.ndarray) -> float:
    """exp(mean NLL); inf when any token is off support."""
    mean = float(np.mean(nll))
    return math.exp(mean) if math.isfinite(mean) else math.inf
