"""Issue 42, class 6: every numeric task argument has a declared range; work is estimated first.

Each attack below was accepted by the old code (a task was built, or work started); now each is
one usage error that names the argument and its range, or the estimate, the limit and the flag
that raises it.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.compare._scores import arm_rows
from harness.errors import HarnessUsageError
from harness.eval import build_tasks
from harness.eval._typed_args import hints
from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.stats._design import POSITIVE, Design
from harness.suites.arg_ranges import WORK_ENV, range_of, work_limit
from harness.suites.catalog import all_suites, get_suite
from harness.suites.training_pool import training_pool

NAN, INF = float("nan"), float("inf")
DATA = os.environ.get("HARNESS_DATA_DIR", "../shared/data")

# (suite, -T arguments, words the one-line refusal must hold)
ATTACKS = [
    ("serving", {"c0_ms": 1e-300, "c1_ms": 0.0}, ["c0_ms", "[0.01,"]),  # a zero-time server
    ("serving", {"c0_ms": 0.0}, ["c0_ms"]),
    ("serving", {"c1_ms": -1.0}, ["c1_ms"]),
    ("serving", {"swap_ms": -0.5}, ["swap_ms"]),
    ("serving", {"hit_rate": NAN}, ["hit_rate"]),
    ("serving", {"slice_minutes": INF}, ["slice_minutes"]),
    ("serving", {"kv_budget": 0}, ["kv_budget"]),
    ("serving", {"step_tokens": -5}, ["step_tokens"]),
    ("serving", {"tensor_parallel": 0}, ["tensor_parallel"]),
    ("serving", {"slices": 20_000}, ["slices", "10,000"]),
    ("serving", {"slices": 200, "seeds": 10}, ["20,000 slice-minutes", "--max-work 20000"]),
    ("serving", {"seeds": 100_000}, ["seeds"]),
    ("provenance", {"texts": 1_000_000_000}, ["texts", "10,000,000"]),
    ("provenance", {"texts": 100_000}, ["texts generated", "--max-work"]),
    ("provenance", {"seeds": 1_000}, ["students trained", "--max-work"]),
    ("bandpo", {"iterations": 1e9}, ["iterations", "1,000,000"]),
    ("bandpo", {"lr": NAN}, ["lr"]),
    ("bandpo", {"lr": -1.0}, ["lr"]),
    ("bandpo", {"rl_iterations": 0}, ["rl_iterations"]),
    ("bandpo", {"seeds": 5_000}, ["bandit iterations", "--max-work"]),
    ("bandpo", {"cpus_per_run": 0}, ["cpus_per_run"]),
    ("arith", {"seed": -1}, ["seed"]),
    ("arith", {"n": 10_000_000}, ["n"]),
    ("arith", {"max_tokens": 0}, ["max_tokens"]),
    ("k-parity", {"max_steps": 0}, ["max_steps"]),
    ("team", {"steps": 100_000_000}, ["steps"]),
    ("causaldpo", {"beta": INF}, ["beta"]),
    ("imgcot", {"lam": NAN}, ["lam"]),
    ("protokv", {"codes": 0}, ["codes"]),
]


@pytest.mark.parametrize(("suite", "args", "words"), ATTACKS, ids=lambda x: str(x)[:40])
def test_an_argument_out_of_range_or_too_much_work_is_one_line(suite, args, words):
    with pytest.raises(HarnessUsageError) as caught:
        build_tasks(get_suite(suite), dict(args), None)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def _is_number(annotation: object) -> bool:
    members = typing.get_args(annotation) or (annotation,)
    return any(m in (int, float) for m in members) and typing.get_origin(annotation) is not list


def test_every_numeric_argument_of_every_task_has_a_declared_range():
    missing = []
    for suite in all_suites().values():
        for fn in suite.tasks:
            declared = getattr(fn, "harness_ranges", None)
            if declared is None:
                missing.append(f"{suite.name}:{fn.__name__} (not @checked_args)")
                continue
            for name, annotation in hints(fn).items():
                if _is_number(annotation) and range_of(declared, name) is None:
                    missing.append(f"{suite.name}:{fn.__name__}({name})")
    assert not missing, missing


def test_the_work_limit_is_raised_by_max_work_and_by_the_environment(monkeypatch):
    args = {"slices": 200, "seeds": 10, "preset": "quick"}  # 20,000 slice-minutes
    [task] = build_tasks(get_suite("serving"), dict(args), DATA, max_work=20_000)
    assert len(task.dataset) == 2_000
    monkeypatch.setenv(WORK_ENV, "20000")  # inspect eval harness/serving
    [task] = build_tasks(get_suite("serving"), dict(args), DATA)
    assert len(task.dataset) == 2_000
    with pytest.raises(HarnessUsageError, match="--max-work"), work_limit(0.0):
        pass


def test_workers_past_the_cores_are_capped_with_a_note(capsys):
    pool = training_pool("bandpo", workers=100_000)
    assert pool.workers == (os.cpu_count() or 1)
    assert "100000" in capsys.readouterr().err


def test_a_binary_looking_latency_is_never_labelled_accuracy():
    # a zero-time server: every slice's P99 is 0 s or 1 s, under an unbounded (latency) design
    samples = tuple(
        SampleScore(f"s{i}", 1, (("ttlt_p99", float(i % 2)),), "", {}, {}) for i in range(6)
    )
    identity = LogIdentity("serving", "serving", (), "h", 6, "serving/fcfs", ())
    record = LogRecord("x.eval", identity, "2026-01-01", {}, samples)
    latency = Design("instance", "unbounded", bounds=POSITIVE)
    [row] = arm_rows([dataclasses.replace(record, design=latency)])
    assert row.metric == "ttlt_p99"
    [row] = arm_rows([dataclasses.replace(record, design=Design("problem", "binary"))])
    assert row.metric == "accuracy"  # a binary design still reads as accuracy


def _board(path: Path, models: int, items: int) -> None:
    rows = ["model,item,score"]
    rows += [f"m{m:04d},i{i},{(m + i) % 2}" for m in range(models) for i in range(items)]
    path.write_text("\n".join(rows) + "\n")


def test_board_replay_past_its_estimate_is_one_line_naming_max_work(tmp_path):
    board = tmp_path / "board.csv"
    _board(board, 400, 2)  # 79,800 pairs: the old code ran for many minutes
    done = CliRunner().invoke(main, ["board", "replay", str(board)])
    assert done.exit_code == 2, done.output
    [line] = done.stderr.strip().splitlines()
    assert "400 models x 2 items" in line and "--max-work" in line and "600" in line
