"""Sequential evaluation replayed on boards: queries saved (or not), errors, and where it loses.

For each board it prints what `harness board replay` measures:
- queries: sequential (mean over orders), the oracle fixed design with the same decisions
  (models x the smallest prefix at which the fixed-n engine, Holm at alpha, decides alike;
  a lower bound for any fixed design), and the full board;
- the ratios fixed / sequential and all / sequential;
- the share of orders with a wrong direction (against the full board's difference);
- the pairs by |full-board difference|: how many, how many resolved, the items they took, and
  how many the full-data engine (Holm) decides, which shows where the method loses;
- the price of anytime validity: the median ratio over pairs of the CS's width at the full n
  (independent-draw form, alpha / pairs) to the engine's 95% fixed-n interval width.

Boards:
- simulated 2PL IRT boards (10-60 models x 200-2,000 items) with item difficulty, item
  discrimination and model ability, including near-ties (models 0.02 logits apart);
- the LLMBar judges board (4 judges x 885 items; a judge scores 1 on an item when its verdict,
  in the unswapped order, agrees with the human label, 0 when it disagrees or gave none), from
  $HARNESS_DATA_DIR (default ../shared/data).

Usage: python benchmarks/sequential.py [--quick] [--orders R] [--big] [--write-judges CSV]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from itertools import combinations
from pathlib import Path

import numpy as np
from scipy.stats import norm

from harness.board import (
    MARGIN,
    Board,
    ReplayResult,
    add_model,
    fixed_srs_items,
    pair_list,
    replay,
    write_board,
)
from harness.stats import BettingCS, Design, bonferroni_alpha, compare

BINS = (0.0, 0.01, 0.03, 0.05, 0.1, 1.01)
PILOT = 50  # items of the pilot that plans the runnable fixed design


def pilot_fixed_stopping(board: Board, alpha: float, margin: float, seed: int) -> int:
    """Queries of a fixed SRS design planned from a pilot, before the run: a design a user can run.

    The pilot asks every model PILOT random items; the design then asks every model n items,
    the n at which each pair's fixed-n normal interval (Bonferroni over the pairs, the pilot's
    largest variance of a difference) is no wider than the margin: an interval that narrow
    either excludes 0 or lies inside +/-margin, so every pair is decided, as the sequential
    run's rule asks. n is capped at the board's items; the pilot's items count towards it.
    """
    m, n_items = board.scores.shape
    cols = np.random.default_rng([seed, 99]).permutation(n_items)[:PILOT]
    pilot = board.scores[:, cols]
    ia, ib = np.array(pair_list(board.models)).T
    diffs = pilot[ia] - pilot[ib]  # (K, PILOT)
    var = float(np.max(diffs.var(axis=1, ddof=1))) + 1.0 / PILOT  # a little for the pilot's noise
    z = float(norm.ppf(1 - alpha / (2 * ia.size)))
    n = math.ceil((2 * z) ** 2 * var / margin**2)
    return m * min(n_items, max(PILOT, n))


def pilot_fixed_add(y: np.ndarray, width: float, alpha: float, seed: int) -> int:
    """Items of a fixed SRS design for one model's mean at `width`, planned from a pilot.

    The pilot asks PILOT random items; p = (successes + 1) / (PILOT + 2); the design asks the n
    at which the normal interval with the finite-population correction is `width` wide at that
    variance (`fixed_srs_items`), at least the pilot's items.
    """
    cols = np.random.default_rng([seed, 98]).permutation(y.size)[:PILOT]
    p = (y[cols].sum() + 1) / (PILOT + 2)
    return max(PILOT, fixed_srs_items(float(p), y.size, width, alpha))


def irt_board(models: int, items: int, *, seed: int, near_ties: int, spread: float = 1.0,
              discrimination: float = 1.0) -> tuple[Board, np.ndarray]:  # fmt: skip
    """A 2PL board, P(correct) = sigmoid(a_j (theta_i - b_j)), and each pair's true difference.

    Abilities are normal with sd `spread`; `near_ties` models are copies of others' abilities
    plus 0.02 logits. Difficulty b ~ N(0, 1); discrimination a ~ discrimination * LogNormal(0,
    0.3). The true difference of a pair is its expectation over the item distribution
    (200,000 fresh items).
    """
    rng = np.random.default_rng(seed)
    base = rng.normal(0, spread, models - near_ties)
    ties = rng.choice(base, near_ties, replace=False) + 0.02
    theta = np.sort(np.concatenate([base, ties]))
    b = rng.normal(0, 1, items)
    a = discrimination * rng.lognormal(0, 0.3, items)
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    scores = (rng.random((models, items)) < p).astype(float)
    b_pop = rng.normal(0, 1, 200_000)
    a_pop = discrimination * rng.lognormal(0, 0.3, 200_000)
    mean = np.array([np.mean(1 / (1 + np.exp(-a_pop * (t - b_pop)))) for t in theta])  # (M,)
    truth = np.array([mean[i] - mean[j] for i, j in combinations(range(models), 2)])
    board = Board(tuple(f"m{i:02d}" for i in range(models)),
                  tuple(f"q{j}" for j in range(items)), scores)  # fmt: skip
    return board, truth


def factor_board(models: int, items: int, *, seed: int, rank: int,
                 discrimination: float) -> tuple[Board, np.ndarray]:  # fmt: skip
    """A rank-k logistic board: P = sigmoid(theta_m . a_i - b_i), |a_i| ~ discrimination.

    Abilities theta ~ N(0, I_k); loadings a_i ~ discrimination * (a unit direction near the
    first axis) * LogNormal(0, 0.3); difficulty b ~ N(0, discrimination). Returns the board and
    the (models, items) probabilities, from which the oracle bound is read.
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, (models, rank))
    direction = rng.normal(0, 0.5, (items, rank))
    direction[:, 0] += 1.0
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    a = discrimination * direction * rng.lognormal(0, 0.3, (items, 1))
    b = rng.normal(0, discrimination, items)
    p = 1 / (1 + np.exp(-(theta @ a.T - b[None, :])))
    scores = (rng.random((models, items)) < p).astype(float)
    order = np.argsort(scores.mean(axis=1))
    board = Board(tuple(f"m{i:02d}" for i in range(models)),
                  tuple(f"q{j}" for j in range(items)), scores[order])  # fmt: skip
    return board, p[order]


