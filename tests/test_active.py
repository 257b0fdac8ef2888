"""Active item selection (`--add-model NAME --active`): unbiased weighting, coverage at the stop.

The coverage checks stop each replication when its CS is narrow enough or decides a near-tie
pair (a time chosen from its own data), and count how often the CS then holds the added model's
true board mean. A negative control, the plain average of the actively chosen items, fails the
same check, so the checks can fail. The default run uses a few hundred replications and allows
two Monte-Carlo standard errors; the `long` ones are the hard gate, >= 0.95 over 2,000.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.board._add_model import add_model
from harness.board._factor import ability, fit_items, predict
from harness.board._table import Board
from harness.cli import main
from harness.stats._active import ActiveMeanCS, selection
from tests.test_board import write_csv

EPS = np.finfo(float).eps
GATE = 0.95


def small_gate(reps: int) -> float:
    """0.95 less two Monte-Carlo standard errors at `reps` replications."""
    return GATE - 2 * np.sqrt(GATE * (1 - GATE) / reps)


def sharp_board(models: int, items: int, seed: int, discrimination: float = 3.0) -> Board:
    """A 2PL board with sharp items; models sorted by ability, m00 the weakest."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(0, 1, models))
    a = discrimination * rng.lognormal(0, 0.3, items)
    b = rng.normal(0, 1, items)
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    scores = (rng.random((models, items)) < p).astype(float)
    return Board(tuple(f"m{i:02d}" for i in range(models)),
                 tuple(f"q{j}" for j in range(items)), scores)  # fmt: skip


def near_tie_board(items: int, seed: int) -> tuple[Board, str]:
    """A board where the added model's mean is 0.01-0.02 from a history model's mean."""
    board = sharp_board(21, items, seed)
    means = board.scores.mean(axis=1)
    gaps = np.abs(means[:, None] - means[None, :]) + np.eye(len(means))
    i, _ = np.unravel_index(np.argmin(np.where(gaps >= 0.01, gaps, 9)), gaps.shape)
    return board, board.models[i]


# ---------------------------------------------------------------- the estimator, exactly


def test_weighted_observation_is_unbiased_for_the_board_mean() -> None:
    """E[phi | past] = the board's mean, summed exactly over the selection distribution."""
    rng = np.random.default_rng(0)
    n = 50
    y = (rng.random(n) < 0.6).astype(float)
    cs = ActiveMeanCS(n, batch=1)
    pred = rng.random((1, n))
    for item in (3, 17, 40):  # some items asked first: their residual is zero from then on
        q = selection(pred, ~cs.asked)
        cs.step(pred, q, np.array([item]), y[[item]])
    q = selection(pred, ~cs.asked)
    assert q[cs.asked].sum() == 0 and abs(q.sum() - 1) <= n * EPS
    expected = 0.0
    for i in np.flatnonzero(~cs.asked[0]):
        phi, low, high = cs.observation(pred, q, np.array([i]), y[[i]])
        assert low[0] - 8 * EPS <= phi[0] <= high[0] + 8 * EPS  # the predictable bounds hold
        expected += q[0, i] * phi[0]
    assert abs(expected - y.mean()) <= 64 * n * EPS


def test_every_item_asked_gives_the_board_mean() -> None:
    rng = np.random.default_rng(1)
    n = 30
    y = rng.random(n)
    cs = ActiveMeanCS(n, batch=2)
    pred = np.full((2, n), 0.5)
    for _ in range(n):
        q = selection(pred, ~cs.asked)
        cs.step(pred, q, np.argmax(q, axis=1), y[np.argmax(q, axis=1)])
    low, high = cs.bounds()
    assert np.all(np.abs(low - y.mean()) <= 8 * n * EPS)
    assert np.all(np.abs(high - y.mean()) <= 8 * n * EPS)
    with pytest.raises(ValueError, match="drawn twice"):
        cs.step(pred, np.full((2, n), 1 / n), np.array([0, 0]), np.zeros(2))


def test_selection_prefers_uncertain_items_and_never_zero() -> None:
    pred = np.array([[0.5, 0.99, 0.01, 0.7]])
    q = selection(pred, np.ones_like(pred, bool), explore=0.1)
    assert q[0, 0] > q[0, 3] > q[0, 1] > 0 and q[0, 2] > 0
    assert abs(q.sum() - 1) <= 4 * EPS


def test_factor_model_recovers_the_items_and_orders_a_new_model() -> None:
    rng = np.random.default_rng(2)
    theta = rng.normal(0, 1, 40)
    a = 2 * rng.lognormal(0, 0.3, 300)
    b = rng.normal(0, 1, 300)
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    scores = (rng.random(p.shape) < p).astype(float)
    items = fit_items(scores[:-2])
    fitted = predict(items, items.history_abilities)
    assert np.corrcoef(fitted.ravel(), p[:-2].ravel())[0, 1] > 0.9
    assert np.corrcoef(items.easiness, -a * b)[0, 1] > 0.9  # c = -a (b - mean ability)
    asked = np.ones((2, 300), bool)
    u = np.vstack([ability(items, asked[:1], scores[-2], iterations=10),
                   ability(items, asked[:1], scores[-1], iterations=10)])  # fmt: skip
    f = predict(items, u)
    assert np.sign(f[0].mean() - f[1].mean()) == np.sign(theta[-2] - theta[-1])
    assert np.mean((f[1] - p[-1]) ** 2) < np.mean((scores[-1].mean() - p[-1]) ** 2)


