"""`harness eval ... --until decided --active --history LOGDIR`: one model added to a board.

The history is a board of other models' scores on the task's items, read from past logs
(`harness.board._export.board_from_logs`). A logistic factor model fitted on it
(`harness.board._factor`) predicts the new model's score on each item from the answers it has
given so far. The items come in the seeded random order of `--until decided`, one at a time
(the run asks one sample at a time), and each is asked with probability

    pi = clip(ASK_RATE * sqrt(f (1 - f)) / mean over the board of sqrt(f (1 - f)), PI_MIN, 1),

with f the item's prediction, made before the draw; an item not drawn is skipped, with its
reason in the log's early-stopping summary. Each item visited gives

    psi = f + xi (y - f) / pi,     xi = 1 if asked (y its score), else 0,

whose mean given the past is the item's score: the selection is weighted by its probability,
never averaged plainly (Poisson sampling with inverse-probability weights, as in active
inference: Zrnic and Candes 2024). As in `--until decided`, the items are a random sample from
the items' population, in a random order, so psi has the population mean of the new model's
score, and psi - z_j (z_j the history model j's score on the item) that of the difference with
model j. Both lie in a fixed range (|psi - z| <= 1 / PI_MIN), so each pair keeps a betting
confidence sequence (`harness.stats._sequential.BettingCS`, on the range mapped to [0, 1], with
bets tuned to the visits planned: `harness.stats._bets`) at
alpha / pairs (Bonferroni), valid at the data-dependent stop; a pair resolves as in
`harness.board._family`, and the model stops when every pair is resolved, at the budget, or when
the order ends. The score row of such a run is the weighted confidence sequence of its mean.

Why the range is fixed, not the replay's predictable bounds: the replay's bounds are a maximum
over the board's unasked items, known before the draw; here the next item is a draw from the
items' population, so a bound known before it must hold for every item that could come, and
over f in [0.02, 0.98] with pi >= PI_MIN that is [-2.94, 3.94] for psi, within 2% of the fixed
range. The tightening that pays is the bets (tuned to the planned visits).

Ours (reconstructed; the log's metadata says so): the ask rule above (the square root of the
predicted variance is the rule that minimises the variance per query), ASK_RATE, PI_MIN, and
the factor model's settings. Items missing from the history are skipped (nothing to compare).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.board._factor import ability, fit_items, predict
from harness.board._family import Resolution, resolve_from_bounds
from harness.board._table import Board
from harness.stats import BettingCS, bonferroni_alpha

ASK_RATE = 0.5  # the mean share of visited items asked, before clipping
PI_MIN = 0.25  # no item is asked with a lower probability: bounds |psi - z| by 1 / PI_MIN
GRID = 401  # candidate differences on [-1, 1] (means on [0, 1]): a resolution of 0.005
RECONSTRUCTED = (
    f"ours: the ask rule pi ~ sqrt(f (1 - f)) at mean rate {ASK_RATE}, clipped to "
    f"[{PI_MIN}, 1]; the factor model's priors, rank 1 and optimiser"
)
WAIT = 60.0  # seconds to wait for the previous asked item's score before going on without it


def _to_unit(x: np.ndarray | float, bound: float) -> np.ndarray:
    return (np.asarray(x, float) + bound) / (2 * bound)


def _from_unit(u: np.ndarray | float, bound: float) -> np.ndarray:
    return np.asarray(u, float) * 2 * bound - bound


class ActiveLive:
    """The state of one task's active run: the history, the factor model, the CSs, the rng."""

    def __init__(self, model: str, order: Sequence[str], history: Board, *, alpha: float,
                 margin: float, budget: int | None, seed: int) -> None:  # fmt: skip
        """An active run of `model` over `order` against the models of `history`."""
        if len(history.models) < 2:
            raise ValueError("the history needs two or more models")
        self.model = model
        self.column = {item: j for j, item in enumerate(history.items)}
        self.order = tuple(order)
        self.history = history
        self.alpha, self.margin, self.budget = alpha, margin, budget
        self.items = fit_items(history.scores, seed=seed)
        self.rng = np.random.default_rng([seed, 7])
        self.bound = 1.0 / PI_MIN
        pairs = len(history.models)
        lo = float(_to_unit(-1.0, self.bound))
        hi = float(_to_unit(1.0, self.bound))
        # bets tuned to the visits planned: the budget over the mean ask rate, or the order
        planned = (
            len(self.order)
            if budget is None
            else min(len(self.order), math.ceil(budget / ASK_RATE))
        )
        self.pairs_cs = BettingCS(alpha=bonferroni_alpha(alpha, pairs), batch=pairs,
                                  grid=np.linspace(lo, hi, GRID), planned=planned)  # fmt: skip
        self.mean_cs = BettingCS(alpha=alpha, grid=np.linspace(
            float(_to_unit(0.0, self.bound)), float(_to_unit(1.0, self.bound)), GRID),
            planned=planned)  # fmt: skip
        self.resolution: list[Resolution] = ["unresolved"] * pairs
        self.resolved_at = [0] * pairs
        self.low = [math.nan] * pairs
        self.high = [math.nan] * pairs
        self.asked_items: list[int] = []
        self.asked_scores: list[float] = []
        self.visits = 0
        self.queries = 0
        self.pending: dict[str, tuple[float, float]] = {}  # item: (prediction, probability)
        self.u = np.zeros((1, 1))
        self._turn: asyncio.Lock | None = None
        self._done: asyncio.Event | None = None

    # ------------------------------------------------------------------ the procedure

    def open(self) -> bool:
        """Whether some pair is unresolved and the budget lasts."""
        if self.budget is not None and self.queries >= self.budget:
            return False
        return "unresolved" in self.resolution

    def _prediction(self, column: int) -> tuple[float, float]:
        """(f, pi) for an item, from the answers so far."""
        asked = np.zeros((1, len(self.history.items)), bool)
        asked[0, self.asked_items] = True
        scores = np.zeros(len(self.history.items))
        scores[self.asked_items] = self.asked_scores
        self.u = ability(self.items, asked, scores, start=self.u, iterations=3)
        pred = np.clip(predict(self.items, self.u)[0], 0.02, 0.98)
        spread = np.sqrt(pred * (1 - pred))
        pi = float(np.clip(ASK_RATE * spread[column] / spread.mean(), PI_MIN, 1.0))
        return float(pred[column]), pi

    def _observe(self, column: int, psi: float) -> None:
        """One visit's weighted observation, for every open pair and for the mean."""
        z = self.history.scores[:, column]
        open_ = np.array([r == "unresolved" for r in self.resolution])
        self.pairs_cs.update(_to_unit(psi - z, self.bound), mask=open_)
        self.mean_cs.update(float(_to_unit(psi, self.bound)))
        self.visits += 1
        low, high = (_from_unit(b, self.bound) for b in self.pairs_cs.bounds())
        up, down, same = resolve_from_bounds(low, high, self.margin, open_)
        for j in np.flatnonzero(open_):
            if up[j] or down[j] or same[j]:
                self.resolution[j] = "a > b" if up[j] else "b > a" if down[j] else "equivalent"
            self.low[j], self.high[j] = float(low[j]), float(high[j])
            if self.resolution[j] != "unresolved":
                self.resolved_at[j] = self.queries

    # ------------------------------------------------------------------ inspect's calls

    async def turn(self, item: str) -> str | None:
        """Wait for the item before it, then ask this one (None) or say why it is skipped."""
        if self._turn is None:
            self._turn, self._done = asyncio.Lock(), asyncio.Event()
            self._done.set()
        assert self._done is not None
        try:  # use the previous asked item's score once it is in; never wait forever for it
            await asyncio.wait_for(self._done.wait(), timeout=WAIT)
        except TimeoutError:
            pass  # valid without it: the ask probability uses only answers already in
        async with self._turn:
            if not self.open():
                if self.budget is not None and self.queries >= self.budget:
                    return f"budget of {self.budget} items reached"
                return f"every pair of {self.model} is resolved"
            column = self.column.get(item)
            if column is None:
                return "not in the history's items (nothing to compare it with)"
            f, pi = self._prediction(column)
            if self.rng.random() >= pi:
                self._observe(column, f)
                return f"not selected (active selection: asked with probability {pi:.2f})"
            self.pending[item] = (f, pi)
            self._done.clear()
            return None

    async def scored(self, item: str, value: float) -> None:
        """The asked item's score: its weighted observation."""
        f, pi = self.pending.pop(item)
        column = self.column[item]
        self.queries += 1
        self.asked_items.append(column)
        self.asked_scores.append(value)
        self._observe(column, f + (value - f) / pi)
        assert self._done is not None
        self._done.set()

    def summary(self) -> dict[str, Any]:
        """The decisions and the weighted mean's CS, for the log's early-stopping metadata."""

        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        low, high = (float(_from_unit(b[0], self.bound)) for b in self.mean_cs.bounds())
        estimate = float(_from_unit(self.mean_cs.estimates()[0], self.bound))
        return {
            "method": (
                "active selection: items asked with probability ~ sqrt(f (1 - f)) from a factor "
                "model fitted on the history, weighted by that probability; "
                f"{self.pairs_cs.method}; at alpha / pairs (Bonferroni, alpha {self.alpha:g}), "
                "anytime-valid; "
                f"resolved when the CS excludes 0, or lies inside +/-{self.margin:g}"
            ),
            "reconstructed": RECONSTRUCTED,
            "order": list(self.order),
            "items_observed": self.visits,
            "items_per_model": {self.model: self.queries},
            "active": {
                "model": self.model,
                "history": list(self.history.models),
                "visited": self.visits,
                "asked": self.queries,
                "estimate": num(estimate),
                "low": num(low),
                "high": num(high),
                "alpha": self.alpha,
            },  # fmt: skip
            "pairs": [
                {
                    "a": self.model,
                    "b": other,
                    "resolution": self.resolution[j],
                    "items": self.resolved_at[j]
                    if self.resolution[j] != "unresolved"
                    else self.queries,
                    "estimate": None,
                    "low": num(self.low[j]),
                    "high": num(self.high[j]),
                }
                for j, other in enumerate(self.history.models)
            ],  # fmt: skip
        }


class ActiveStopper:
    """inspect's EarlyStopping for the added model of an active run."""

    def __init__(self, live: ActiveLive) -> None:
        """The stopper of `live`'s model."""
        self.live = live

    async def start_task(self, task: Any, samples: list[Any], epochs: int) -> str:
        """Register the task; the name of the manager."""
        return "harness until decided (active)"

    async def schedule_sample(self, id: str | int, epoch: int) -> Any:
        """None to ask the sample, or an `EarlyStop` with the reason it is skipped."""
        from inspect_ai.util import EarlyStop

        reason = await self.live.turn(str(id))
        return None if reason is None else EarlyStop(id=id, epoch=epoch, reason=reason)

    async def complete_sample(self, id: str | int, epoch: int, scores: dict[str, Any]) -> None:
        """Record the asked sample's score (an error or an unreadable score is 0)."""
        from harness.board._live import _value

        await self.live.scored(str(id), _value(scores))

    async def complete_task(self) -> dict[str, Any]:
        """The decisions so far."""
        return self.live.summary()