def oracle_bound(p: np.ndarray, row: int) -> float:
    """Per-draw variance of random sampling over that of the best weighted sampling with
    perfect predictions, (mean p (1 - p)) / (mean sqrt(p (1 - p)))^2 in expectation: the most
    any predictor-and-selection design of this kind can save, before finite-population and
    anytime effects."""
    q = p[row]
    mu = q.mean()
    return float(mu * (1 - mu) / max(np.mean(np.sqrt(q * (1 - q))) ** 2, 1e-12))


def add_model_report(name: str, board: Board, probs: np.ndarray | None, *, width: float,
                     reps: int, alpha: float, every: int, rank: int = 1) -> None:  # fmt: skip
    """Leave one model out (every `every`-th, in turn), add it back with and without --active."""
    start = time.perf_counter()
    rows = list(range(0, len(board.models), every))
    print(f"\n{name}: adding one model to {len(board.models) - 1} with history, "
          f"{board.scores.shape[1]} items; stop at CS width <= {width} or every pair resolved "
          f"(margin 0, so only directions); {reps} replications; {len(rows)} models left out "
          "in turn")  # fmt: skip
    print("    model  mean   random  active  random/active  pilot-fixed  oracle-fixed  "
          "coverage(a/r)  wrong(a)  oracle bound")  # fmt: skip
    ratios, fixed_ratios, coverages, losses, pilot_ratios, wrongs = [], [], [], [], [], []
    for row in rows:
        model = board.models[row]
        result = add_model(board, model, alpha=alpha, margin=0.0, width=width, orders=reps,
                           seed=row, rank=rank)  # fmt: skip
        active, random = result.run("active"), result.run("random")
        assert active is not None and random is not None
        ratio = random.queries.mean() / active.queries.mean()
        fixed = fixed_srs_items(result.truth, board.scores.shape[1], width, alpha)
        pilot = pilot_fixed_add(board.scores[row], width, alpha, seed=row)
        pilot_ratios.append(pilot / active.queries.mean())
        wrongs.append(result.wrong_direction[0])
        ratios.append(ratio)
        fixed_ratios.append(fixed / active.queries.mean())
        coverages += [active.coverage, random.coverage]
        bound = f"{oracle_bound(probs, row):.2f}x" if probs is not None else "-"
        print(f"    {model:<6} {result.truth:.3f}  {random.queries.mean():>6.0f}  "
              f"{active.queries.mean():>6.0f}  {ratio:>13.2f}  {pilot:>11}  {fixed:>12}  "
              f"{active.coverage:.2f}/{random.coverage:.2f}      {result.wrong_direction[0]:.3f}"
              f"     {bound}")  # fmt: skip
        if ratio < 1:
            losses.append(f"{model} (mean {result.truth:.3f}: {ratio:.2f}x)")
    print(f"  random/active at the same width: median {np.median(ratios):.2f}x (range "
          f"{min(ratios):.2f}-{max(ratios):.2f}); fixed-SRS(oracle, not anytime)/active median "
          f"{np.median(fixed_ratios):.2f}x; pilot-fixed (runnable)/active median "
          f"{np.median(pilot_ratios):.2f}x (range {min(pilot_ratios):.2f}-{max(pilot_ratios):.2f})"
          f"; lowest coverage {min(coverages):.2f}; worst wrong-direction rate "
          f"{max(wrongs):.3f} ({time.perf_counter() - start:.0f} s)")  # fmt: skip
    print("  active loses to random on: " + (", ".join(losses) if losses else "none"))


