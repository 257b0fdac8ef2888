"""`harness eval` end to end: values and intervals, error accounting, one-line usage errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from statsmodels.stats.proportion import proportion_confint

from harness.cli import main
from harness.data import load_rows
from harness.suites.aime import AIME_DATA

HARNESS = [sys.executable, "-m", "harness.cli"]


def run_json(args: list[str], exit_code: int = 0) -> list[dict]:
    result = CliRunner().invoke(main, ["eval", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)["scores"]


def test_aime_replay_values_and_wilson_intervals(tmp_path, data_dir):
    # correct boxed answers for exactly k of the 60 problems, wrong ones for the rest
    correct = {2024: {1, 2, 3, 5, 8, 13, 21}, 2025: set(range(1, 31, 3))}  # 7 and 10 of 30
    lines = []
    for year in (2024, 2025):
        for number, row in load_rows(AIME_DATA[year], data_dir).rows:
            right = number in correct[year]
            answer = row["answer"] if right else (row["answer"] + 1) % 1000
            lines.append({"id": f"{year}-{number}", "output": f"Thus \\boxed{{{answer}}}."})
    replay = tmp_path / "answers.jsonl"
    replay.write_text("\n".join(json.dumps(x) for x in lines))
    rows = run_json(["--suite", "aime", "--model", f"replay/{replay}", "--data-dir", str(data_dir)])
    by_task = {r["task"]: r for r in rows}
    assert set(by_task) == {"aime2024", "aime2025"}
    for year, task in ((2024, "aime2024"), (2025, "aime2025")):
        row = by_task[task]
        k = len(correct[year])
        low, high = proportion_confint(k, 30, alpha=0.05, method="wilson")
        assert row["n"] == 30 and row["errors"] == 0
        assert row["value"] == pytest.approx(k / 30, abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-6)
        assert row["ci_method"] == "wilson"
        assert set(row) == {
            "suite", "task", "model", "metric", "n", "errors", "value",
            "ci_low", "ci_high", "ci_method", "log", "unit", "flagged", "tampered",
        }  # fmt: skip


def test_missing_replay_output_errors_that_sample_alone(tmp_path, data_dir):
    replay = tmp_path / "partial.jsonl"
    replay.write_text(json.dumps({"id": "2025-1", "output": "\\boxed{70}"}) + "\n")
    rows = run_json(
        ["--suite", "aime", "--model", f"replay/{replay}", "--data-dir", str(data_dir),
         "-T", "max_tokens=10"], exit_code=1,  # every sample of aime2024 errored: exit 1
    )  # fmt: skip
    by_task = {r["task"]: r for r in rows}
    assert by_task["aime2025"]["errors"] == 29 and by_task["aime2024"]["errors"] == 30
    assert by_task["aime2025"]["value"] == pytest.approx(1 / 30)  # errored samples scored wrong
    assert by_task["aime2025"]["n"] == 30


def test_model_that_raises_for_one_sample_costs_that_sample(tmp_path):
    rows = run_json(
        ["--suite", "arith", "--model", "scripted/s", "-T", "n=12", "-T", "difficulty=1",
         "-M", "answer=none", "-M", "fail=arith-3,arith-7"]
    )  # fmt: skip
    (row,) = rows
    assert row["n"] == 12 and row["errors"] == 2
    assert row["value"] == 0.0  # "none" is never an answer


def test_epochs_give_mean_and_pass_at_k(tmp_path):
    rows = run_json(
        ["--suite", "arith", "--model", "scripted/s", "-T", "n=5", "--epochs", "3",
         "-M", "answer=0"]
    )  # fmt: skip
    assert [r["metric"] for r in rows] == ["accuracy", "pass@3"]
    # every problem is wrong on every epoch: its mean is 0, a 0/1 unit, so Wilson over problems
    assert all(r["ci_method"] == "wilson" and r["n"] == 5 for r in rows)


def test_suites_lists_each_suite():
    out = CliRunner().invoke(main, ["suites"]).output
    assert "arith" in out and "aime2024, aime2025" in out
    assert "unit: item, clustered by seed; score: binary" in out  # team's declared design


BAD_INPUTS = [
    (["eval", "--suite", "nope", "--model", "scripted/x"], "unknown suite 'nope'"),
    (["eval", "--suite", "arith", "--model", "nope/x"], "unknown model provider 'nope'"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "n"], "malformed -T 'n'"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-M", "=3"], "malformed -M '=3'"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "bogus=1"], "no argument"),
    (["eval", "--suite", "aime", "--model", "scripted/x", "--data-dir", "missing"],
     "does not exist"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS)
def test_bad_input_is_one_line_exit_2(args, message):
    proc = subprocess.run(HARNESS + args, capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert message in lines[0]


def test_bad_row_is_one_line_exit_2(tmp_path, data_dir):
    folder = tmp_path / "data" / "aime"
    folder.mkdir(parents=True)
    good = (data_dir / "aime" / "aime2024.jsonl").read_text().splitlines()
    bad = json.loads(good[3])
    del bad["answer"]
    good[3] = json.dumps(bad)
    (folder / "aime2024.jsonl").write_text("\n".join(good))
    (folder / "aime2025.jsonl").write_text((data_dir / "aime" / "aime2025.jsonl").read_text())
    args = ["eval", "--suite", "aime", "--model", "scripted/x", "--data-dir", str(folder.parent)]
    proc = subprocess.run(HARNESS + args, capture_output=True, text=True)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "aime2024.jsonl row 4: field 'answer' is missing" in line
    # skipping bad rows loads the other 29
    rows = run_json(
        ["--suite", "aime", "--model", "scripted/x", "--data-dir", str(folder.parent),
         "-T", "skip_bad_rows=true"]
    )  # fmt: skip
    assert {r["task"]: r["n"] for r in rows} == {"aime2024": 29, "aime2025": 30}


def test_malformed_replay_file_is_one_line_exit_2(tmp_path):
    bad = Path(tmp_path) / "bad.jsonl"
    bad.write_text('{"id": 1, "output": "x"}\n{"id": 2}\n')
    proc = subprocess.run(
        HARNESS + ["eval", "--suite", "arith", "--model", f"replay/{bad}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "bad.jsonl line 2" in line
