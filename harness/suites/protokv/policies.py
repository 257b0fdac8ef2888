"""KV-cache policies for a frame stream: ProtoKV and the token-retention baselines.

Every policy sees frames of P tokens one at a time (`observe`) and shows attention a set of
keys, values and additive logit biases (`exposed`). At a matched budget of M frames each keeps
at most M·P entries once the stream is longer than M frames (the full cache keeps all).

Baselines, from the formulas the spec names (specs/protokv.md §2):
- `SlidingWindow`: the last M frames (the authors' `swa`).
- `SinkWindow`: the first `sink` tokens plus the most recent M·P − sink (StreamingLLM's
  `StartRecentKVCache`, start_size + recent_size).
- `HeavyHitters`: H2O, half heavy hitters (largest accumulated attention received) and half
  recent tokens. Ours (reconstructed): a stream has no queries, so each incoming token's
  softmax attention over the cache (scaled dot product, the frame's own tokens included) is
  what accumulates.
- `UniformThinning`: evenly spaced tokens, re-applied whenever the cache exceeds the budget
  (the authors' `uniform`).
- `ProtoKVCache`: an exact near window of W frames and a `ProtoBank` of K prototypes shown as
  K·S pseudo-frames, laid out [pseudo-frames | near frames]; compression starts once the cache
  holds more than M frames.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from harness.suites.protokv.bank import BankConfig, Budget, ProtoBank, PseudoFrames


@dataclass(frozen=True, slots=True)
class Exposed:
    """What attention sees."""

    keys: np.ndarray  # (N, D)
    values: np.ndarray  # (N, D)
    bias: np.ndarray  # (N,) additive logit bias (0 for exact tokens)

    @property
    def size(self) -> int:
        """Exposed KV entries."""
        return len(self.keys)


def _exact(keys: np.ndarray, values: np.ndarray) -> Exposed:
    return Exposed(keys, values, np.zeros(len(keys)))


class FullCache:
    """Every frame (the reference, no budget)."""

    def __init__(self) -> None:
        """An empty cache."""
        self.keys: list[np.ndarray] = []
        self.values: list[np.ndarray] = []

    def observe(self, keys: np.ndarray, values: np.ndarray, t: int) -> None:
        """Add a frame of (P, D) keys and values."""
        self.keys.append(keys)
        self.values.append(values)

    def exposed(self) -> Exposed:
        """All tokens."""
        return _exact(np.concatenate(self.keys), np.concatenate(self.values))


class SlidingWindow(FullCache):
    """The last M frames."""

    def __init__(self, frames: int) -> None:
        """A window of `frames` frames."""
        self.keys = deque(maxlen=frames)  # type: ignore[assignment]
        self.values = deque(maxlen=frames)  # type: ignore[assignment]


class _TokenCache:
    """A cache of single tokens with a budget; subclasses choose what to drop."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.keys = np.zeros((0, 0))
        self.values = np.zeros((0, 0))

    def _append(self, keys: np.ndarray, values: np.ndarray) -> None:
        if self.keys.size == 0:
            self.keys, self.values = keys.copy(), values.copy()
        else:
            self.keys = np.concatenate([self.keys, keys])
            self.values = np.concatenate([self.values, values])

    def _keep(self, index: np.ndarray) -> None:
        self.keys, self.values = self.keys[index], self.values[index]

    def exposed(self) -> Exposed:
        """The kept tokens, in stream order."""
        return _exact(self.keys, self.values)


class SinkWindow(_TokenCache):
    """StreamingLLM: the first `sink` tokens and the most recent budget − sink."""

    def __init__(self, budget: int, sink: int) -> None:
        """`budget` tokens, `sink` of them the stream's first."""
        if not 0 <= sink < budget:
            raise ValueError(f"sink must lie in [0, budget), got {sink} of {budget}")
        super().__init__(budget)
        self.sink = sink

    def observe(self, keys: np.ndarray, values: np.ndarray, t: int) -> None:
        """Add a frame, then drop the oldest tokens after the sinks."""
        self._append(keys, values)
        n = len(self.keys)
        if n > self.budget:
            recent = self.budget - self.sink
            self._keep(np.r_[np.arange(self.sink), np.arange(n - recent, n)])


class UniformThinning(_TokenCache):
    """Evenly spaced tokens of the cache, re-chosen whenever it exceeds the budget."""

    def observe(self, keys: np.ndarray, values: np.ndarray, t: int) -> None:
        """Add a frame, then keep tokens ⌊i·n/budget⌋, i < budget (the authors' `uniform`)."""
        self._append(keys, values)
        n = len(self.keys)
        if n > self.budget:
            self._keep(np.minimum((np.arange(self.budget) * (n / self.budget)).astype(int), n - 1))