def judges_board(root: Path) -> Board:
    """LLMBar: a judge is correct on an item when its verdict agrees with the human label."""
    from harness.validation.llmbar_data import JUDGES, SUBSETS, load_llmbar

    rows: dict[str, list[float]] = {j: [] for j in JUDGES}
    items: list[str] = []
    for subset in SUBSETS:
        for judge in JUDGES:
            as0 = load_llmbar(subset, judge, str(root), null_as=0)
            as1 = load_llmbar(subset, judge, str(root), null_as=1)
            # a null verdict maps to 0 in one load and 1 in the other: never counted correct
            correct = (as0.judge_verdict == as0.human) & (as1.judge_verdict == as1.human)
            rows[judge] += correct.astype(float).tolist()
        items += [f"{subset}/{i}" for i in range(len(as0.human))]
    models = tuple(sorted(rows))
    return Board(models, tuple(items), np.array([rows[m] for m in models]))


def price(board: Board, alpha: float) -> float:
    """Median over pairs of (anytime CS width at the full n) / (the engine's 95% width)."""
    every = pair_list(board.models)
    pairs = every  # up to 300 pairs, evenly spread, each at alpha / (all pairs)
    if len(every) > 300:
        pairs = [every[i] for i in np.linspace(0, len(every) - 1, 300).astype(int)]
    ia = np.array([i for i, _ in pairs])
    ib = np.array([j for _, j in pairs])
    cs = BettingCS(alpha=bonferroni_alpha(alpha, len(every)), kind="difference",
                   batch=len(pairs), grid=np.linspace(-1, 1, 801),
                   planned=board.scores.shape[1])  # fmt: skip
    for t in range(board.scores.shape[1]):
        col = board.scores[:, t]
        cs.update(col[ia] - col[ib])
    low, high = cs.bounds()
    design = Design(unit="item", score="binary" if board.binary else "bounded", alpha=alpha)
    comparison = compare(design, board.by_model())
    ratios = []
    for p, (i, j) in enumerate(pairs):
        pe = comparison.pair(board.models[i], board.models[j])
        if pe is not None and pe.test is not None and pe.test.high > pe.test.low:
            ratios.append((high[p] - low[p]) / (pe.test.high - pe.test.low))
    return float(np.median(ratios))


