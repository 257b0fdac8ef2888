"""`harness board replay`: sequential evaluation replayed on a finished board.

The procedure, for one seeded order of the items (the same order for every model, so pairs stay
paired):

1. Item t is asked of every model still being queried.
2. Each pair (a, b) keeps a betting confidence sequence for the mean of a - b at level
   alpha / k for k pairs (Bonferroni over confidence sequences), so all k cover at once, at
   every item count, with probability >= 1 - alpha.
3. A pair is resolved when its CS excludes 0 ("a > b" or "b > a") or lies inside [-margin,
   margin] ("equivalent"); a direction is read first. A resolved pair takes no more items.
4. A model stops being asked when every pair it is in is resolved, or at the budget.

Steps 2-4 are `harness.board._family.PairFamily`, which a live run can use as items come back.

A board whose items nest in clusters (its CSV has a `cluster` column; `harness board export`
writes one for a clustered design) is replayed cluster by cluster: the clusters come in the
seeded order, a cluster's items in turn, and each pair's CS takes one observation per completed
cluster, the mean difference over its items (`harness.board._family.ClusterMeans`). The clusters
are the independent draws, so the CS holds for the mean of cluster means (the item mean only
when clusters are of one size); fed item by item it would not hold (27% wrong directions at a
population difference of 0 on 8 problems x 130 cells). The budget is then whole clusters within
`budget` items, the full-board difference is the mean of cluster means, the engine tests the
clusters' mean differences, and the oracle fixed n is searched at cluster ends.

What the mean is (`target`):
- "population" (the default): the items are a random sample from a population of items, and
  the CS is the independent-draw form. Decisions are about the population's mean difference,
  the question the fixed-n engine's tests answer, so the two can be compared.
- "board": the CS is the without-replacement form for the board's N items, and decisions are
  about the mean over exactly these items. Near the end of the board it shrinks fast (at N it
  is the known mean), so a near-tie gets a direction late in the board that says nothing
  beyond these items, and that the engine's population test would not give.

What it is compared with:
- `queries_all`: models x items, the full board.
- the full-data engine: `harness.stats._compare.compare` on every item, Holm at alpha; its
  decisions (a direction where the Holm p <= alpha) are listed beside the sequential ones, with
  every disagreement.
- `queries_fixed`: models x n*, where n* is the oracle fixed n: the smallest prefix of the same
  order (checked at `FIXED_STEPS` evenly spaced sizes) at which the fixed-n engine (Holm at
  alpha; for "equivalent", its 95% interval inside the margin) makes every decision the
  sequential run made, and the full board if none does. It is an oracle because n* is chosen
  knowing the answer: a real fixed design must fix n beforehand, so `queries_fixed` is a lower
  bound on what one needs for the same decisions (and the fixed-n decisions at a data-chosen n
  are not themselves valid).
- wrong decisions: a direction against the sign of the full board's difference, or an
  "equivalent" whose full-board difference leaves the margin (or against `truth` per pair, where
  the caller knows the population's differences, as in simulations).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any, Literal, get_args

import numpy as np

from harness.board._family import (
    ClusterMeans,
    Family,
    PairFamily,
    Resolution,
    cluster_ends,
    cluster_visit,
    whole_clusters,
)
from harness.board._table import Board
from harness.errors import HarnessUsageError
from harness.stats import Choice, Comparison, Design, clean_json, compare

Target = Literal["population", "board"]
MARGIN = 0.05  # default equivalence margin, on the score scale (5 points of accuracy)
FIXED_STEPS = 20  # prefix sizes tried for the oracle fixed n
FIXED_ORDERS = 3  # orders on which the oracle fixed n is searched (the engine is slow)
TOL = 8 * np.finfo(float).eps


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """One pair across the replayed orders (its interval from the first order).

    Attributes:
        a: First model.
        b: Second model.
        resolution: How the first order resolved it.
        items: Items the first order took to resolve it (the budget when unresolved).
        low: Lower end of its CS for mean(a - b) when it was resolved (first order).
        high: Upper end.
        full_difference: mean(a - b) over every item of the board.
        engine: The full-data engine's decision: "a > b", "b > a" or "not significant".
        p_holm: The engine's Holm-adjusted p-value (nan: not tested).
        resolved_share: Share of orders in which it was resolved.
        items_mean: Items it took, averaged over orders (the budget where unresolved).
        wrong: Orders in which its decision was wrong about the full board.

    """

    a: str
    b: str
    resolution: Resolution
    items: int
    low: float
    high: float
    full_difference: float
    engine: str
    p_holm: float
    resolved_share: float
    items_mean: float
    wrong: int


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A pair the first order resolved differently from the full-data engine."""

    a: str
    b: str
    sequential: Resolution
    engine: str
    why: str


