"""The stopping rule for a family of model pairs, fed one item at a time.

`PairFamily` is what `harness board replay` runs on each order, and what a live run that stops
when its comparisons are decided can run as items come back: give it each item's scores for the
models still being asked, read which models are still to be asked and how each pair stands.

- Each pair (a, b), a before b in the order given, has a betting confidence sequence for the
  mean of a - b (`harness.stats._sequential.BettingCS`) at alpha / pairs: Bonferroni over
  confidence sequences, so all pairs cover at once, at every item count, with probability
  >= 1 - alpha, whenever the run stops.
- A pair is resolved when its CS lies above 0 ("a > b"), below 0 ("b > a"), or inside
  [-margin, margin] ("equivalent"); a direction is read first. It takes no more items.
- A model is asked while some pair it is in is open, and never past the budget.

Where the design nests items in clusters (mas-prove's grid cells in a problem, team's prompts in
a trained seed), items are not independent draws, and a CS fed one item at a time would not
hold: with 8 problems of 130 cells each and a population difference of 0, it declared a
direction in 27% of runs. `ClusterMeans` feeds the family one observation per completed
cluster instead, the cluster's mean score per model: clusters are the independent draws, each
mean lies in [0, 1], so the CS holds for the mean of cluster means (equal to the item mean only
when clusters are of one size). Items are visited cluster by cluster (`cluster_visit`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any, Literal

import numpy as np

from harness.stats import Choice, bonferroni_alpha, choose_cs, sequential_holm

Resolution = Literal["a > b", "b > a", "equivalent", "unresolved"]
Family = Literal["bonferroni", "holm"]  # how a family's pairs share alpha (`PairFamily`)
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
        clusters: Clusters it has taken, where items nest in clusters (None otherwise).

    """

    a: str
    b: str
    resolution: Resolution
    items: int
    estimate: float
    low: float
    high: float
    clusters: int | None = None


class _ItemFeed:
    """What both stoppers share: items asked per model, and one item's scores by name.

    A subclass has `models`, `_model_items` (items asked per model), `active()` and
    `observe_row(row)`.
    """

    models: tuple[str, ...]
    _model_items: np.ndarray

    def active(self) -> tuple[str, ...]:  # pragma: no cover - each subclass defines it
        raise NotImplementedError

    def observe_row(self, row: np.ndarray) -> None:  # pragma: no cover - likewise
        raise NotImplementedError

    def model_items(self) -> dict[str, int]:
        """Items each model has been asked."""
        return dict(zip(self.models, self._model_items.tolist(), strict=True))

    def observe(self, scores: Mapping[str, float]) -> None:
        """One item's scores in [0, 1], for at least every model still being asked."""
        missing = [m for m in self.active() if m not in scores]
        if missing:
            raise ValueError(f"no score for {', '.join(missing)}, still being asked")
        self.observe_row(np.array([float(scores.get(m, math.nan)) for m in self.models]))


