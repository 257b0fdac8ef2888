"""`harness board replay --add-model NAME [--active]`: adding one model to a board with history.

The other models' rows are the history: their scores on every item are known, so their board
means are known exactly. The added model's row is hidden and revealed one item at a time, as a
live run would ask it. Its pairs with the others are decided from one confidence sequence for
its board mean (each pair's difference is that mean less a known number, so one CS covers
every pair at once, at level alpha, with no correction for the number of pairs):

- a pair is resolved when the CS less the other model's mean excludes 0 ("a > b" / "b > a") or
  lies inside [-margin, margin] ("equivalent");
- the model stops being asked when every pair is resolved, when the CS is narrower than
  `width` (where given), or at the budget.

Two ways to choose the next item, replayed on the same seeds:

- random: a seeded random order, with the without-replacement betting CS of
  `harness.stats._sequential` (what `--until decided` does);
- active (`--active`): the logistic factor model of `harness.board._factor`, fitted on the
  history, predicts the new model's scores (its ability refitted after every answer); the next
  item is drawn with probability ~ sqrt(f (1 - f)) mixed with uniform, and the board mean is
  estimated by selection-weighted observations (`harness.stats._active`). Plain averages over
  the chosen items are never used: they would be biased towards the items chosen.

Both CSs are for the board's own items (the finite population), and each replication checks
whether the CS at its stopping time holds the added model's true board mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.stats import norm

from harness.board._factor import ability, fit_items, predict
from harness.board._family import TOL, resolve_from_bounds
from harness.board._replay import MARGIN
from harness.board._table import Board
from harness.errors import HarnessUsageError
from harness.stats import EXPLORE, ActiveMeanCS, BettingCS, clean_json, selection

MAX_REPLAY_CELLS = 20_000_000  # replications x items held at once (a few arrays of them)
GRID = 401  # candidate means on [0, 1]: a resolution of 0.0025
RECONSTRUCTED = (
    "ours: the factor model's priors, rank and optimiser; the selection's mixing weight "
    f"({EXPLORE}) and clipping; one CS for every pair against models with known board means"
)


@dataclass(frozen=True, slots=True)
class MethodRun:
    """One way of choosing items, over every replication.

    Attributes:
        name: "active" or "random".
        queries: Per replication, items asked.
        low: Per replication, the CS's lower end at the stop.
        high: Per replication, its upper end.
        covered: Per replication, whether the CS held the true board mean at the stop.
        resolution: Per replication and pair, the pair's resolution at the stop.
        items: Per replication and pair, the items asked when it was resolved (the stop when not).
        cs: The confidence sequence, in words (which bets, tuned to which n).

    """

    name: str
    queries: np.ndarray
    low: np.ndarray
    high: np.ndarray
    covered: np.ndarray
    resolution: np.ndarray
    items: np.ndarray
    cs: str = ""

    @property
    def coverage(self) -> float:
        """Share of replications whose CS held the truth when they stopped."""
        return float(self.covered.mean())

    def summary(self) -> dict[str, Any]:
        """Queries (mean, sd, range), coverage and the mean width at the stop."""
        q = self.queries.astype(float)
        return {
            "queries_mean": float(q.mean()),
            "queries_sd": float(q.std(ddof=1)) if q.size > 1 else 0.0,
            "queries_range": [int(q.min()), int(q.max())],
            "coverage": self.coverage,
            "width_mean": float(np.mean(self.high - self.low)),
            "cs": self.cs,
        }


@dataclass(frozen=True, slots=True)
class AddModelResult:
    """Adding one model to a board with history: active against random, on the same seeds.

    Attributes:
        model: The added model.
        history: The other models (the history).
        n_items: The board's items.
        truth: The added model's board mean (hidden from the procedure).
        others: The history models' board means.
        alpha: The CS's error level (every pair at once).
        margin: The equivalence margin.
        budget: Items at most.
        width: Stop when the CS is narrower than this (None: only on resolution or budget).
        seed: Seed of the replications.
        runs: The methods replayed ("random" always; "active" where asked).
        wrong: Per method, the share of replications with a wrong decision (a direction
            against the true difference, or "equivalent" outside the margin).
        wrong_direction: Per method, the share with a direction against the true difference.

    """

    model: str
    history: tuple[str, ...]
    n_items: int
    truth: float
    others: tuple[float, ...]
    alpha: float
    margin: float
    budget: int
    width: float | None
    seed: int
    runs: tuple[MethodRun, ...]
    wrong: tuple[float, ...]
    wrong_direction: tuple[float, ...]

    def run(self, name: str) -> MethodRun | None:
        """The named method's run, if replayed."""
        return next((r for r in self.runs if r.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data, in the keys of `harness board replay --json`."""
        main = self.run("active") or self.runs[0]
        random = self.run("random")
        assert random is not None
        pairs = []
        for j, other in enumerate(self.history):
            pairs.append({"a": self.model, "b": other, "resolution": str(main.resolution[0, j]),
                          "items": int(main.items[0, j]),
                          "difference": self.truth - self.others[j],
                          "resolved_share": float(np.mean(main.resolution[:, j] != "unresolved")),
                          })  # fmt: skip
        return clean_json({
            "add_model": self.model,
            "method": main.name,
            "history_models": len(self.history),
            "items": self.n_items,
            "alpha": self.alpha,
            "margin": self.margin,
            "budget": self.budget,
            "width": self.width,
            "seed": self.seed,
            "orders": int(main.queries.size),
            "queries_used": float(main.queries.mean()),
            "queries_random": float(random.queries.mean()),
            "queries_all": self.n_items,
            "saving_vs_random": float(random.queries.mean() / max(main.queries.mean(), 1)),
            "wrong_direction_rate": self.wrong_direction[self.runs.index(main)],
            "wrong_decision_rate": self.wrong[self.runs.index(main)],
            "coverage": main.coverage,
            "methods": {r.name: {**r.summary(), "wrong_decision_rate": w,
                                 "wrong_direction_rate": d}
                        for r, w, d in zip(self.runs, self.wrong, self.wrong_direction,
                                           strict=True)},  # fmt: skip
            "pairs": pairs,
            "guarantee": GUARANTEE,
            "reconstructed": RECONSTRUCTED,
        })  # fmt: skip

    def summary(self) -> str:
        """The result as text."""
        lines = [
            f"adding {self.model} to {len(self.history)} models with history; {self.n_items} "
            f"items; alpha {self.alpha:g} (one CS for every pair); margin +/-{self.margin:g}; "
            f"budget {self.budget}" + (f"; width {self.width:g}" if self.width else "")
            + f"; {self.runs[0].queries.size} replication(s) from seed {self.seed}",
        ]  # fmt: skip
        for run, wrong, direction in zip(self.runs, self.wrong, self.wrong_direction,
                                         strict=True):  # fmt: skip
            s = run.summary()
            lines.append(
                f"  {run.name}: {s['queries_mean']:.1f} items (sd {s['queries_sd']:.1f}, range "
                f"{s['queries_range'][0]}-{s['queries_range'][1]}) of {self.n_items}; CS held "
                f"the true mean in {s['coverage']:.1%}; width at stop {s['width_mean']:.3f}; "
                f"wrong decisions in {wrong:.1%} of replications (wrong directions "
                f"{direction:.1%})"
            )
        active, random = self.run("active"), self.run("random")
        if active is not None and random is not None:
            ratio = random.queries.mean() / max(active.queries.mean(), 1)
            lines.append(f"  random / active items: {ratio:.2f}x")
        main = active or random
        assert main is not None
        lines.append(f"pairs ({main.name}, first replication): {self.model} - other, true "
                     "difference, resolution at items")  # fmt: skip
        for j, other in enumerate(self.history):
            lines.append(f"  {self.model} - {other}: {self.truth - self.others[j]:+.4f}; "
                         f"{main.resolution[0, j]} at {main.items[0, j]}")  # fmt: skip
        lines.append("reconstructed: " + RECONSTRUCTED)
        return "\n".join(lines)


GUARANTEE = (
    "with probability >= 1 - alpha, the added model's CS holds its mean over the board's items "
    "at every step at once, whichever items were chosen (selection-weighted observations), so "
    "every decision read from it is right; the history models' means are known exactly"
)


class _Decider:
    """Resolutions of the pairs (added model, other) from the CS, as they come."""

    def __init__(self, others: np.ndarray, batch: int, margin: float) -> None:
        self.others = others  # (P,)
        self.margin = margin
        self.resolution = np.full((batch, others.size), "unresolved", dtype=object)
        self.items = np.zeros((batch, others.size), dtype=np.int64)

    def update(self, low: np.ndarray, high: np.ndarray, asked: np.ndarray,
               active: np.ndarray) -> np.ndarray:  # fmt: skip
        """Resolve what the CS now decides; per sequence, whether every pair is resolved."""
        open_ = (self.resolution == "unresolved") & active[:, None]
        up, down, same = resolve_from_bounds(low[:, None] - self.others[None, :],
                                             high[:, None] - self.others[None, :],
                                             self.margin, open_)  # fmt: skip
        self.resolution[up] = "a > b"
        self.resolution[down] = "b > a"
        self.resolution[same] = "equivalent"
        now = up | down | same
        self.items[now] = np.broadcast_to(asked[:, None], now.shape)[now]
        return ~(self.resolution == "unresolved").any(axis=1)

    def finish(self, asked: np.ndarray) -> None:
        open_ = self.resolution == "unresolved"
        self.items[open_] = np.broadcast_to(asked[:, None], open_.shape)[open_]


def _wrong(resolution: np.ndarray, truth_diff: np.ndarray, margin: float,
           directions_only: bool = False) -> np.ndarray:  # fmt: skip
    """Per replication, whether any decision (or any direction) is wrong about the truth."""
    d = truth_diff[None, :]
    bad = ((resolution == "a > b") & (d <= TOL)) | ((resolution == "b > a") & (d >= -TOL))
    if not directions_only:
        bad |= (resolution == "equivalent") & (np.abs(d) > margin + TOL)
    return bad.any(axis=1)


def _run(name: str, draw: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
         bounds: Callable[[], tuple[np.ndarray, np.ndarray]], *, reps: int, budget: int,
         truth: float, others: np.ndarray, margin: float, width: float | None,
         progress: Callable[[int], None] | None) -> MethodRun:  # fmt: skip
    """Ask items until each replication stops; `draw(active)` asks one more item of each."""
    decider = _Decider(others, reps, margin)
    stopped = np.zeros(reps, bool)
    asked = np.zeros(reps, np.int64)
    low_at, high_at = np.zeros(reps), np.ones(reps)
    for t in range(budget):
        active = ~stopped
        draw(active)
        asked = asked + active
        low, high = bounds()
        done = decider.update(low, high, asked, active)
        if width is not None:
            done |= high - low <= width + TOL
        now = active & (done | (t == budget - 1))
        low_at[now], high_at[now] = low[now], high[now]
        stopped |= now
        if progress is not None and t % 25 == 0:
            progress(int(stopped.sum()))
        if stopped.all():
            break
    decider.finish(asked)
    covered = (low_at - TOL <= truth) & (truth <= high_at + TOL)
    return MethodRun(name, asked, low_at, high_at, covered, decider.resolution, decider.items)


def add_model(
    board: Board,
    model: str,
    *,
    active: bool = True,
    alpha: float = 0.05,
    margin: float = MARGIN,
    budget: int | None = None,
    width: float | None = None,
    orders: int = 1,
    seed: int = 0,
    rank: int = 1,
    explore: float = EXPLORE,
    progress: Callable[[int], None] | None = None,
) -> AddModelResult:
    """Replay adding `model` to the others' board, at random and (with `active`) actively.

    Raises:
        HarnessUsageError: `model` is not on the board, or no other model gives history, or
            the board's items nest in clusters.

    """
    if board.clusters is not None:
        raise HarnessUsageError("--add-model draws items one at a time, which holds only for "
                                "independent items; this board's items nest in clusters (its "
                                "cluster column): replay it without --add-model")  # fmt: skip
    if model not in board.models:
        raise HarnessUsageError(f"--add-model '{model}' is not on the board; its models are: "
                                f"{', '.join(board.models[:10])}"
                                + (" ..." if len(board.models) > 10 else ""))  # fmt: skip
    from harness.board._history_check import same_name
    from harness.terminal import printable

    twin = next((m for m in board.models if m != model and same_name(m) == same_name(model)),
                None)  # fmt: skip
    if twin is not None:
        raise HarnessUsageError(f"--add-model {printable(model, markup=False)!r} is on the board "
                                f"again as {printable(twin, markup=False)!r} (the same name but "
                                "for case, spaces or invisible characters): it would be compared "
                                "with itself; keep one of the two rows")  # fmt: skip
    if len(board.models) < 2 or (active and len(board.models) < 3):
        need = "two other models" if active else "another model"
        raise HarnessUsageError(f"--active needs past results of {need} on the board to fit "
                                f"its item model; the board has only {', '.join(board.models)}"
                                if active else f"--add-model needs {need} on the board to "
                                "compare with")  # fmt: skip
    if not 0 < alpha < 1 or margin < 0 or orders < 1 or (width is not None and width <= 0):
        raise ValueError(f"bad settings: alpha {alpha}, margin {margin}, orders {orders}, "
                         f"width {width}")  # fmt: skip
    if orders * board.scores.shape[1] > MAX_REPLAY_CELLS:
        raise HarnessUsageError(
            f"--orders {orders} x {board.scores.shape[1]:,} items is more than "
            f"{MAX_REPLAY_CELLS:,} cells held at once; use fewer orders"
        )
    row = board.models.index(model)
    y = board.scores[row]
    history_rows = [i for i in range(len(board.models)) if i != row]
    history = board.scores[history_rows]
    n_items = y.size
    budget = n_items if budget is None else max(1, min(budget, n_items))
    truth = float(y.mean())
    others = history.mean(axis=1)
    grid = np.linspace(0, 1, GRID)
    rng = np.random.default_rng([seed, 1])
    orders_ = np.argsort(rng.random((orders, n_items)), axis=1)
    settings = dict(reps=orders, budget=budget, truth=truth, others=others, margin=margin,
                    width=width, progress=progress)  # fmt: skip

    planned = planned_items(budget, width, alpha)
    wor = BettingCS(alpha=alpha, population=n_items, batch=orders, grid=grid, planned=planned)
    position = {"t": 0}

    def draw_random(mask: np.ndarray) -> None:
        wor.update(y[orders_[:, position["t"]]], mask=mask)
        position["t"] += 1

    runs = [replace(_run("random", draw_random, wor.bounds, **settings), cs=wor.method)]
    if active:
        items = fit_items(history, rank=rank, seed=seed)
        cs = ActiveMeanCS(n_items, alpha=alpha, batch=orders, grid=grid, planned=planned)
        state = {"u": np.zeros((orders, rank))}
        pick = np.random.default_rng([seed, 2])

        def draw_active(mask: np.ndarray) -> None:
            state["u"] = ability(items, cs.asked, y, start=state["u"], iterations=2)
            pred = predict(items, state["u"])
            q = selection(pred, ~cs.asked, explore)
            cdf = np.cumsum(q, axis=1)
            u = pick.random(orders)[:, None] * cdf[:, -1:]
            item = np.minimum((cdf < u).sum(axis=1), n_items - 1)
            item = np.where(q[np.arange(orders), item] > 0, item, np.argmax(q, axis=1))
            cs.step(pred, q, item, y[item], mask=mask)

        runs.insert(0, replace(_run("active", draw_active, cs.bounds, **settings), cs=cs.method))
    truth_diff = truth - others
    wrong = tuple(float(_wrong(r.resolution, truth_diff, margin).mean()) for r in runs)
    direction = tuple(float(_wrong(r.resolution, truth_diff, margin, True).mean()) for r in runs)
    return AddModelResult(
        model=model,
        history=tuple(board.models[i] for i in history_rows),
        n_items=n_items,
        truth=truth,
        others=tuple(float(o) for o in others),
        alpha=alpha,
        margin=margin,
        budget=budget,
        width=width,
        seed=seed,
        runs=tuple(runs),
        wrong=wrong,
        wrong_direction=direction,
    )


def planned_items(budget: int, width: float | None, alpha: float) -> int:
    """The n the CSs' bets are tuned to: the budget, or the n at which `width` is reached.

    With a width, the n at which a CS with bets tuned to n would reach it at the largest
    variance, 1/4 (half-width about sqrt(2 log(4 / alpha) / 4n)), where that is smaller.
    """
    if width is None:
        return budget
    return max(1, min(budget, math.ceil(2 * math.log(4 / alpha) / width**2)))


def fixed_srs_items(mean: float, n_items: int, width: float, alpha: float = 0.05) -> int:
    """Items a fixed-n simple random sample needs for a normal interval of `width`.

    With the finite-population correction, at the true mean: the oracle fixed design, not
    anytime-valid.
    """
    z = 2 * float(norm.ppf(1 - alpha / 2))
    var = max(mean * (1 - mean), 1e-12)
    for n in range(1, n_items + 1):
        fpc = (n_items - n) / max(n_items - 1, 1)
        if z * math.sqrt(var / n * fpc) <= width:
            return n
    return n_items