@dataclass(frozen=True, slots=True)
class OrderRun:
    """One order's replay.

    Attributes:
        model_items: Items each model was asked, in board order.
        resolution: Per pair (in `pairs` order), its resolution.
        items: Per pair, items taken to resolve (the last item count when unresolved).
        low: Per pair, CS lower end at resolution (nan unless tracked).
        high: Per pair, CS upper end.
        fixed_n: The oracle fixed n for this order, or None when not searched.
        method: The pairs' CS, in words (which CS, which bets, tuned to which n).

    """

    model_items: tuple[int, ...]
    resolution: tuple[Resolution, ...]
    items: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    fixed_n: int | None = None
    method: str = ""

    @property
    def queries(self) -> int:
        """Model-item queries used."""
        return sum(self.model_items)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """`harness board replay`'s result: queries, decisions, and how they compare.

    Attributes:
        models: The board's models.
        n_items: The board's items.
        alpha: Family-wise error level (Bonferroni over the pairs' CSs).
        margin: The equivalence margin.
        budget: Items per model at most.
        target: What the means are: the items' population, or the board's own items.
        clusters: The clusters the items nest in (each pair's CS takes one observation per
            completed cluster); None when the items are independent draws.
        seed: Seed of the first order (order r uses [seed, r]).
        orders: Orders replayed.
        queries_used: Queries, mean over orders.
        queries_used_sd: Their standard deviation over orders (0 for one order).
        queries_used_range: (min, max) over orders.
        queries_fixed: models x the oracle fixed n, mean over the orders searched.
        fixed_orders: Orders on which the oracle fixed n was searched.
        queries_all: models x items.
        wrong_direction_rate: Share of orders with at least one direction opposite to the full
            board's difference (the family-wise error the guarantee bounds by alpha).
        wrong_decision_rate: The same counting wrong equivalences too.
        pairs: One per pair.
        disagreements: The first order's pairs that differ from the full-data engine.
        disagreement_rate: Share of (order, pair) that differ from the full-data engine.
        runs: Every order's replay.

    """

    models: tuple[str, ...]
    n_items: int
    alpha: float
    margin: float
    budget: int
    target: Target
    clusters: int | None
    seed: int
    orders: int
    queries_used: float
    queries_used_sd: float
    queries_used_range: tuple[int, int]
    queries_fixed: float
    fixed_orders: int
    queries_all: int
    wrong_direction_rate: float
    wrong_decision_rate: float
    pairs: tuple[PairOutcome, ...]
    disagreements: tuple[Disagreement, ...]
    disagreement_rate: float
    runs: tuple[OrderRun, ...] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data (nan becomes None); `runs` are summarised, not listed."""
        out = {
            "models": list(self.models),
            "items": self.n_items,
            "alpha": self.alpha,
            "margin": self.margin,
            "budget": self.budget,
            "target": self.target,
            "clusters": self.clusters,
            "method": self.method,
            "seed": self.seed,
            "orders": self.orders,
            "queries_used": self.queries_used,
            "queries_used_sd": self.queries_used_sd,
            "queries_used_range": list(self.queries_used_range),
            "queries_fixed": self.queries_fixed,
            "fixed_orders": self.fixed_orders,
            "queries_all": self.queries_all,
            "items_used": [list(r.model_items) for r in self.runs[:1]][0],
            "wrong_direction_rate": self.wrong_direction_rate,
            "wrong_decision_rate": self.wrong_decision_rate,
            "disagreement_rate": self.disagreement_rate,
            "pairs": [dict(_slots(p)) for p in self.pairs],
            "disagreements": [dict(_slots(d)) for d in self.disagreements],
            "guarantee": GUARANTEE,
            "queries_fixed_means": FIXED_MEANS,
        }
        return clean_json(out)

    @property
    def method(self) -> str:
        """How each pair's CS is fed, and which CS it is, in words."""
        cs = f"; {self.runs[0].method}" if self.runs and self.runs[0].method else ""
        if self.clusters is None:
            return "one observation per item (items are independent draws)" + cs
        return (
            f"one observation per completed cluster ({self.clusters} clusters): the mean "
            "difference over its items; the estimand is the mean of cluster means" + cs
        )

    def _target(self) -> str:
        text = TARGETS[self.target]
        return text if self.clusters is None else text.replace("items", "clusters")

    def summary(self) -> str:
        """The result as text."""
        lines = [
            f"{len(self.models)} models x {self.n_items} items; {self.orders} order(s) from seed "
            f"{self.seed}; alpha {self.alpha:g} over {len(self.pairs)} pairs (Bonferroni over "
            f"confidence sequences); margin +/-{self.margin:g}; budget {self.budget}; target: "
            f"{self._target()}; {self.method}",
            f"queries used: {self.queries_used:.1f} (sd {self.queries_used_sd:.1f}, range "
            f"{self.queries_used_range[0]}-{self.queries_used_range[1]}) of {self.queries_all} "
            f"(all: {self.queries_all / max(self.queries_used, 1):.2f}x)",
            f"oracle fixed design, same decisions: {self.queries_fixed:.1f} queries "
            f"(fixed/sequential {self.queries_fixed / max(self.queries_used, 1):.2f}x; searched "
            f"on {self.fixed_orders} order(s))",
            "items per model (first order): "
            + ", ".join(
                f"{m} {n}" for m, n in zip(self.models, self.runs[0].model_items, strict=True)
            ),  # fmt: skip
            f"wrong direction: {self.wrong_direction_rate:.3f} of orders (any wrong decision: "
            f"{self.wrong_decision_rate:.3f}); differs from full-data engine: "
            f"{self.disagreement_rate:.3f} of pair-orders",
            "pairs (first order): a - b, resolution at items, CS, full-board difference, engine",
        ]
        for p in self.pairs:
            lines.append(
                f"  {p.a} - {p.b}: {p.resolution} at {p.items} [{p.low:+.3f}, {p.high:+.3f}]; "
                f"full {p.full_difference:+.4f}; engine {p.engine} (Holm p {p.p_holm:.3g}); "
                f"resolved in {p.resolved_share:.0%} of orders, {p.items_mean:.0f} items on "
                "average"
            )
        if self.disagreements:
            lines.append("disagreements with the full-data engine (first order):")
            lines += [f"  {d.a} - {d.b}: {d.sequential} vs {d.engine}: {d.why}"
                      for d in self.disagreements]  # fmt: skip
        else:
            lines.append("no disagreement with the full-data engine (first order)")
        return "\n".join(lines)


