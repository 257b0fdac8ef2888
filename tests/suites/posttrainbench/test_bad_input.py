"""Bad input to the suite: one line on stderr, exit 2, the input named, nothing run.

The command cases run the real `harness eval` in-process (click's runner, stderr apart); the
rest call the task function, which is what the command calls, and must raise the usage error
the CLI prints as one line.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import HarnessUsageError
from harness.suites.posttrainbench.runtime import reachable_by_sandbox
from harness.suites.posttrainbench.task import posttrainbench

CASES = [
    (["-T", "agents=honest,nope"], "nope"),
    (["-T", "budget_minutes=0"], "budget_minutes"),
    (["-T", "base_models=Qwen9-Base"], "Qwen9-Base"),
    (["-T", "agents=react"], "react"),  # the default model none/none cannot drive it
]
DIRECT = [
    ({"benchmarks": "gsm9k"}, "gsm9k"),
    ({"budget_minutes": -2}, "budget_minutes"),
    ({"preset": "tpu"}, "preset"),
    ({"preset": "gpu"}, "gpu"),
    ({"eval_max_tokens": "0"}, "eval_max_tokens"),
    ({"agents": ""}, "agents"),
    ({"grace_seconds": -1}, "grace_seconds"),
]


@pytest.mark.parametrize(("args", "word"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], word: str) -> None:
    if word == "react" and not reachable_by_sandbox(Path(sys.prefix)):
        # the task is built (and its sandbox's Python found) before the model is checked
        pytest.skip(f"the sandbox cannot read this virtual environment ({sys.prefix})")
    argv = ["eval", "--suite", "posttrainbench", *args, "--log-dir", str(tmp_path / "logs")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("harness: error:"), result.stderr
    assert word in lines[0]
    assert "Traceback" not in result.output
    assert not list((tmp_path / "logs").glob("*.eval"))  # nothing ran


@pytest.mark.parametrize(("args", "word"), DIRECT)
def test_bad_task_arguments_are_usage_errors(args: dict, word: str) -> None:
    with pytest.raises(HarnessUsageError, match=word) as caught:
        posttrainbench(**args)
    assert "\n" not in str(caught.value)
