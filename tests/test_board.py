"""`harness board replay` and `harness board export`: decisions, JSON keys, bad input, logs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.board._replay import replay
from harness.board._table import Board, read_board
from harness.cli import main

EPS = np.finfo(float).eps


def irt_board(models: int, items: int, gaps: list[float], seed: int) -> Board:
    """0/1 scores from a Rasch model: ability `gaps` (cumulative) against item difficulty."""
    rng = np.random.default_rng(seed)
    ability = np.cumsum([0.0, *gaps])[:models]
    difficulty = rng.normal(size=items)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    scores = (rng.random((models, items)) < p).astype(float)
    names = tuple(f"m{i}" for i in range(models))
    return Board(names, tuple(f"q{j}" for j in range(items)), scores)


def write_csv(path: Path, board: Board) -> Path:
    lines = ["model,item,score"]
    for m, row in zip(board.models, board.scores, strict=True):
        lines += [f"{m},{i},{v:g}" for i, v in zip(board.items, row, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_replay_resolves_clear_pairs_early_and_agrees_with_the_full_data(tmp_path: Path) -> None:
    board = irt_board(3, 600, [1.5, 1.5], seed=1)  # far apart: every pair decided early
    result = replay(board, orders=3, seed=0)
    assert all(p.resolution == "b > a" for p in result.pairs)
    assert all(0 < p.items < 600 for p in result.pairs)
    assert result.queries_used < result.queries_all
    assert result.wrong_direction_rate == 0.0
    assert result.disagreements == ()
    for p in result.pairs:  # the CS at resolution lies below 0 and holds the full difference
        assert p.high <= 0.0 + 8 * EPS
        assert p.low <= p.full_difference
    # items per model: the worst model stops with its last pair, the others with theirs
    run = result.runs[0]
    items = {(p.a, p.b): p.items for p in result.pairs}
    assert run.model_items[0] == max(items["m0", "m1"], items["m0", "m2"])


def test_a_tie_is_unresolved_at_the_budget_and_counted(tmp_path: Path) -> None:
    board = irt_board(3, 400, [0.0, 2.0], seed=2)  # m0 and m1 tie
    result = replay(board, budget=120, margin=0.0)
    tie = result.pairs[0]
    assert (tie.a, tie.b, tie.resolution, tie.items) == ("m0", "m1", "unresolved", 120)
    assert result.runs[0].model_items[:2] == (120, 120)  # both asked up to the budget
    assert result.queries_fixed == pytest.approx(3 * result.runs[0].fixed_n)


def test_board_target_decides_a_near_tie_late_and_population_does_not() -> None:
    """Without replacement, a 0.01 difference on 300 items is a direction late in the board."""
    rng = np.random.default_rng(8)
    a = (rng.random(300) < 0.5).astype(float)
    b = a.copy()
    flip = rng.choice(np.flatnonzero(a == 1), 3, replace=False)
    b[flip] = 0.0  # a - b = 3 / 300 on this board
    board = Board(("a", "b"), tuple(map(str, range(300))), np.vstack([a, b]))
    on_board = replay(board, target="board", margin=0.0)
    population = replay(board, target="population", margin=0.0)
    assert on_board.pairs[0].resolution == "a > b"
    assert 250 < on_board.pairs[0].items <= 300
    assert population.pairs[0].resolution == "unresolved"
    assert on_board.pairs[0].engine == "not significant"  # McNemar on 3 discordant items
    assert [d.why for d in on_board.disagreements] == [
        "the sequential run found a direction the full data's Holm test does not"
    ]


def test_equivalence_on_identical_models() -> None:
    rng = np.random.default_rng(3)
    row = (rng.random(300) < 0.6).astype(float)
    board = Board(("a", "b"), tuple(map(str, range(300))), np.vstack([row, row]))
    result = replay(board, margin=0.1)
    assert result.pairs[0].resolution == "equivalent"
    assert result.pairs[0].items < 300
    assert -0.1 <= result.pairs[0].low and result.pairs[0].high <= 0.1


def test_cli_replay_json_keys_and_text(tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "board.csv", irt_board(4, 300, [1.0, 0.1, 1.0], seed=4))
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["board", "replay", str(csv_path), "--orders", "4",
                                    "--json", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    for key in ("queries_used", "queries_fixed", "queries_all", "wrong_direction_rate", "pairs"):
        assert key in data
    assert data["queries_all"] == 4 * 300
    assert len(data["pairs"]) == 6
    assert {"a", "b", "resolution", "items"} <= set(data["pairs"][0])
    assert "queries used" in res.output and "m0 - m1" in res.output
    again = CliRunner().invoke(main, ["board", "replay", str(csv_path), "--json", str(out)])
    assert again.exit_code == 0, again.output  # our own JSON may be replaced
    holm = CliRunner().invoke(main, ["board", "replay", str(csv_path), "--orders", "4",
                                     "--family", "holm", "--json", "-"])  # fmt: skip
    assert holm.exit_code == 0, holm.output
    data = json.loads(holm.output)
    assert "sequential Holm" in data["method"]
    assert all(p["resolution"] != "equivalent" for p in data["pairs"])  # margin 0


@pytest.mark.parametrize(
    ("args", "body", "message"),
    [
        (["--margin", "-0.1"], None, "--margin must be a number >= 0"),
        (["--margin", "1"], None, "--margin must be a number >= 0 and < 1"),
        (["--budget", "0"], None, "--budget must be at least 1"),
        (["--family", "holm", "--margin", "0.05"], None, "--family holm decides directions only"),
        (["--family", "holm", "--add-model", "m0"], None, "not --add-model"),
        ([], "model,item,score\na,q1,0.5\nb,q1,\n", "line 3: the score cell is empty"),
        ([], "model,item,score\na,q1,0.5\nb,q1,1.5\n", "line 3: score 1.5 is outside [0, 1]"),
        ([], "model,item,score\na,q1,0.5\nb,q1,nan\n", "line 3: score nan is outside [0, 1]"),
        ([], "model,item,score\na,q1,0.5\n,q1,1\n", "line 3: the model cell is empty"),
        ([], "model,item\na,q1\n", "no column score"),
        ([], "model,item,score\na,q1,1\na,q1,0\nb,q1,1\n", "a second score for model 'a'"),
        ([], "model,item,score\na,q1,1\nb,q2,1\n", "model 'a' has no score for item 'q2'"),
        ([], "model,item,score\na,q1,1\n", "1 model(s); a board needs two or more"),
        ([], b"model,item,score\na,q1,1\nb,\xff\xfe,1\n", "not UTF-8"),
        ([], "model,item,score\na,q1,1\nb," + "x" * (2 << 20) + ",1\n", "line 3: longer than"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path, args: list[str], body: str | bytes | None, message: str
) -> None:
    path = tmp_path / "board.csv"
    if body is None:
        write_csv(path, irt_board(2, 20, [0.5], seed=5))
    elif isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")
    res = CliRunner().invoke(main, ["board", "replay", str(path), *args])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.output


def test_json_output_never_replaces_a_foreign_file(tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "board.csv", irt_board(2, 50, [1.0], seed=6))
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": 1}')
    res = CliRunner().invoke(main, ["board", "replay", str(csv_path), "--json", str(mine)])
    assert res.exit_code == 2 and "--force" in res.output
    assert mine.read_text() == '{"mine": 1}'


def test_read_board_streams_and_keeps_order(tmp_path: Path) -> None:
    board = irt_board(3, 30, [0.3, 0.3], seed=7)
    read = read_board(str(write_csv(tmp_path / "b.csv", board)))
    assert read.models == board.models and read.items == board.items
    np.testing.assert_array_equal(read.scores, board.scores)


def _record(model: str, values: list[float | None], task: str = "t", seed: str = "") -> object:
    """A log record as `harness.logs` reads one: None is an errored sample."""
    from harness.logs import LogIdentity, LogRecord, SampleScore

    identity = LogIdentity(suite="x", task=task, task_args=(), sample_hash="h", n_ids=3,
                           model=model, model_args=(), replicate=seed)  # fmt: skip
    samples = tuple(
        SampleScore(id=f"q{i}", epoch=1, raw=(("acc", 0 if v is None else v),),
                    error="" if v is not None else "boom", metadata={}, usage={})
        for i, v in enumerate(values)
    )  # fmt: skip
    return LogRecord(path=f"{model}{seed}.eval", identity=identity, created=seed or "0",
                     metadata={}, samples=samples)  # fmt: skip


def test_export_reads_unit_means_of_one_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replicates pool, errors score 0, a second task needs --task, scores must be in [0, 1]."""
    import harness.logs
    from harness.logs import Selection

    records = [
        _record("a", [1, 0.5, None], seed="1"),
        _record("a", [0, 0.5, 1], seed="2"),
        _record("b", [1, 1, 1]),
        _record("c", [0.25, 0, 1], task="other"),
    ]
    monkeypatch.setattr(
        harness.logs, "read_logs", lambda dirs, designs=None: Selection(tuple(records), ())
    )
    (tmp_path / "logs").mkdir()
    out = tmp_path / "board.csv"
    args = ["board", "export", str(tmp_path / "logs"), "-o", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "--task" in res.output, res.output
    res = CliRunner().invoke(main, [*args, "--task", "t"])
    assert res.exit_code == 0, res.output
    board = read_board(str(out))
    assert board.models == ("a", "b") and board.items == ("q0", "q1", "q2")
    np.testing.assert_array_equal(board.scores, [[0.5, 0.5, 0.5], [1, 1, 1]])
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK\x03\x04")
    res = CliRunner().invoke(main, [*args[:3], "-o", str(log), "--task", "t", "--force"])
    assert res.exit_code == 2 and "never replaced" in res.output, res.output
    assert log.read_bytes() == b"PK\x03\x04"
    records[2] = _record("b", [1, 3, 1])
    res = CliRunner().invoke(main, [*args, "--task", "t", "--force"])
    assert res.exit_code == 2 and "outside [0, 1]" in res.output, res.output


@pytest.mark.slow
def test_export_from_logs_round_trips_into_replay(tmp_path: Path) -> None:
    """Two replayed models on arith (a real eval, about 15 s): export, check, replay."""
    from harness.eval import EvalRequest, run
    from harness.suites.arith.task import arith

    samples = list(arith(n=30, difficulty=1).dataset)
    specs, expected = [], {}
    for name, keep in (("good", lambda i: True), ("half", lambda i: i % 2 == 1)):
        path = tmp_path / f"{name}.jsonl"
        rows = [{"id": s.id, "output": s.target if keep(i) else "999"}
                for i, s in enumerate(samples)]  # fmt: skip
        path.write_text("\n".join(json.dumps(r) for r in rows))
        specs.append(f"replay/{path}")
        expected[name] = {str(s.id): float(keep(i)) for i, s in enumerate(samples)}
    log_dir = tmp_path / "logs"
    ok, _, _ = run(EvalRequest(suite="arith", models=tuple(specs), task_args={"n": 30,
                     "difficulty": 1}, log_dir=str(log_dir), display="none"))  # fmt: skip
    assert ok
    out = tmp_path / "board.csv"
    res = CliRunner().invoke(main, ["board", "export", str(log_dir), "-o", str(out)])
    assert res.exit_code == 0, res.output
    board = read_board(str(out))
    assert len(board.models) == 2 and len(board.items) == 30
    for model, row in zip(board.models, board.scores, strict=True):
        name = "good" if "good" in model else "half"
        assert row.tolist() == [expected[name][i] for i in board.items]
    again = CliRunner().invoke(main, ["board", "export", str(log_dir), "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    res = CliRunner().invoke(main, ["board", "replay", str(out), "--json", "-"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["queries_all"] == 60


def test_export_of_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["board", "export", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "does not exist" in res.output


def _wrong_rate(orders: int, target: str) -> float:
    board = irt_board(8, 300, [0.6, 0.02, 0.3, 0.0, 0.5, 0.05, 0.4], seed=9)
    result = replay(board, orders=orders, fixed_orders=0, intervals=False, target=target)  # type: ignore[arg-type]
    return result.wrong_direction_rate


@pytest.mark.parametrize("target", ["population", "board"])
def test_wrong_directions_are_rare_over_orders(target: str) -> None:
    """Near-ties included; the family-wise wrong-direction rate stays <= alpha (20 orders)."""
    assert _wrong_rate(20, target) <= 0.05


@pytest.mark.long
@pytest.mark.parametrize("target", ["population", "board"])
def test_gate_wrong_directions_over_200_orders(target: str) -> None:
    assert _wrong_rate(200, target) <= 0.05