def bins_table(board: Board, result: ReplayResult) -> list[str]:
    """Pairs by |full-board difference|: count, resolved share, items, engine-decided share."""
    diffs = np.array([abs(p.full_difference) for p in result.pairs])
    lines = ["    |diff|        pairs  resolved  items(mean)  engine decides  wrong"]
    for lo, hi in zip(BINS[:-1], BINS[1:], strict=True):
        sel = [p for p, d in zip(result.pairs, diffs, strict=True) if lo <= d < hi]
        if not sel:
            continue
        resolved = np.mean([p.resolved_share for p in sel])
        items = np.mean([p.items_mean for p in sel])
        engine = np.mean([p.engine != "not significant" for p in sel])
        wrong = sum(p.wrong for p in sel)
        label = f"[{lo:.2f}, {min(hi, 1):.2f})"
        lines.append(f"    {label:<13} {len(sel):>5}  {resolved:>8.2f}  {items:>11.0f}  "
                     f"{engine:>14.2f}  {wrong:>5}")  # fmt: skip
    return lines


def report(name: str, board: Board, truth: np.ndarray | None, *, orders: int,
           fixed_orders: int, alpha: float, target: str, cs: str = "auto") -> None:  # fmt: skip
    start = time.perf_counter()
    result = replay(board, alpha=alpha, orders=orders, fixed_orders=fixed_orders,
                    intervals=False, target=target,  # type: ignore[arg-type]
                    truth=truth if target == "population" else None,
                    cs=cs)  # type: ignore[arg-type]  # fmt: skip
    seconds = time.perf_counter() - start
    m, n = board.scores.shape
    used, fixed, full = result.queries_used, result.queries_fixed, result.queries_all
    counts = {r: sum(p.resolution == r for p in result.pairs)
              for r in ("a > b", "b > a", "equivalent", "unresolved")}  # fmt: skip
    print(f"\n{name}, target {target}: {m} models x {n} items, {len(result.pairs)} pairs, "
          f"{orders} orders ({seconds:.0f} s)")  # fmt: skip
    print(f"  queries: sequential {used:.0f} (sd {result.queries_used_sd:.0f}), oracle fixed "
          f"{fixed:.0f} (on {result.fixed_orders} orders), all {full}")  # fmt: skip
    pilot = pilot_fixed_stopping(board, alpha, MARGIN, seed=0)
    print(f"  ratio fixed/sequential {fixed / used:.2f}x; all/sequential {full / used:.2f}x; "
          f"pilot-planned fixed (runnable) {pilot} queries, pilot-fixed/sequential "
          f"{pilot / used:.2f}x")  # fmt: skip
    print(f"  CS: {result.method}")
    print(
        f"  first order: {counts['a > b'] + counts['b > a']} directions, "
        f"{counts['equivalent']} equivalent, {counts['unresolved']} unresolved; the full-"
        f"data engine decides {sum(p.engine != 'not significant' for p in result.pairs)}"
    )
    print(f"  wrong direction: {result.wrong_direction_rate:.3f} of orders (any wrong decision "
          f"{result.wrong_decision_rate:.3f}); disagreement with the full-data engine "
          f"{result.disagreement_rate:.3f} of pair-orders")  # fmt: skip
    against = "population's" if truth is not None and target == "population" else "board's"
    print(f"  (wrong: against the {against} difference; bins below: |board difference|)")
    if target == "population":  # the price of the independent-draw CS the engine is beside
        print(f"  anytime price: CS width / fixed-n 95% width at the full n, median over pairs "
              f"{price(board, alpha):.2f}x")  # fmt: skip
    print("\n".join(bins_table(board, result)))


