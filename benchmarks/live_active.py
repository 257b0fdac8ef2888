"""The live `--active` run against its replay, on one board (issue 45).

A 2PL board of replay models on the arith suite's 200 items: HISTORY models answer every item
(the history, run once in full), and one more model is added live with `harness eval ...
--until decided --active --history LOGDIR`, once per order seed. The same board is replayed
with `harness board replay --add-model NAME --active` (`harness.board._add_model`), and both are
read for the queries asked, the wall time and whether the CS held the added model's mean when
it stopped (the live CS is for the items' population mean, so it is checked against the
generating model's expected score; the replay's is for the board's own items).

The two are different procedures: live, the items come once each in the seeded order and each
is asked or passed over for good; the replay draws from the unasked items until the budget. So
each live run is also replayed offline with its own procedure (`ActiveLive` fed the same order,
history and seed, one item at a time, without inspect): that is the replay the live run must
match, and the difference from the board replay is the protocol's, not the plumbing's.

Usage: python benchmarks/live_active.py [--seeds S]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from harness.board import Board, add_model, board_from_logs
from harness.board._live_active import ActiveLive
from harness.board._live_run import ALPHA
from harness.cli import main as cli
from harness.logs import read_logs
from harness.suites.arith.task import arith
from harness.suites.catalog import catalog_design

HISTORY = 8


def make_board(root: Path, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Replay files for HISTORY + 1 models; their names, 0/1 scores, and expected scores."""
    rng = np.random.default_rng(seed)
    samples = list(arith(n=200).dataset)
    theta = np.linspace(-1.5, 1.5, HISTORY + 1)
    a = rng.lognormal(0.5, 0.3, len(samples))
    b = rng.normal(0, 1, len(samples))
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))  # (M, N)
    scores = (rng.random(p.shape) < p).astype(float)
    names = []
    for m in range(HISTORY + 1):
        lines = [json.dumps({"id": s.id, "output": str(s.target) if scores[m, j] else "-1"})
                 for j, s in enumerate(samples)]  # fmt: skip
        name = f"m{m}"
        (root / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        names.append(name)
    return names, scores, p


def offline_live(history: Board, order: list[str], answers: dict[str, float], seed: int,
                 margin: float = 0.05) -> dict:  # fmt: skip
    """The live procedure replayed without inspect: each item of `order` in turn, asked or not."""
    import asyncio

    live = ActiveLive("new", order, history, alpha=ALPHA, margin=margin, budget=None, seed=seed)

    async def walk() -> None:
        for item in order:
            why = await live.turn(item)
            if why is None:
                await live.scored(item, answers[item])
            elif not live.open():
                break

    asyncio.run(walk())
    return live.summary()["active"]


def run(*args: str) -> None:
    result = CliRunner().invoke(cli, ["eval", "--suite", "arith", "--display", "none", *args])
    if result.exit_code != 0:
        raise SystemExit(result.output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="Order seeds of the live run.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names, scores, p = make_board(root)
        new = HISTORY // 2  # the middle model is added
        history = root / "history"
        start = time.perf_counter()
        run(*[x for m in range(HISTORY + 1) if m != new
              for x in ("--model", f"replay/{root}/{names[m]}.jsonl")],
            "--log-dir", str(history))  # fmt: skip
        print(f"history: {HISTORY} models x 200 items in {time.perf_counter() - start:.0f} s")
        expected = float(p[new].mean())
        history_board, _ = board_from_logs([str(history)], catalog_design, task="arith")
        ids = [str(x.id) for x in arith(n=200).dataset]
        answers = {sid: float(scores[new, j]) for j, sid in enumerate(ids)}
        asked, visited, covered, walls = [], [], [], []
        off_asked, off_covered, same = [], [], []
        for s in range(args.seeds):
            logs = root / f"live{s}"
            start = time.perf_counter()
            run("--model", f"replay/{root}/{names[new]}.jsonl", "--until", "decided",
                "--active", "--history", str(history), "--log-dir", str(logs),
                "--order-seed", str(s))  # fmt: skip
            walls.append(time.perf_counter() - start)
            (record,) = read_logs([str(logs)], designs=catalog_design).used
            active = record.stopping["active"]
            asked.append(active["asked"])
            visited.append(active["visited"])
            covered.append(active["low"] <= expected <= active["high"])
            offline = offline_live(history_board, list(record.stopping["order"]), answers, seed=s)
            off_asked.append(offline["asked"])
            off_covered.append(offline["low"] <= expected <= offline["high"])
            same.append(offline == {**active, "model": "new"})
        order = [m for m in range(HISTORY + 1) if m != new] + [new]
        board = Board(tuple(names[m] for m in order), tuple(f"q{j}" for j in range(200)),
                      scores[order])  # fmt: skip
        start = time.perf_counter()
        replayed = add_model(board, names[new], active=True, orders=max(args.seeds, 20), seed=0)
        wall = time.perf_counter() - start
        act = replayed.run("active")
        assert act is not None
        print(f"added model {names[new]}: board mean {scores[new].mean():.3f}, expected "
              f"{expected:.3f}; {HISTORY} history models; margin 0.05, alpha 0.05")  # fmt: skip
        print(
            f"  live --active ({args.seeds} order seeds): asked {np.mean(asked):.1f} items "
            f"(range {min(asked)}-{max(asked)}) of {np.mean(visited):.1f} visited; CS held the "
            f"expected mean in {np.mean(covered):.0%}; wall {np.mean(walls):.1f} s per run"
        )
        print(f"  replay --add-model --active ({act.queries.size} replications): asked "
              f"{act.queries.mean():.1f} items; CS held the board mean in {act.coverage:.0%}; "
              f"wall {wall:.1f} s for all")  # fmt: skip
        print(f"  live / board replay queries: {np.mean(asked) / act.queries.mean():.2f}x")
        print(f"  the live procedure replayed offline (same orders, seeds and history): asked "
              f"{np.mean(off_asked):.1f} items; CS held the expected mean in "
              f"{np.mean(off_covered):.0%}; live / offline queries "
              f"{np.mean(asked) / np.mean(off_asked):.2f}x; identical summaries in "
              f"{sum(same)} of {len(same)} runs")  # fmt: skip


if __name__ == "__main__":
    main()
