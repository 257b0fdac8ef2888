"""Sequential stopping on a clustered design: clusters, not items, are the independent draws.

The case of issue 40: two models whose population difference is exactly 0, 8 problems x 130
cells, problem-level differences of +/-0.2 (+/-0.1). Fed one cell at a time, the pair's CS
declared a direction in 27% (10%) of runs at alpha 0.05; fed one mean per completed problem it
must stay at or below alpha.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.board._family import ClusterMeans, PairFamily, cluster_visit
from harness.board._replay import replay, replay_order
from harness.board._table import Board, read_board, write_board
from harness.cli import main

PROBLEMS, CELLS = 8, 130


def null_csv(path: Path, rng: np.random.Generator, spread: float) -> Path:
    """A board CSV with a cluster column: problem differences +/-spread, mean 0 over problems."""
    diff = rng.choice([-spread, spread], size=PROBLEMS)  # the population's mean is exactly 0
    base = rng.uniform(0.3, 0.7, size=PROBLEMS)
    cells = PROBLEMS * CELLS
    p_a, p_b = np.repeat(base + diff / 2, CELLS), np.repeat(base - diff / 2, CELLS)
    scores = {"a": rng.random(cells) < p_a, "b": rng.random(cells) < p_b}
    lines = ["model,item,score,cluster"]
    for model, row in scores.items():
        lines += [f"{model},p{i // CELLS}.c{i % CELLS},{int(v)},p{i // CELLS}"
                  for i, v in enumerate(row)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def grouped_order(rng: np.random.Generator) -> np.ndarray:
    """Problems in a random order, each problem's cells together."""
    return np.concatenate(
        [np.arange(p * CELLS, (p + 1) * CELLS) for p in rng.permutation(PROBLEMS)]
    )


def null_board(rng: np.random.Generator, spread: float) -> Board:
    """The same board as `null_csv`, built in memory (200 CSVs take seconds to read)."""
    diff = rng.choice([-spread, spread], size=PROBLEMS)
    base = rng.uniform(0.3, 0.7, size=PROBLEMS)
    p = np.repeat(np.stack([base + diff / 2, base - diff / 2]), CELLS, axis=1)  # (2, cells)
    items = tuple(f"p{i // CELLS}.c{i % CELLS}" for i in range(PROBLEMS * CELLS))
    labels = tuple(f"p{i // CELLS}" for i in range(PROBLEMS * CELLS))
    return Board(("a", "b"), items, (rng.random(p.shape) < p).astype(float), labels)


def test_a_clustered_null_rarely_gives_a_direction() -> None:
    """200 boards, one order each; the cell-by-cell CS gave a direction in ~27% of them."""
    rng = np.random.default_rng(40)
    runs, wrong = 200, 0
    for _ in range(runs):
        run = replay_order(null_board(rng, 0.2), grouped_order(rng), alpha=0.05, margin=0.05,
                           budget=PROBLEMS * CELLS, intervals=False)  # fmt: skip
        wrong += run.resolution[0] in ("a > b", "b > a")
    # alpha plus three Monte-Carlo standard errors of a rate of alpha over 200 runs
    assert wrong / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), wrong


@pytest.mark.long
@pytest.mark.parametrize("spread", [0.2, 0.1])
def test_a_clustered_null_gives_a_direction_at_most_alpha_over_1000_runs(
    tmp_path: Path, spread: float
) -> None:
    """The whole `harness board replay` path, from the CSV, 1,000 boards (about a minute)."""
    rng = np.random.default_rng([40, int(spread * 10)])
    runs, wrong = 1000, 0
    for r in range(runs):
        board = read_board(str(null_csv(tmp_path / "b.csv", rng, spread)))
        result = replay(board, orders=1, seed=r, fixed_orders=0, truth=[0.0], intervals=False)
        wrong += result.wrong_direction_rate > 0
    assert wrong / runs <= 0.05, wrong