TARGETS = {
    "population": "the items' population (independent-draw CS)",
    "board": "the board's own items (without-replacement CS)",
}
GUARANTEE = (
    "with probability >= 1 - alpha, every pair's confidence sequence holds the pair's mean "
    "difference (over the items' population, or over the board's items with --target board) "
    "at every item count at once, so every direction and "
    "every equivalence read from them is right, provided the draws are independent: the "
    "items, or on a clustered board the clusters (one observation per completed cluster, "
    "the mean being the mean of cluster means); each pair's sequence is at 1 - alpha / pairs; "
    "the fixed-n engine's numbers are not anytime-valid"
)
FIXED_MEANS = (
    "models x the smallest prefix n (of 20 evenly spaced) of the same order at which the "
    "fixed-n engine (Holm at alpha; equivalence: its 95% interval inside the margin) makes "
    "every decision the sequential run made; an oracle lower bound for a fixed design"
)


def _slots(obj: Any) -> list[tuple[str, Any]]:
    return [(name, getattr(obj, name)) for name in obj.__slots__]


# Seconds `replay` takes, measured on this project's shared 2-core machine (issue 42): one order
# of 20 x 200 took 3.45 s and 40 x 400 28.6 s (a term in pairs x items), 60 x 2 1.56 s and
# 120 x 2 25.6 s (a term in pairs squared: the engine and the oracle fixed n); each order after
# the first added about 0.25 of the first's time (10 orders of 20 x 200: 11.9 s).
SECONDS_PER_PAIR_ITEM = 9e-5
SECONDS_PER_PAIR_SQUARED = 5e-7
SECONDS_LIMIT = 600  # a replay estimated past 10 minutes needs --max-work