class PairFamily(_ItemFeed):
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
        cs: Which CS (`harness.stats._asymptotic_cs.choose_cs`): "auto" (default) is the
            betting CS with bets tuned to the planned n, "plug-in" the old one.
        planned: The observations the run plans to reach; default the budget, else the
            population, else none known (the plug-in bets).
        family: How the pairs' directions share alpha. "bonferroni" (default): a direction is
            read from each pair's CS at alpha / pairs. "holm": sequential Holm over the 2 x
            pairs one-sided anytime p-values at 0 (`harness.stats.sequential_holm`; no wrong
            direction anywhere with probability >= 1 - alpha); its first step is Bonferroni's,
            and it decides more pairs once some are decided. Directions only: it needs
            margin 0 and a betting CS (the intervals it reports stay at alpha / pairs).

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
        cs: Choice = "auto",
        planned: int | None = None,
        family: Family = "bonferroni",
    ) -> None:
        """A family with every pair open and nothing observed."""
        if family not in ("bonferroni", "holm"):
            raise ValueError(f"family must be 'bonferroni' or 'holm', got {family!r}")
        if family == "holm" and (margin != 0 or cs == "asymptotic"):
            raise ValueError("family 'holm' decides directions only: it needs margin 0 and a "
                             "betting CS (its anytime one-sided p-values)")  # fmt: skip
        if len(set(models)) != len(models) or len(models) < 2:
            raise ValueError(f"need two or more distinct models, got {list(models)}")
        if not (math.isfinite(margin) and 0 <= margin < 1):
            raise ValueError(f"margin must be in [0, 1), got {margin}")
        if budget is not None and budget < 1:
            raise ValueError(f"budget must be at least 1, got {budget}")
        self.models = tuple(models)
        self.alpha = alpha
        self.family = family
        self.margin = margin
        self.budget = budget
        self.intervals = intervals
        self.pairs = list(combinations(range(len(models)), 2))
        self._ia = np.array([i for i, _ in self.pairs])  # (K,)
        self._ib = np.array([j for _, j in self.pairs])  # (K,)
        k = len(self.pairs)
        points = sorted({-1.0, 1.0, 0.0, -margin, margin})
        grid = np.union1d(np.linspace(-1, 1, GRID), points) if intervals else np.array(points)
        if planned is None:
            planned = budget if budget is not None else population
        self._cs = choose_cs(cs, alpha=bonferroni_alpha(alpha, k), kind="difference",
                             population=population, batch=k, grid=grid,
                             planned=planned)  # fmt: skip
        self.method = self._cs.method + (
            "; directions by sequential Holm over the pairs' one-sided anytime p-values"
            if family == "holm"
            else ""
        )
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
        if self.family == "holm":
            above_zero, below_zero = self._holm(above_zero, below_zero)
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

    def _holm(self, above: np.ndarray, below: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Directions by sequential Holm over the pairs' one-sided anytime p-values at 0.

        A pair whose finite population is seen in full keeps the known mean's direction (what
        `rejects` gives then: no error is possible).
        """
        p_up, p_down = self._cs.one_sided_p_values(0.0)  # H: a - b <= 0, H: a - b >= 0
        rejected = sequential_holm(np.concatenate([p_up, p_down]), self.alpha)
        k = len(self.pairs)
        up, down = rejected[:k], rejected[k:]
        population = getattr(self._cs, "population", None)
        if population is not None:
            done = self._cs.counts() >= population
            up, down = np.where(done, above, up), np.where(done, below, down)
        return up, down

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


def cluster_visit(labels: Sequence[str], seed: int | Sequence[int]) -> np.ndarray:
    """The order to visit items in: clusters in a seeded random order, a cluster's items in turn.

    Args:
        labels: The cluster of each item, in the items' own order.
        seed: Seed of the clusters' order (shared by every model, so pairs stay paired).

    Returns:
        Item indices, every cluster's items together and in their own order.

    """
    names = list(dict.fromkeys(labels))
    members: dict[str, list[int]] = {name: [] for name in names}
    for i, label in enumerate(labels):
        members[label].append(i)
    shuffled = np.random.default_rng(seed).permutation(len(names))
    return np.array([i for c in shuffled for i in members[names[c]]], dtype=int)


def cluster_ends(labels: Sequence[str]) -> np.ndarray:
    """Items seen when each cluster is complete, for labels in visiting order (1-based counts).

    Raises:
        ValueError: a cluster's items are not consecutive.

    """
    labels = list(labels)
    ends = [i + 1 for i in range(len(labels)) if i + 1 == len(labels) or labels[i + 1] != labels[i]]
    starts = [0, *ends[:-1]]
    seen = [labels[s] for s in starts]
    if len(set(seen)) != len(seen):
        again = next(c for c in seen if seen.count(c) > 1)
        raise ValueError(f"the items of cluster {again!r} are not visited together")
    return np.array(ends, dtype=int)


def whole_clusters(ends: np.ndarray, budget: int | None) -> int | None:
    """How many clusters, in visiting order, fit whole within `budget` items (None: no limit)."""
    return None if budget is None else int(np.searchsorted(ends, budget, side="right"))


class ClusterMeans(_ItemFeed):
    """A family fed one observation per completed cluster: each model's mean over its items.

    The same interface as `PairFamily` (`models`, `active`, `observe`, `observe_row`, `n`,
    `model_items`, `states`), item by item; `n` and `model_items` count items, and each pair's
    `items` is the items of the clusters it took. The inner family counts clusters: give it its
    budget in clusters (`whole_clusters`) and, for a finite target, the number of clusters as
    its population.

    Args:
        family: The inner family (a `PairFamily`, or any with `observe` and `active`).
        models: The models, in the inner family's order.
        labels: The cluster of each item, in the order the items will be observed; a cluster's
            items must be consecutive.

    """

    def __init__(self, family: Any, models: Sequence[str], labels: Sequence[str]) -> None:
        """Wrap `family`; nothing observed."""
        self.family = family
        self.models = tuple(models)
        self.ends = cluster_ends(labels)
        self.n = 0  # items observed
        self._sum = np.zeros(len(self.models))  # (M,) this cluster's scores so far
        self._count = 0
        self._model_items = np.zeros(len(self.models), int)

    @property
    def clusters(self) -> int:
        """Clusters completed and observed."""
        return int(np.searchsorted(self.ends, self.n, side="right"))

    def active(self) -> tuple[str, ...]:
        """The models still to be asked; it changes only when a cluster completes."""
        return tuple(self.family.active())

    def observe_row(self, row: np.ndarray) -> None:
        """One item's scores in model order; at a cluster's last item, its means go in."""
        active = self.active()
        if not active or self.n >= int(self.ends[-1]):
            raise ValueError("every pair is resolved, the budget is spent or every item is seen")
        asked = np.array([m in active for m in self.models])  # (M,)
        self._sum += np.where(asked, np.nan_to_num(np.asarray(row, dtype=float)), 0.0)
        self._count += 1
        self._model_items += asked
        self.n += 1
        if self.n in self.ends:
            means = self._sum / self._count
            self.family.observe({m: float(v) for m, v, on in zip(self.models, means, asked,
                                                                 strict=True) if on})  # fmt: skip
            self._sum[:] = 0.0
            self._count = 0

    def observe_cluster(self, block: np.ndarray) -> None:
        """The next cluster's items at once: (models, its items), from a cluster's start.

        The same as observing its items one by one (who is asked changes only between
        clusters), with one call per cluster, as a replay needs.
        """
        start = int(self.ends[self.clusters - 1]) if self.clusters else 0
        if self._count or self.n != start or self.clusters >= self.ends.size:
            raise ValueError("observe_cluster needs to be at the start of a cluster")
        size = int(self.ends[self.clusters]) - start
        block = np.asarray(block, dtype=float)  # (M, size)
        if block.shape != (len(self.models), size):
            raise ValueError(f"the next cluster has {size} items; got a block {block.shape}")
        active = self.active()
        if not active:
            raise ValueError("every pair is resolved or the budget is spent; nothing is asked")
        asked = np.array([m in active for m in self.models])  # (M,)
        means = np.nan_to_num(block).mean(axis=1)  # (M,)
        self._model_items += asked * size
        self.n += size
        self.family.observe({m: float(v) for m, v, on in zip(self.models, means, asked,
                                                             strict=True) if on})  # fmt: skip

    def states(self) -> tuple[PairState, ...]:
        """Every pair, with its items counted in items and its clusters beside them."""
        items = np.concatenate([[0], self.ends])
        return tuple(
            replace(s, items=int(items[s.items]), clusters=s.items) for s in self.family.states()
        )