def holm_report(name: str, board: Board, truth: np.ndarray | None, *, orders: int,
                alpha: float) -> None:  # fmt: skip
    """Directions only (margin 0), on the same orders: Bonferroni over the pairs' CSs against
    sequential Holm over their one-sided anytime p-values; queries and wrong-direction rates."""
    m, n = board.scores.shape
    print(f"\n{name}: {m} models x {n} items, margin 0, {orders} orders, target population")
    used = {}
    for family in ("bonferroni", "holm"):
        start = time.perf_counter()
        result = replay(board, alpha=alpha, margin=0.0, orders=orders, fixed_orders=0,
                        intervals=False, truth=truth, family=family)  # fmt: skip
        used[family] = result.queries_used
        decided = sum(p.resolution != "unresolved" for p in result.pairs)
        print(
            f"  {family:10s} queries {result.queries_used:.0f} (sd "
            f"{result.queries_used_sd:.0f}) of {result.queries_all}; first order decides "
            f"{decided} of {len(result.pairs)} pairs; wrong direction "
            f"{result.wrong_direction_rate:.3f} of orders ({time.perf_counter() - start:.0f} s)"
        )
    print(f"  Holm / Bonferroni queries: {used['holm'] / used['bonferroni']:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small boards and few orders.")
    parser.add_argument("--judge-orders", type=int, default=200, help="Orders on the judges.")
    parser.add_argument("--reps", type=int, default=None, help="Add-model replications.")
    parser.add_argument("--big", action="store_true", help="Add the 60 x 2,000 board (slow).")
    parser.add_argument("--orders", type=int, default=None, help="Orders per simulated board.")
    parser.add_argument("--sequential-only", action="store_true",
                        help="Skip adding one model with --active.")  # fmt: skip
    parser.add_argument(
        "--holm-only",
        action="store_true",
        help="Only compare Holm with Bonferroni on the simulated boards.",
    )
    parser.add_argument("--add-only", metavar="TEXT", default=None,
                        help="Only the add-model tables whose board name holds TEXT "
                             "(for example MMLU).")  # fmt: skip
    parser.add_argument("--stop-only", metavar="TEXT", default=None,
                        help="Only the stopping tables of boards whose name holds TEXT "
                             "(for example 5,000 or LLMBar).")  # fmt: skip
    parser.add_argument(
        "--target",
        choices=("population", "board"),
        default=None,
        help="Only this target in the stopping tables (default: both).",
    )
    parser.add_argument("--write-judges", metavar="CSV", default=None,
                        help="Only write the LLMBar judges board CSV.")  # fmt: skip
    args = parser.parse_args()
    root = Path(os.environ.get("HARNESS_DATA_DIR", Path(__file__).parents[1] / "../shared/data"))
    if args.write_judges:
        if Path(args.write_judges).exists():
            raise SystemExit(f"{args.write_judges} exists; name a new file")
        write_board(judges_board(root), Path(args.write_judges))
        return
    alpha = 0.05
    orders = args.orders or (5 if args.quick else 20)
    print(f"alpha {alpha} (Bonferroni over the pairs' CSs), margin +/-{MARGIN}, budget: all items")
    boards = [
        ("IRT, spread abilities", irt_board(10, 200, seed=1, near_ties=0, spread=1.5)),
        ("IRT, with near-ties", irt_board(10, 1000, seed=2, near_ties=3)),
        ("IRT, dense, a >= 1", irt_board(20, 2000, seed=3, near_ties=4, discrimination=1.5)),
    ]
    if args.quick:
        boards = [
            ("IRT, spread abilities", irt_board(6, 200, seed=1, near_ties=0, spread=1.5)),
            ("IRT, with near-ties", irt_board(6, 400, seed=2, near_ties=2)),
        ]
    if args.big:
        boards.append(("IRT, 60 models", irt_board(60, 2000, seed=4, near_ties=10)))
    if not args.quick:  # the 2PL board of issue 45: 60 models x 5,000 items, abilities spread
        boards.append(("2PL, 60 x 5,000", irt_board(60, 5000, seed=11, near_ties=6)))
    if args.holm_only:
        # and 8 models spread evenly from 0.3 to 0.8, where many pairs are far apart
        rng = np.random.default_rng(0)
        p = np.linspace(0.3, 0.8, 8)
        spread = Board(models=tuple(f"m{i}" for i in range(8)),
                       items=tuple(str(i) for i in range(2000)),
                       scores=(rng.random((8, 2000)) < p[:, None]).astype(float))  # fmt: skip
        holm_report("spread evenly, 8 x 2000", spread, None, orders=5, alpha=alpha)
        for name, (board, truth) in boards:
            big = len(board.models) > 20
            holm_report(name, board, truth, orders=max(2, orders // 5) if big else orders,
                        alpha=alpha)  # fmt: skip
        return
    targets = (args.target,) if args.target else ("population", "board")
    if args.stop_only:
        boards = [b for b in boards if args.stop_only.lower() in b[0].lower()]
    for name, (board, truth) in [] if args.add_only else boards:
        big = len(board.models) > 20
        for target in targets:
            report(name, board, truth, orders=max(2, orders // 5) if big else orders,
                   alpha=alpha, target=target, fixed_orders=1 if big else 3)  # fmt: skip
    if (root / "judges" / "llmbar").is_dir():
        judges = judges_board(root)
        wanted = not args.stop_only or args.stop_only.lower() in "llmbar judges"
        for target in targets if wanted and not args.add_only else ():
            report("LLMBar judges", judges, None, orders=20 if args.quick else args.judge_orders,
                   fixed_orders=20, alpha=alpha, target=target)  # fmt: skip
    else:
        judges = None
        print(f"\nLLMBar judges: no data under {root}/judges/llmbar; set HARNESS_DATA_DIR")
    if args.sequential_only or args.stop_only:
        return
    print("\n--- adding one model with history: --active against random order (both anytime, "
          "for the board's items), and the oracle fixed-n SRS at the same width ---")  # fmt: skip
    reps = args.reps or (10 if args.quick else 40)
    # boards fixed before measuring: 2PL at discrimination 1 and 2, sharper rank-1 and rank-3
    # items, and MMLU-sized boards (10,000 items); 50-60 models of history each
    adds = [("IRT 2PL, a ~ 1, 51 x 2000", irt_board(51, 2000, seed=5, near_ties=0)[0], None, 1),
            ("IRT 2PL, a ~ 2, 51 x 2000",
             irt_board(51, 2000, seed=6, near_ties=0, discrimination=2.0)[0], None, 1),
            ("rank-1, a ~ 3, 60 x 2000",
             *factor_board(60, 2000, seed=7, rank=1, discrimination=3.0), 1),
            ("rank-3, a ~ 3, 60 x 2000 (rank-1 fit)",
             *factor_board(60, 2000, seed=8, rank=3, discrimination=3.0), 1),
            ("rank-3, a ~ 3, 60 x 2000 (rank-3 fit)",
             *factor_board(60, 2000, seed=8, rank=3, discrimination=3.0), 3),
            ("MMLU-sized: rank-1, a ~ 2, 60 x 10000",
             *factor_board(60, 10_000, seed=9, rank=1, discrimination=2.0), 1),
            ("MMLU-sized: rank-1, a ~ 3, 60 x 10000",
             *factor_board(60, 10_000, seed=10, rank=1, discrimination=3.0), 1)]  # fmt: skip
    if args.quick:
        adds = [("IRT 2PL, a ~ 2", irt_board(21, 400, seed=6, near_ties=0,
                                             discrimination=2.0)[0], None, 1)]  # fmt: skip
    if args.add_only:
        adds = [a for a in adds if args.add_only.lower() in a[0].lower()]
        judges = judges if args.add_only.lower() in "llmbar judges" else None
    for name, board, probs, rank in adds:
        add_model_report(name, board, probs, width=0.1 if args.quick else 0.05, reps=reps,
                         alpha=alpha, every=max(1, len(board.models) // 6), rank=rank)  # fmt: skip
    if judges is not None:
        add_model_report("LLMBar judges", judges, None, width=0.1, reps=reps, alpha=alpha,
                         every=1)  # fmt: skip


if __name__ == "__main__":
    main()