def estimated_seconds(n_models: int, n_items: int, orders: int) -> float:
    """The time `replay` is expected to take, from the measured rates above."""
    pairs = n_models * (n_models - 1) / 2
    first = SECONDS_PER_PAIR_ITEM * pairs * n_items + SECONDS_PER_PAIR_SQUARED * pairs**2
    return first * (1 + 0.3 * (orders - 1))


def pair_list(models: Sequence[str]) -> list[tuple[int, int]]:
    """Every pair of model indices (i < j), in the order pairs are reported."""
    return list(combinations(range(len(models)), 2))


def order_of(n_items: int, seed: int, r: int) -> np.ndarray:
    """The r-th seeded random order of the items, shared by every model."""
    return np.random.default_rng([seed, r]).permutation(n_items)


def board_order(board: Board, seed: int, r: int) -> np.ndarray:
    """The r-th order of a board's items: clusters in a seeded order where items nest in them."""
    if board.clusters is None:
        return order_of(board.scores.shape[1], seed, r)
    return cluster_visit(board.clusters, [seed, r])


def board_means(board: Board) -> np.ndarray:
    """Each model's mean: over items, or over clusters of their items' means where they nest."""
    if board.clusters is None:
        return board.scores.mean(axis=1)
    labels = np.asarray(board.clusters)
    names = list(dict.fromkeys(board.clusters))
    per_cluster = [board.scores[:, labels == c].mean(axis=1) for c in names]  # C x (M,)
    return np.mean(per_cluster, axis=0)


def replay_order(
    board: Board,
    order: np.ndarray,
    *,
    alpha: float,
    margin: float,
    budget: int,
    target: Target = "population",
    intervals: bool = True,
    cs: Choice = "auto",
    family: Family = "bonferroni",
) -> OrderRun:
    """Run the procedure on one order of the items (see the module docstring).

    On a clustered board `order` visits each cluster's items together (`board_order`).
    """
    n_items = board.scores.shape[1]
    family: PairFamily | ClusterMeans
    if board.clusters is None:
        family = PairFamily(board.models, alpha=alpha, margin=margin, budget=budget,
                            population=n_items if target == "board" else None,
                            intervals=intervals, cs=cs, family=family)  # fmt: skip
        last = min(budget, n_items)
    else:
        ends = cluster_ends([board.clusters[i] for i in order])
        inner = PairFamily(board.models, alpha=alpha, margin=margin,
                           budget=whole_clusters(ends, budget),
                           population=ends.size if target == "board" else None,
                           intervals=intervals, cs=cs, family=family)  # fmt: skip
        family = ClusterMeans(inner, board.models, [board.clusters[i] for i in order])
        for start, end in zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True):
            if not family.active():
                break
            family.observe_cluster(board.scores[:, order[start:end]])
        last = 0
    for t in range(last):
        family.observe_row(board.scores[:, order[t]])
        if not family.active():
            break
    states = family.states()
    return OrderRun(
        model_items=tuple(family.model_items().values()),
        resolution=tuple(s.resolution for s in states),
        items=tuple(s.items for s in states),
        low=tuple(s.low for s in states),
        high=tuple(s.high for s in states),
        method=(family.family if isinstance(family, ClusterMeans) else family).method,
    )


def engine_decisions(comparison: Comparison, models: Sequence[str], alpha: float) -> list[str]:
    """Per pair (i < j), the fixed-n engine's decision: a direction where Holm p <= alpha."""
    out = []
    for i, j in pair_list(models):
        pair = comparison.pair(models[i], models[j])
        if pair is None or pair.test is None or not pair.significant(alpha):
            out.append("not significant")
        else:
            out.append("a > b" if pair.test.estimate > 0 else "b > a")
    return out


def _engine(board: Board, columns: np.ndarray, alpha: float) -> Comparison:
    design = Design(unit="item", score="binary" if board.binary else "bounded", alpha=alpha,
                    family="the pairs of models on the board",
                    cluster=None if board.clusters is None else "cluster")  # fmt: skip
    names = [board.items[c] for c in columns]
    scores = {
        m: dict(zip(names, board.scores[r, columns].tolist(), strict=True))
        for r, m in enumerate(board.models)
    }
    clusters = None
    if board.clusters is not None:
        clusters = {board.items[c]: board.clusters[c] for c in columns}
    return compare(design, scores, clusters=clusters, metric="board score")