def test_cluster_means_item_by_item_equal_a_cluster_at_once() -> None:
    rng = np.random.default_rng(1)
    labels = [f"c{i // 5}" for i in range(60)]  # 12 clusters of 5
    scores = (rng.random((2, 60)) < np.array([[0.9], [0.2]])).astype(float)
    one = ClusterMeans(PairFamily(["a", "b"], margin=0.0), ["a", "b"], labels)
    block = ClusterMeans(PairFamily(["a", "b"], margin=0.0), ["a", "b"], labels)
    for t in range(60):
        if not one.active():
            break
        one.observe({"a": scores[0, t], "b": scores[1, t]})
        if t % 5 == 4:
            block.observe_cluster(scores[:, t - 4 : t + 1])
            assert one.states() == block.states() and one.model_items() == block.model_items()
    [state] = one.states()
    assert state.resolution == "a > b" and state.items == 5 * state.clusters
    assert one.model_items()["a"] % 5 == 0  # asked whole clusters only
    with pytest.raises(ValueError, match="not visited together"):
        ClusterMeans(PairFamily(["a", "b"]), ["a", "b"], ["x", "y", "x"])


def test_a_clustered_board_resolves_a_clear_pair_on_whole_clusters(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    labels = tuple(f"g{i // 10}" for i in range(600))  # 60 clusters of 10
    shift = np.repeat(rng.normal(0, 0.1, 60), 10)
    p = np.clip(np.stack([0.75 + shift, 0.35 + shift]), 0, 1)
    board = Board(("a", "b"), tuple(f"q{i}" for i in range(600)),
                  (rng.random((2, 600)) < p).astype(float), labels)  # fmt: skip
    result = replay(board, orders=3, seed=0)
    [pair] = result.pairs
    assert pair.resolution == "a > b" and pair.items % 10 == 0 and pair.items < 600
    assert result.clusters == 60 and "mean of cluster means" in result.summary()
    assert result.wrong_direction_rate == 0.0 and result.disagreements == ()
    # the CSV keeps the clusters
    write_board(board, tmp_path / "c.csv")
    again = read_board(str(tmp_path / "c.csv"))
    assert again.clusters == labels and np.array_equal(again.scores, board.scores)
    order = cluster_visit(labels, 0)
    assert sorted(order.tolist()) == list(range(600))
    assert all(labels[order[i]] == labels[order[i - 1]] for i in range(1, 600) if i % 10)


@pytest.mark.parametrize(
    ("rows", "extra", "says"),
    [
        (["a,q1,1,", "b,q1,0,g1"], [], "the cluster cell is empty"),
        (["a,q1,1,g1", "b,q1,0,g2"], [], "an item has one cluster"),
        (["a,q1,1,g1", "b,q1,0,g1", "a,q2,1,g1", "b,q2,1,g1"], ["--budget", "1"],
         "smaller than the board's largest cluster"),
        (["a,q1,1,g1", "b,q1,0,g1", "c,q1,1,g1"], ["--add-model", "c"], "nest in clusters"),
    ],
)  # fmt: skip
def test_clustered_board_mistakes_are_one_line(tmp_path: Path, rows, extra, says) -> None:
    path = tmp_path / "b.csv"
    path.write_text("\n".join(["model,item,score,cluster", *rows]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["board", "replay", str(path), *extra])
    assert result.exit_code == 2 and says in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


# --- live: `harness eval --until decided` on a suite whose design clusters its items


SKILL = {"good": 0.95, "mid": 0.5, "bad": 0.05}
GROUP = 10  # items per cluster


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    from harness.suites.arith.task import arith

    root = tmp_path_factory.mktemp("replays")
    rng = np.random.default_rng(0)
    for name, p in SKILL.items():
        lines = [json.dumps({"id": s.id, "output": str(s.target) if rng.random() < p else "-1"})
                 for s in arith(n=200).dataset]  # fmt: skip
        (root / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def clustered_arith(monkeypatch):
    """`arith` declared as clustered by `grp`: 20 clusters of 10 items (id modulo 20)."""
    import dataclasses

    import harness.eval._runner as runner
    from harness.stats._design import Design

    get_suite, build_tasks = runner.get_suite, runner.build_tasks

    def suite(name):
        return dataclasses.replace(get_suite(name), design=Design("item", "binary", cluster="grp"))

    def tasks(*args, **kwargs):
        out = build_tasks(*args, **kwargs)
        for task in out:
            for s in task.dataset:
                s.metadata = {**(s.metadata or {}), "grp": f"g{int(str(s.id).split('-')[1]) % 20}"}
        return out

    monkeypatch.setattr(runner, "get_suite", suite)
    monkeypatch.setattr(runner, "build_tasks", tasks)


def _eval(*args: str):
    return CliRunner().invoke(main, ["eval", "--suite", "arith", "--display", "none", *args])


def test_live_stoppers_on_a_clustered_order_observe_whole_clusters() -> None:
    """The stoppers of one task, driven as inspect drives them, on 20 clusters of 10 items."""
    import asyncio
    from types import SimpleNamespace

    from harness.board._live import LiveFamily, ModelStopper
    from harness.board._live_run import cluster_order

    rng = np.random.default_rng(3)
    samples = [SimpleNamespace(id=f"q{i}", metadata={"grp": f"g{i % 20}"}) for i in range(200)]
    ordered, labels = cluster_order(samples, "grp", seed=0)
    order = [s.id for s in ordered]
    truth = {m: {u: float(rng.random() < p) for u in order} for m, p in SKILL.items()}
    live = LiveFamily(list(SKILL), order, alpha=0.05, margin=0.05, budget=None,
                      clusters=labels, cluster="grp")  # fmt: skip

    async def model(name: str) -> list[str]:
        stopper, asked = ModelStopper(live, name), []
        for u in order:
            if await stopper.schedule_sample(u, 1) is None:
                asked.append(u)
                await stopper.complete_sample(u, 1, {"s": SimpleNamespace(value=truth[name][u])})
        await stopper.complete_task()
        return asked

    async def run() -> list[list[str]]:
        return await asyncio.gather(*(model(m) for m in SKILL))

    asked = dict(zip(SKILL, asyncio.run(run()), strict=True))
    stop = live.summary()
    assert all(labels[i] == labels[i - 1] for i in range(1, 200) if i % GROUP)
    assert stop["cluster"] == "grp" and "completed grp" in stop["method"]
    assert "1 - 0.05/3 each (98.33%), 95% jointly" in stop["method"]
    for pair in stop["pairs"]:  # a pair took whole clusters, one observation each
        assert pair["items"] == GROUP * pair["clusters"], pair
        assert pair["resolution"] == "a > b"  # good > mid > bad
    observed = stop["items_per_model"]
    assert all(n % GROUP == 0 and n < 200 for n in observed.values())
    # asked: the observed clusters, plus up to LAG items already in flight
    assert all(observed[m] <= len(asked[m]) <= observed[m] + 4 for m in SKILL)


@pytest.mark.long
def test_a_live_clustered_run_stops_on_whole_clusters(replays, clustered_arith, tmp_path):
    """The whole `harness eval --until decided` path (half a minute on 2 busy cores)."""
    from harness.logs import read_logs
    from harness.report._data import build_report
    from harness.report._render import write_report
    from harness.suites.catalog import catalog_design

    args = [a for n in SKILL for a in ("--model", f"replay/{replays}/{n}.jsonl")]
    result = _eval(*args, "--until", "decided", "--log-dir", str(tmp_path / "logs"))
    assert result.exit_code == 0, result.output
    record = read_logs([str(tmp_path / "logs")]).used[0]
    stop = record.stopping
    assert stop["cluster"] == "grp" and 0 < stop["clusters_observed"] <= 20
    assert "completed grp" in stop["method"] and "1 - 0.05/3 each" in stop["method"]
    order = stop["order"]
    group = {u: int(u.split("-")[1]) % 20 for u in order}
    assert all(group[order[i]] == group[order[i - 1]] for i in range(1, 200) if i % GROUP)
    for pair in stop["pairs"]:  # a pair took whole clusters, one observation each
        assert pair["items"] == GROUP * pair["clusters"], pair
    assert {p["resolution"] for p in stop["pairs"]} == {"a > b"}  # good > mid > bad
    assert all(n % GROUP == 0 for n in stop["items_per_model"].values())
    # the caption: each pair's CS is at 1 - 0.05/3, the family at 95%
    report = build_report([str(tmp_path / "logs")], catalog_design)
    assert len(report.pairs) == 3
    for p in report.pairs:
        assert abs(p.test.confidence - (1 - 0.05 / 3)) < 1e-12
        assert "1 - 0.05/3 each (98.33%), 95% jointly" in p.test.method
    write_report(report, str(tmp_path / "report.md"), "md")
    assert "at 98.33%" in (tmp_path / "report.md").read_text()


def test_active_on_a_clustered_design_is_refused_in_one_line(replays, clustered_arith, tmp_path):
    result = _eval("--model", f"replay/{replays}/good.jsonl", "--until", "decided", "--active",
                   "--history", str(tmp_path), "--log-dir", str(tmp_path / "l"))  # fmt: skip
    assert result.exit_code == 2 and "'grp'" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
