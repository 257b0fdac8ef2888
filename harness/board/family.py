"""The stopping rule for a family of model pairs, fed one item at a time.

`PairFamily` is what `harness board replay` runs on each order, and what a live run that stops
when its comparisons are decided can run as items come back: give it each item's scores for the
models still being asked, read which models are still to be asked and how each pair stands.

- Each pair (a, b), a before b in the order given, has a betting confidence sequence for the
  mean of a - b (`harness.stats.sequential.BettingCS`) at alpha / pairs: Bonferroni over
  confidence sequences, so all pairs cover at once, at every item count, with probability
  >= 1 - alpha, whenever the run stops.
- A pair is resolved when its CS lies above 0 ("a > b"), below 0 ("b > a"), or inside
  [-margin, margin] ("equivalent"); a direction is read first. It takes no more items.
- A model is asked while some pair it is in is open, and never past the budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from harness.stats.sequential import BettingCS, bonferroni_alpha

Resolution = Literal["a > b", "b > a", "equivalent", "unresolved"]
GRID = 201  # CS grid on [-1, 1] for the reported intervals: a resolution of 0.01


TOL = 8 * np.finfo(float).eps


Masks = tuple[np.ndarray, np.ndarray, np.ndarray]


def resolve_from_bounds(low: np.ndarray, high: np.ndarray, margin: float,
                        open_: np.ndarray) -> Masks:  # fmt: skip
    """Which open differences a CS [low, high] now decides: (a > b, b > a, equivalent).

    A direction is read first: above 0, below 0, then inside [-margin, margin].
    """
    up = open_ & (low > TOL)
    down = open_ & (high < -TOL) & ~up
    same = open_ & ~up & ~down & (low >= -margin - TOL) & (high <= margin + TOL)
    return up, down, same


@dataclass(frozen=True, slots=True)
class PairState:
    """Where one pair stands.

    Attributes:
        a: First model.
        b: Second model.
        resolution: "a > b", "b > a", "equivalent", or "unresolved" while open.
        items: Items it has taken (at resolution, or so far).
        estimate: Mean of a - b over those items.
        low: Lower end of its CS for the mean of a - b (at resolution, or now); nan when the
            family does not track intervals.
        high: Upper end.

    """

    a: str
    b: str
    resolution: Resolution
    items: int
    estimate: float
    low: float
    high: float


class PairFamily:
    """Anytime-valid decisions for every pair of `models`, one item at a time.

    Args:
        models: The models, in the order pairs are formed ((0, 1), (0, 2), ..., (1, 2), ...).
        alpha: Family-wise error level over the pairs.
        margin: Equivalence margin on the score scale (0: never "equivalent").
        population: The number of items when they are drawn without replacement from a finite
            set whose own means are the target; None for a population of items.
        budget: Items per model at most (None: no limit).
        intervals: Track each pair's CS on a 0.01 grid to report it; without it only the
            decision points (0, +/-margin) are tracked, which is much faster on big families.

    """

    def __init__(
        self,
        models: Sequence[str],
        *,
        alpha: float = 0.05,
        margin: float = 0.05,
        population: int | None = None,
        budget: int | None = None,
        intervals: bool = True,
    ) -> None:
        """A family with every pair open and nothing observed."""
        if len(set(models)) != len(models) or len(models) < 2:
            raise ValueError(f"need two or more distinct models, got {list(models)}")
        if not (math.isfinite(margin) and 0 <= margin < 1):
            raise ValueError(f"margin must be in [0, 1), got {margin}")
        if budget is not None and budget < 1:
            raise ValueError(f"budget must be at least 1, got {budget}")
        self.models = tuple(models)
        self.margin = margin
        self.budget = budget
        self.intervals = intervals
        self.pairs = list(combinations(range(len(models)), 2))
        self._ia = np.array([i for i, _ in self.pairs])  # (K,)
        self._ib = np.array([j for _, j in self.pairs])  # (K,)
        k = len(self.pairs)
        points = sorted({-1.0, 1.0, 0.0, -margin, margin})
        grid = np.union1d(np.linspace(-1, 1, GRID), points) if intervals else np.array(points)
        self._cs = BettingCS(alpha=bonferroni_alpha(alpha, k), kind="difference",
                             population=population, batch=k, grid=grid)  # fmt: skip
        self._resolution = np.array(["unresolved"] * k, dtype=object)
        self._items = np.zeros(k, int)
        self._estimate = np.full(k, math.nan)
        self._low = np.full(k, math.nan)
        self._high = np.full(k, math.nan)
        self._open = np.ones(k, bool)
        self._asked = np.ones(len(models), bool)
        self._model_items = np.zeros(len(models), int)
        self.n = 0  # items observed

    def active(self) -> tuple[str, ...]:
        """The models still to be asked the next item."""
        return tuple(m for m, on in zip(self.models, self._asked, strict=True) if on)

    def model_items(self) -> dict[str, int]:
        """Items each model has been asked."""
        return dict(zip(self.models, self._model_items.tolist(), strict=True))

    def observe(self, scores: Mapping[str, float]) -> None:
        """One item's scores in [0, 1], for at least every model still being asked."""
        missing = [m for m in self.active() if m not in scores]
        if missing:
            raise ValueError(f"no score for {', '.join(missing)}, still being asked")
        self.observe_row(np.array([float(scores.get(m, math.nan)) for m in self.models]))

    def observe_row(self, row: np.ndarray) -> None:
        """One item's scores as an array in model order (models not asked may be anything)."""
        if not self._asked.any():
            raise ValueError("every pair is resolved or the budget is spent; nothing is asked")
        row = np.asarray(row, dtype=float)  # (M,)
        active = self._open
        diff = np.where(active, np.nan_to_num(row[self._ia] - row[self._ib]), 0.0)  # (K,)
        self._cs.update(diff, mask=active)
        self.n += 1
        self._model_items += self._asked
        self._items += active
        above_zero, below_zero = self._cs.rejects(0.0)
        above_low, _ = self._cs.rejects(-self.margin)
        _, below_high = self._cs.rejects(self.margin)
        up = active & above_zero
        down = active & below_zero & ~up
        same = active & ~up & ~down & above_low & below_high
        now = up | down | same
        res = self._resolution
        res[up], res[down], res[same] = "a > b", "b > a", "equivalent"
        self._record(now)
        self._open = active & ~now
        still = np.zeros(len(self.models), bool)
        still[self._ia[self._open]] = True
        still[self._ib[self._open]] = True
        if self.budget is not None and self.n >= self.budget:
            still[:] = False
        self._asked &= still

    def _record(self, which: np.ndarray) -> None:
        est = self._cs.estimates()
        self._estimate[which] = est[which]
        if self.intervals:
            low, high = self._cs.bounds()
            self._low[which], self._high[which] = low[which], high[which]

    def states(self) -> tuple[PairState, ...]:
        """Every pair: resolved ones as they were at resolution, open ones as they are now."""
        self._record(self._open.copy())
        return tuple(
            PairState(self.models[i], self.models[j], self._resolution[p], int(self._items[p]),
                      float(self._estimate[p]), float(self._low[p]), float(self._high[p]))
            for p, (i, j) in enumerate(self.pairs)
        )  # fmt: skip