class HeavyHitters(_TokenCache):
    """H2O: `heavy` tokens of largest accumulated attention plus the most recent rest."""

    def __init__(self, budget: int, heavy: int) -> None:
        """`budget` tokens, `heavy` of them heavy hitters (H2O's default: half)."""
        if not 0 <= heavy <= budget:
            raise ValueError(f"heavy must lie in [0, budget], got {heavy} of {budget}")
        super().__init__(budget)
        self.heavy = heavy
        self.scores = np.zeros(0)

    def observe(self, keys: np.ndarray, values: np.ndarray, t: int) -> None:
        """Add a frame; its tokens' attention over the cache accumulates; evict to budget."""
        self._append(keys, values)
        self.scores = np.r_[self.scores, np.zeros(len(keys))]
        logits = keys @ self.keys.T / math.sqrt(keys.shape[1])  # (P, N)
        logits -= logits.max(axis=1, keepdims=True)
        w = np.exp(logits)
        self.scores += (w / w.sum(axis=1, keepdims=True)).sum(axis=0)
        n = len(self.keys)
        if n > self.budget:
            recent = self.budget - self.heavy
            older = n - recent
            top = np.argsort(-self.scores[:older], kind="stable")[: self.heavy]
            index = np.r_[np.sort(top), np.arange(older, n)].astype(int)
            self._keep(index)
            self.scores = self.scores[index]


class ProtoKVCache:
    """ProtoKV: W exact near frames and a bank of K prototypes (K·S pseudo-frames)."""

    def __init__(self, budget: Budget, config: BankConfig, tokens: int, dim: int) -> None:
        """Budget M = W + K·S frames of `tokens` tokens of dimension `dim`."""
        if config.prototypes != budget.prototypes or config.modes != budget.modes:
            raise ValueError("the bank's K and S must be the budget's")
        self.budget = budget
        self.bank = ProtoBank(config, tokens, dim)
        self.near: deque[tuple[np.ndarray, np.ndarray, int]] = deque()
        self.compressing = False

    def observe(self, keys: np.ndarray, values: np.ndarray, t: int) -> None:
        """Add frame t; past M frames, evict the oldest into the bank down to W near frames."""
        self.near.append((keys, values, t))
        if not self.compressing and len(self.near) > self.budget.frames:
            self.compressing = True
        if not self.compressing:
            return
        while len(self.near) > self.budget.window:
            fk, fv, tf = self.near.popleft()
            self.bank.absorb(fk, fv, tf)
        newest = self.near[-1]
        self.bank.maintain(t + 1, (newest[0], newest[1]))  # t + 1: the frames seen so far

    def exposed(self, *, residuals: bool = True, bias: bool = True) -> Exposed:
        """[pseudo-frames | near frames]; before compression, the exact frames only."""
        near_k = np.concatenate([k for k, _, _ in self.near])
        near_v = np.concatenate([v for _, v, _ in self.near])
        if not self.compressing:
            return _exact(near_k, near_v)
        pseudo = self.bank.synthesise(residuals=residuals, bias=bias)
        return _layout(pseudo, near_k, near_v)

    def views(self) -> dict[str, Exposed]:
        """ProtoKV and its two ablations at once (the residual modes decoded once)."""
        if not self.compressing:
            return dict.fromkeys(("protokv", "protokv-no-residual", "protokv-no-bias"),
                                 self.exposed())  # fmt: skip
        near_k = np.concatenate([k for k, _, _ in self.near])
        near_v = np.concatenate([v for _, v, _ in self.near])
        full = self.bank.synthesise()
        plain = self.bank.synthesise(residuals=False)
        unbiased = PseudoFrames(full.keys, full.values, np.zeros_like(full.bias))
        return {"protokv": _layout(full, near_k, near_v),
                "protokv-no-residual": _layout(plain, near_k, near_v),
                "protokv-no-bias": _layout(unbiased, near_k, near_v)}  # fmt: skip


def _layout(pseudo: PseudoFrames, near_k: np.ndarray, near_v: np.ndarray) -> Exposed:
    """[pseudo-frames | near frames], the bias zero on the near tokens."""
    keys = np.concatenate([pseudo.keys, near_k])
    values = np.concatenate([pseudo.values, near_v])
    return Exposed(keys, values, np.r_[pseudo.bias, np.zeros(len(near_k))])