# ---------------------------------------------------------------- coverage at the stop


def _coverage_run(reps: int, items: int, seed: int) -> tuple[float, float, float, float]:
    board, model = near_tie_board(items, seed)
    result = add_model(board, model, margin=0.0, width=0.08, orders=reps, seed=seed)
    active, random = result.run("active"), result.run("random")
    assert active is not None and random is not None
    return active.coverage, random.coverage, result.wrong[0], result.wrong[1]


def test_active_and_random_cover_at_their_stopping_times() -> None:
    reps = 200
    cov_active, cov_random, wrong_active, wrong_random = _coverage_run(reps, 250, seed=3)
    assert cov_active >= small_gate(reps), cov_active
    assert cov_random >= small_gate(reps), cov_random
    assert wrong_active <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)
    assert wrong_random <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)


@pytest.mark.long
def test_gate_active_and_random_coverage_2000() -> None:
    for seed in (11, 12):
        cov_active, cov_random, wrong_active, wrong_random = _coverage_run(2000, 400, seed)
        assert cov_active >= GATE and cov_random >= GATE, (seed, cov_active, cov_random)
        assert wrong_active <= 0.05 and wrong_random <= 0.05


@pytest.mark.long
def test_gate_wrong_direction_over_200_orders_per_board() -> None:
    for seed in (21, 22, 23):
        board = sharp_board(21, 500, seed)
        for model in board.models[::5]:
            result = add_model(board, model, orders=200, seed=seed)
            assert max(result.wrong_direction) <= 0.05, (seed, model, result.wrong_direction)


def test_plain_averages_over_chosen_items_fail_the_same_check() -> None:
    """The negative control: the plain average of the chosen items, with the usual interval
    (normal, finite-population corrected), misses the board mean; the weighted CS holds it."""
    board = sharp_board(21, 1000, seed=4, discrimination=5.0)
    y = board.scores[2]  # a weak model: the uncertain items it is asked are harder than most
    items = fit_items(np.delete(board.scores, 2, axis=0))
    reps, n, asked = 60, y.size, 300
    cs = ActiveMeanCS(n, batch=reps)
    rng = np.random.default_rng(5)
    u = np.zeros((reps, 1))
    total = np.zeros(reps)
    for _ in range(asked):
        u = ability(items, cs.asked, y, start=u, iterations=2)
        pred = predict(items, u)
        q = selection(pred, ~cs.asked, explore=0.01)
        cdf = np.cumsum(q, axis=1)
        pick = np.minimum((cdf < rng.random(reps)[:, None] * cdf[:, -1:]).sum(axis=1), n - 1)
        cs.step(pred, q, pick, y[pick])
        total += y[pick]
    plain = total / asked
    half = 1.96 * np.sqrt(plain * (1 - plain) / asked * (n - asked) / (n - 1))
    plain_cov = np.mean(np.abs(plain - y.mean()) <= half)
    low, high = cs.bounds()
    weighted_cov = np.mean((low <= y.mean()) & (y.mean() <= high))
    assert plain_cov < 0.5, plain_cov
    assert weighted_cov >= small_gate(reps), weighted_cov


# ---------------------------------------------------------------- saving, and the command


def test_active_asks_fewer_items_than_random_on_sharp_items() -> None:
    board = sharp_board(31, 2000, seed=6)
    result = add_model(board, board.models[15], margin=0.0, width=0.08, orders=8, seed=0)
    active, random = result.run("active"), result.run("random")
    assert active is not None and random is not None
    assert active.queries.mean() < random.queries.mean() / 1.5


def test_command_writes_the_replay_keys(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "b.csv", sharp_board(6, 200, seed=7))
    out = tmp_path / "r.json"
    args = ["board", "replay", str(csv), "--add-model", "m02", "--active", "--orders", "3"]
    result = CliRunner().invoke(main, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "random / active items" in result.output
    data = json.loads(out.read_text())
    for key in ("queries_used", "queries_random", "queries_all", "wrong_direction_rate",
                "coverage", "pairs", "reconstructed"):  # fmt: skip
        assert key in data
    assert {p["b"] for p in data["pairs"]} == {"m00", "m01", "m03", "m04", "m05"}
    assert data["queries_all"] == 200 and data["method"] == "active"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--active"], "--active needs --add-model"),
        (["--width", "0.1"], "--width needs --add-model"),
        (["--add-model", "nobody"], "'nobody' is not on the board"),
        (["--add-model", "m00", "--active", "--width", "0"], "--width must be in (0, 1]"),
        (["--add-model", "m00", "--orders", "2000000"], "cells held at once"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    csv = write_csv(tmp_path / "b.csv", sharp_board(3, 20, seed=8))
    result = CliRunner().invoke(main, ["board", "replay", str(csv), *args])
    assert result.exit_code == 2
    assert says in result.output and "Traceback" not in result.output


def test_active_with_no_past_results_is_one_line(tmp_path: Path) -> None:
    board = sharp_board(2, 20, seed=9)
    alone = Board(board.models[:1], board.items, board.scores[:1])
    for b, name in ((alone, "alone.csv"), (board, "two.csv")):
        csv = write_csv(tmp_path / name, b)
        result = CliRunner().invoke(main, ["board", "replay", str(csv), "--add-model", "m00",
                                           "--active"])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "--active needs past results" in result.output
