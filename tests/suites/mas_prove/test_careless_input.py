"""Bad input to the suite: one line on stderr naming the input, exit 2, nothing run.

The cases run the real `harness eval` command in-process (click's runner, stderr apart); one of
them also runs as a subprocess, as a user types it (slow: a fresh interpreter imports inspect).
"""

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from harness.cli import main

BASE = ["eval", "--suite", "mas-prove", "--model", "scripted/agent"]
# (extra arguments, a word the line must contain); none of them trains or loads tiny-arith
# fmt: off
CASES = [
    (["-T", "patterns=debate,nope"], "nope"),
    (["-T", "verifiers=oracle,nope"], "nope"),
    (["-T", "granularities=round"], "round"),
    (["-T", "contexts=everything"], "everything"),
    (["-T", "n=0"], "n"),
    (["-T", "n=-2"], "n"),
    (["-T", "n=abc"], "n"),
    (["-T", "seeds=0"], "seeds"),
    (["-T", "agents=0"], "agents"),
    (["-T", "verifiers=judge", "-T", "judge_model=nosuch/model"], "nosuch"),
    (["-T", "verifiers=judge", "-T", "judge_model=judge"], "PROVIDER/NAME"),
    (["-T", "verifiers=reward", "-T", "reward_model=local/no/such/dir"], "no/such/dir"),
    (["-T", "verifiers=reward", "-T", "reward_model=nosuch/model"], "nosuch/model"),
    (["-T", "benchmark=nope"], "benchmark"),
    (["-T", "benchmark=gaia", "--data-dir", "{tmp}"], "gaia/2023/validation/metadata.jsonl"),
    (["-T", "extraction=loose"], "extraction"),
    (["-T", "prm_reduction=mean"], "prm_reduction"),
    (["-T", "min_steps=4", "-T", "max_steps=3"], "max_steps"),
    (["-T", "verifier_timeout=0"], "verifier_timeout"),
    (["-T", "judge_args=[1]"], "judge_args"),
]
# fmt: on


@pytest.mark.parametrize(("extra", "word"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_and_exit_2(tmp_path, extra, word):
    extra = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    result = CliRunner().invoke(main, [*BASE, *extra, "--log-dir", str(tmp_path / "logs")])
    assert result.exit_code == 2, (result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("harness: error:"), result.stderr
    assert word in lines[0]
    assert "Traceback" not in result.output
    assert not list((tmp_path / "logs").glob("*.eval"))  # nothing ran


@pytest.mark.slow
def test_bad_input_as_a_user_types_it(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    args = [*BASE, "-T", "patterns=nope", "--log-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env,
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "nope" in done.stderr
