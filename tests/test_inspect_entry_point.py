"""`inspect eval harness/...` finds our tasks and providers through the entry point."""

import shutil
import subprocess
import sys
from pathlib import Path

from inspect_ai.log import list_eval_logs, read_eval_log


def test_inspect_eval_runs_harness_task_with_harness_provider(tmp_path, data_dir):
    inspect = Path(sys.executable).parent / "inspect"
    assert inspect.exists() or shutil.which("inspect")
    log_dir = tmp_path / "logs"
    proc = subprocess.run(
        [str(inspect) if inspect.exists() else "inspect", "eval", "harness/aime",
         "--model", "scripted/x", "-M", "answer=\\boxed{70}", "-T", f"data_dir={data_dir}",
         "--log-dir", str(log_dir), "--display", "none"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (info,) = list_eval_logs(str(log_dir))
    log = read_eval_log(info)
    assert log.eval.task.endswith("aime") and len(log.samples) == 60
    correct = [s.id for s in log.samples if s.scores["math_answer"].value == "C"]
    assert correct == ["2025-1"]  # the only problem whose answer is 70


def _inspect() -> str:
    found = Path(sys.executable).parent / "inspect"
    return str(found) if found.exists() else "inspect"


def test_inspect_score_and_eval_retry_work_on_a_harness_log_from_another_folder(tmp_path):
    """A replay model's identity is its absolute path, and our scorers resolve by the bare name
    a log records, so inspect's own tools work on our logs from any folder."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "answers.jsonl").write_text(
        "".join(f'{{"id": "arith-{i}", "output": "{i}"}}\n' for i in range(1, 6))
    )
    made = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--suite", "arith", "-T", "n=5",
         "--model", "replay/answers.jsonl", "-M", "fail=arith-2", "--log-dir", "logs",
         "--display", "none"],
        capture_output=True, text=True, timeout=300, cwd=run,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    (info,) = list_eval_logs(str(run / "logs"))
    log = read_eval_log(info)
    assert log.eval.model == f"replay/{run / 'answers.jsonl'}"  # absolute, not as typed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rescored = elsewhere / "rescored.eval"
    scored = subprocess.run(
        [_inspect(), "score", info.name, "--output-file", str(rescored), "--action", "overwrite",
         "--display", "none"],
        capture_output=True, text=True, timeout=300, cwd=elsewhere,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr[-2000:]
    again = read_eval_log(str(rescored))
    assert [s.scores["first_integer_match"].value for s in again.samples] == [
        s.scores["first_integer_match"].value for s in log.samples
    ]
    retried = subprocess.run(
        [_inspect(), "eval-retry", info.name, "--log-dir", str(elsewhere / "retry"),
         "--display", "none"],
        capture_output=True, text=True, timeout=300, cwd=elsewhere,
    )  # fmt: skip
    assert retried.returncode == 0, retried.stderr[-2000:]
    (retry_info,) = list_eval_logs(str(elsewhere / "retry"))
    assert read_eval_log(retry_info).status == "success"
