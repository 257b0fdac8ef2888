"""The accuracy-cost frontier on boards with a known frontier, and the coverage of $ per correct."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.report._budgets import cost_reports
from harness.report._frontier import frontier_probability, frontier_table, on_frontier
from harness.stats._design import Design
from harness.stats._ratio import MIN_CORRECT, MIN_UNITS, ratio_of_means


def test_dominance_on_a_known_board():
    # (accuracy, cost): b is dominated by a (as accurate, dearer); c and d tie exactly, e is
    # the cheapest; f is dearer than a and no more accurate than it
    acc = np.array([0.8, 0.8, 0.6, 0.6, 0.3, 0.7])
    cost = np.array([2.0, 3.0, 1.0, 1.0, 0.5, 2.5])
    assert on_frontier(acc, cost).tolist() == [True, False, True, True, True, False]


def test_frontier_probability_near_one_and_near_zero_when_the_gap_is_wide():
    rng = np.random.default_rng(0)
    n = 200
    correct = np.stack([rng.random(n) < p for p in (0.9, 0.5, 0.4)]).astype(float)  # (3, n)
    cost = np.stack([np.full(n, 2.0), np.full(n, 1.0), np.full(n, 3.0)]) + rng.normal(
        0, 0.05, (3, n)
    )  # fmt: skip
    p = frontier_probability(correct, cost, resamples=500)
    # the best and the cheapest are always on it; the dear and weak one (dominated by both)
    # almost never is
    assert p[0] == pytest.approx(1.0) and p[1] == pytest.approx(1.0)
    assert p[2] < 0.01


def test_frontier_probability_is_about_half_for_a_coin_toss():
    # two models of equal cost per problem and equal accuracy: whichever is ahead in a resample
    # dominates, so each is on the frontier about half the time (more with exact ties)
    rng = np.random.default_rng(1)
    n = 400
    correct = (rng.random((2, n)) < 0.6).astype(float)
    correct[1] = correct[0][rng.permutation(n)]  # the same count of correct answers
    cost = np.ones((2, n))
    p = frontier_probability(correct, cost, resamples=2000)
    assert 0.4 < p[0] < 0.65 and 0.4 < p[1] < 0.65 and p.sum() >= 1.0


def _record(model: str, accuracy: float, dollars: float | None, seed: int) -> LogRecord:
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(60):
        usage = {model: {"input_tokens": 10, "output_tokens": 5}}
        if dollars is not None:
            usage[model]["total_cost"] = float(dollars * rng.uniform(0.9, 1.1))
        value = "C" if rng.random() < accuracy else "I"
        samples.append(SampleScore(f"p{i}", 1, (("match", value),), "", {}, usage, 0, 0.1))
    identity = LogIdentity("arith", "arith", (), "abc", 60, model, ())
    return LogRecord(f"{model}.eval", identity, "2026-01-01", {}, tuple(samples))


def test_a_board_with_a_model_of_unknown_cost():
    records = [_record("a/strong", 0.95, 0.02, 1), _record("a/cheap", 0.5, 0.001, 2),
               _record("a/bad", 0.3, 0.03, 3), _record("a/unpriced", 0.9, None, 4)]  # fmt: skip
    [report] = cost_reports(records)
    f = report.frontier
    assert f.axis == "dollars" and f.shared == 60
    points = {p.model: p for p in f.points}
    assert points["a/strong"].on_frontier and points["a/cheap"].on_frontier
    assert not points["a/bad"].on_frontier and points["a/bad"].probability < 0.05
    assert points["a/strong"].probability > 0.95
    unknown = points["a/unpriced"]
    assert unknown.cost is None and math.isnan(unknown.probability) and not unknown.on_frontier
    assert f.points[-1].model == "a/unpriced"  # listed after the known costs, never at 0
    for p in f.points[:-1]:
        assert p.cost is not None and p.cost.low <= p.cost.estimate <= p.cost.high
        assert p.accuracy.low <= p.accuracy.estimate <= p.accuracy.high


def test_tokens_are_the_axis_when_no_model_has_a_price():
    [report] = cost_reports([_record("a/x", 0.6, None, 5), _record("a/y", 0.4, None, 6)])
    assert report.frontier.axis.startswith("tokens")
    assert all(p.cost is not None and p.cost.estimate == 15.0 for p in report.frontier.points)


@pytest.mark.parametrize(("n", "p"), [(MIN_UNITS, 0.5), (30, 0.3), (100, 0.8)])
def test_dollars_per_correct_covers_at_the_n_it_is_printed(n: int, p: float):
    """Monte-Carlo coverage of Fieller's interval for mean $ / mean correct, where printed.

    Costs lognormal (sigma 0.5) and dearer when correct; 2000 draws, of which those with an
    interval (10 correct or more) count. A 95% interval should cover 94-96%; with the
    simulation's own error (sd 0.5 to 0.8 points) 93.5% is the floor asserted. Fieller's is
    conservative where few answers are correct (96.8% at n = 30, p = 0.3), so the ceiling is
    97.5%: too wide is allowed a little, too narrow is not.
    """
    rng = np.random.default_rng(2026 + n)
    truth = math.exp(0.5**2 / 2) * (1 + 0.5 * p) / p
    covered = estimable = 0
    for _ in range(2000):
        correct = (rng.random(n) < p).astype(float)
        cost = rng.lognormal(0.0, 0.5, n) * (1 + 0.5 * correct)
        ci = ratio_of_means(Design(), cost, correct)
        if ci.estimable:
            estimable += 1
            covered += ci.low <= truth <= ci.high
        else:
            assert correct.sum() < MIN_CORRECT
    assert estimable > 700  # 10 correct or more: in 59% of draws at n = 20, p = 0.5; 41% at 30, 0.3
    assert 0.935 <= covered / estimable <= 0.975, covered / estimable


def test_the_frontier_plot_takes_a_bound_rounded_past_its_estimate(tmp_path):
    """Wilson's lower end can exceed a 0 estimate by 1e-17; the error bar is then 0, not < 0."""
    from harness.report._frontier import Frontier, FrontierPoint
    from harness.report._frontier_plot import frontier_png
    from harness.stats._intervals import Interval

    accuracy = Interval(0.0, 5.551115123125783e-17, 0.56, 0.95, "wilson", 3)
    cost = Interval(2.0, 2.0, 2.0, 0.95, "t", 3)
    point = FrontierPoint("a/x", accuracy, cost, True, 1.0, "a.eval", "")
    unknown = FrontierPoint("a/y", accuracy, None, False, math.nan, "b.eval", "")
    frontier = Frontier("s", "t", "dollars", "problem", 3, 10, (point, unknown))
    png = frontier_png(frontier, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000 and png.endswith("f.png")


def _tied_board(rng: np.random.Generator, clusters: int = 8, per: int = 130, tau: float = 0.5):
    """Two models whose accuracy ties in the population of problems; b costs twice a's.

    Each (model, problem) has its own logit effect u ~ N(0, tau), shared by the problem's
    `per` items: items nest in problems, and the problems are the independent draws. Model b
    is on the frontier exactly when it is the more accurate, so under the tie a calibrated
    P(b on frontier) is uniform: at or below 0.05, or at or above 0.95, on 10% of boards.
    """
    u = rng.normal(0.0, tau, (2, clusters, 1))  # (2, k, 1)
    p = 1.0 / (1.0 + np.exp(-u))
    correct = (rng.random((2, clusters, per)) < p).astype(float).reshape(2, -1)  # (2, n)
    cost = np.repeat([[1.0], [2.0]], clusters * per, axis=1)  # (2, n)
    return correct, cost, np.repeat(np.arange(clusters), per)


def _extreme_boards(boards: int, resamples: int, clustered: bool, seed: int) -> int:
    rng = np.random.default_rng(seed)
    count = 0
    for b in range(boards):
        correct, cost, labels = _tied_board(rng)
        p = frontier_probability(correct, cost, clusters=labels if clustered else None,
                                 resamples=resamples, seed=b)  # fmt: skip
        count += bool(p[1] <= 0.05 or p[1] >= 0.95)
    return count


def test_frontier_probability_resamples_clusters_on_a_tied_board():
    """Issue 40.6: 8 problems x 130 items, a true tie; P(on frontier) was extreme too often.

    Resampling items as if independent reads the 8 problems' luck as certainty: extreme on 52
    of these 100 boards. Resampling the 8 problems reads as sure as a t test on their 8 means
    does at its 95% interval: extreme where |t(7)| >= 1.645 * 2.365 / 1.96, on 8.7% of boards
    (binomial sd 2.8 of 100; 7 here); 16 is the ceiling asserted. Without the expansion
    for few draws it was extreme on 17 of 100. 400 boards run under `long`.
    """
    clustered = _extreme_boards(100, 400, clustered=True, seed=40)
    assert clustered <= 16, clustered
    assert _extreme_boards(30, 200, clustered=False, seed=40) >= 6  # the old, unclustered rule


@pytest.mark.long
def test_frontier_probability_is_calibrated_over_400_tied_boards():
    """400 such boards, 2000 resamples: extreme on 8.7% expected, 21 to 49 of 400 (2.5 sd)."""
    clustered = _extreme_boards(400, 2000, clustered=True, seed=41)
    assert 21 <= clustered <= 49, clustered


def _clustered_record(model: str, correct: np.ndarray, cost: np.ndarray, labels) -> LogRecord:
    samples = []
    for i, (c, d, g) in enumerate(zip(correct, cost, labels, strict=True)):
        usage = {model: {"input_tokens": 10, "output_tokens": 5, "total_cost": float(d)}}
        samples.append(SampleScore(f"i{i}", 1, (("match", "C" if c else "I"),), "",
                                   {"problem": f"q{g}"}, usage, 0, 0.1))  # fmt: skip
    identity = LogIdentity("arith", "arith", (), "abc", len(samples), model, ())
    design = Design("item", "binary", cluster="problem")
    return LogRecord(f"{model}.eval", identity, "2026-01-01", {}, tuple(samples), design=design)


def test_the_report_frontier_resamples_the_designs_clusters():
    """The report's frontier takes the clusters from the design the logs carry."""
    correct, cost, labels = _tied_board(np.random.default_rng(7), clusters=8, per=30)
    records = [_clustered_record(m, correct[i], cost[i], labels)
               for i, m in enumerate(("a/cheap", "a/dear"))]  # fmt: skip
    [report] = cost_reports(records)
    f = report.frontier
    points = {p.model: p for p in f.points}
    order = np.argsort([f"i{i}" for i in range(correct.shape[1])])  # the units sorted by id
    want = frontier_probability(correct[:, order], cost[:, order],
                                clusters=[f"q{g}" for g in labels[order]])  # fmt: skip
    assert points["a/dear"].probability == pytest.approx(want[1], abs=1e-12)
    assert f.clusters == 8 and "8 problem clusters" in frontier_table(f)[0]
    for row in report.rows:
        assert row.dollars.low > 0 and "clustered" in row.dollars.method