def _matches(run: OrderRun, comparison: Comparison, board: Board, margin: float,
             alpha: float) -> bool:  # fmt: skip
    """Whether a fixed-n comparison makes every decision the sequential run made."""
    decided = engine_decisions(comparison, board.models, alpha)
    for (i, j), resolution, engine in zip(pair_list(board.models), run.resolution, decided,
                                          strict=True):  # fmt: skip
        if resolution in ("a > b", "b > a") and engine != resolution:
            return False
        if resolution == "equivalent":
            pair = comparison.pair(board.models[i], board.models[j])
            test = pair.test if pair is not None else None
            if test is None or not (-margin <= test.low and test.high <= margin):
                return False
    return True


def oracle_fixed_n(board: Board, order: np.ndarray, run: OrderRun, *, alpha: float,
                   margin: float) -> int:  # fmt: skip
    """The smallest prefix size (of `FIXED_STEPS`) at which the fixed-n engine decides alike."""
    if all(r == "unresolved" for r in run.resolution):
        return 0
    n_items = order.size
    if board.clusters is None:
        ends = np.arange(2, n_items + 1)  # two items at least
    else:  # prefixes of whole clusters, two at least
        ends = cluster_ends([board.clusters[i] for i in order])[1:]
    if ends.size == 0:
        return n_items
    steps = {max(1, round(ends.size * s / FIXED_STEPS)) for s in range(1, FIXED_STEPS + 1)}
    sizes = sorted(int(ends[k - 1]) for k in steps)
    for n in sizes:
        if _matches(run, _engine(board, order[:n], alpha), board, margin, alpha):
            return n
    return n_items


def _why(sequential: str, engine: str) -> str | None:
    if sequential == engine:
        return None
    if sequential in ("a > b", "b > a") and engine in ("a > b", "b > a"):
        return "opposite directions"
    if sequential in ("a > b", "b > a"):
        return "the sequential run found a direction the full data's Holm test does not"
    if engine == "not significant":
        return None  # equivalent or unresolved, and no significant difference: agreement
    if sequential == "equivalent":
        return "equivalent within the margin, yet significant on the full data"
    return "unresolved within the budget, significant on the full data"


