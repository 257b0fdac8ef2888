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