def replay(
    board: Board,
    *,
    alpha: float = 0.05,
    margin: float = MARGIN,
    budget: int | None = None,
    orders: int = 1,
    seed: int = 0,
    fixed_orders: int = FIXED_ORDERS,
    target: Target = "population",
    truth: Sequence[float] | None = None,
    intervals: bool = True,
    progress: Callable[[int], None] | None = None,
    cs: Choice = "auto",
    family: Family = "bonferroni",
) -> ReplayResult:
    """Replay sequential evaluation over `orders` seeded orders of the board's items.

    Args:
        board: The full board.
        alpha: Family-wise error level over the pairs.
        margin: Equivalence margin (>= 0; 0 never declares equivalence).
        budget: Items per model at most (None: every item).
        orders: Random orders to replay.
        seed: Seed of the orders.
        fixed_orders: Orders on which to search the oracle fixed n (the engine is run up to
            `FIXED_STEPS` times for each).
        target: "population" (independent-draw CS) or "board" (without replacement); see the
            module docstring.
        truth: Per pair (in `pair_list` order), the difference a decision is judged wrong
            against; None: the full board's difference.
        intervals: Track each pair's CS on a 0.01 grid to report it (slower on big boards).
        progress: Called with the number of orders done after each one.
        cs: The pairs' CS (`harness.stats._asymptotic_cs.choose_cs`): "auto" tunes the
            betting CS's bets to the budget (the board's items by default); "plug-in" is the
            earlier CS.
        family: How the pairs' directions share alpha: "bonferroni" (each pair's CS at
            alpha / pairs) or "holm" (sequential Holm over the pairs' one-sided anytime
            p-values; margin 0 only). See `PairFamily`.

    """
    if target not in get_args(Target):
        raise ValueError(f"target must be one of {get_args(Target)}, got {target!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if margin < 0 or orders < 1 or (budget is not None and budget < 1):
        raise ValueError(f"need margin >= 0, orders >= 1, budget >= 1; got {margin}, {orders}, "
                         f"{budget}")  # fmt: skip
    n_models, n_items = board.scores.shape
    budget = n_items if budget is None else min(budget, n_items)
    if board.clusters is not None:
        largest = max(Counter(board.clusters).values())
        if budget < largest:
            raise HarnessUsageError(f"--budget {budget} items is smaller than the board's largest "
                                    f"cluster ({largest} items); a clustered board is asked "
                                    "whole clusters")  # fmt: skip
    pairs = pair_list(board.models)
    means = board_means(board)  # (M,)
    full_diff = np.array([means[i] - means[j] for i, j in pairs])
    truth_diff = full_diff if truth is None else np.asarray(truth, dtype=float)
    if truth_diff.shape != full_diff.shape:
        raise ValueError(f"truth needs one value per pair ({len(pairs)}), got {truth_diff.shape}")
    engine_full = _engine(board, np.arange(n_items), alpha)
    engine = engine_decisions(engine_full, board.models, alpha)
    runs: list[OrderRun] = []
    wrong = np.zeros(len(pairs), int)
    any_wrong_direction = 0
    any_wrong = 0
    disagree = 0
    for r in range(orders):
        order = board_order(board, seed, r)
        run = replay_order(board, order, alpha=alpha, margin=margin, budget=budget,
                           target=target, intervals=intervals and r == 0,
                           cs=cs, family=family)  # fmt: skip
        if r < fixed_orders:
            fixed = oracle_fixed_n(board, order, run, alpha=alpha, margin=margin)
            run = replace(run, fixed_n=fixed)
        res = np.array(run.resolution)
        wrong_dir = ((res == "a > b") & (truth_diff <= TOL)) | (
            (res == "b > a") & (truth_diff >= -TOL)
        )
        wrong_eq = (res == "equivalent") & (np.abs(truth_diff) > margin + TOL)
        wrong += wrong_dir | wrong_eq
        any_wrong_direction += bool(wrong_dir.any())
        any_wrong += bool((wrong_dir | wrong_eq).any())
        disagree += sum(_why(s, e) is not None for s, e in zip(run.resolution, engine, strict=True))
        runs.append(run)
        if progress is not None:
            progress(r + 1)
    first = runs[0]
    outcomes = []
    disagreements = []
    for p, (i, j) in enumerate(pairs):
        a, b = board.models[i], board.models[j]
        pe = engine_full.pair(a, b)
        outcomes.append(
            PairOutcome(
                a=a,
                b=b,
                resolution=first.resolution[p],
                items=first.items[p],
                low=first.low[p],
                high=first.high[p],
                full_difference=float(full_diff[p]),
                engine=engine[p],
                p_holm=pe.p_holm if pe is not None else math.nan,
                resolved_share=float(np.mean([r.resolution[p] != "unresolved" for r in runs])),
                items_mean=float(np.mean([r.items[p] for r in runs])),
                wrong=int(wrong[p]),
            )  # fmt: skip
        )
        why = _why(first.resolution[p], engine[p])
        if why is not None:
            disagreements.append(Disagreement(a, b, first.resolution[p], engine[p], why))
    queries = np.array([r.queries for r in runs], float)
    fixed = [r.fixed_n for r in runs if r.fixed_n is not None]
    return ReplayResult(
        models=board.models,
        n_items=n_items,
        alpha=alpha,
        margin=margin,
        budget=budget,
        target=target,
        clusters=None if board.clusters is None else len(set(board.clusters)),
        seed=seed,
        orders=orders,
        queries_used=float(queries.mean()),
        queries_used_sd=float(queries.std(ddof=1)) if orders > 1 else 0.0,
        queries_used_range=(int(queries.min()), int(queries.max())),
        queries_fixed=float(n_models * np.mean(fixed)) if fixed else math.nan,
        fixed_orders=len(fixed),
        queries_all=n_models * n_items,
        wrong_direction_rate=any_wrong_direction / orders,
        wrong_decision_rate=any_wrong / orders,
        pairs=tuple(outcomes),
        disagreements=tuple(disagreements),
        disagreement_rate=disagree / (orders * len(pairs)),
        runs=tuple(runs),
    )
