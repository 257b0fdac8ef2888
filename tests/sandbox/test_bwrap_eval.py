"""An inspect eval in the `bwrap` sandbox: a command that breaks a limit is scored wrong, with its
reason recorded, and the other samples of the run go on."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

import harness.plugin  # noqa: F401  (registers the sandbox by name)
from harness.sandbox import BwrapConfig, bwrap_available, limit_reason

COMMANDS = {
    "ok": "echo ok > out.txt && cat out.txt",
    "network": "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\"",
    "timeout": "sleep 30",
    "huge-file": "head -c 200M /dev/zero > big",
    "memory": 'python3 -c "x = bytearray(3 * 1024 ** 3)"',
    "fork-bomb": (
        'python3 -c "import os, time\n'
        "for _ in range(5000):\n"
        "    if os.fork() == 0:\n"
        '        time.sleep(30); os._exit(0)"'
    ),
    "write-outside": "echo pwned > /usr/pwned && echo pwned > /etc/pwned",
    "read-home": "cat ~root/.bashrc /root/.bashrc",
    "after": "cat out.txt 2>/dev/null || echo fresh",  # a new sample: a fresh work folder
}


@solver
def run_command():
    """Run the sample's command in its sandbox; the outcome goes in the metadata."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            result = await sandbox().exec(["bash", "-c", state.input_text], timeout=3)
        except TimeoutError as ex:
            state.metadata.update(rc=None, reason=limit_reason(ex), stdout="")
        else:
            reason = limit_reason(result)
            if reason is None and not result.success:
                reason = f"exit {result.returncode}"
            state.metadata.update(rc=result.returncode, reason=reason, stdout=result.stdout)
        return state

    return solve


@scorer(metrics=[accuracy()])
def finished_cleanly():
    """Correct iff the command ended without a limit or an error."""

    async def score(state: TaskState, target: Target) -> Score:
        reason = state.metadata["reason"]
        return Score(value=CORRECT if reason is None else INCORRECT,
                     explanation=reason or state.metadata["stdout"])  # fmt: skip

    return score


def test_limits_score_the_sample_wrong_and_the_run_goes_on(tmp_path):
    if (why := bwrap_available()) is not None:
        pytest.fail(f"bwrap sandbox unavailable: {why}")
    config = BwrapConfig(memory_mb=1024, max_processes=64, max_file_mb=10, cpu_seconds=5,
                         timeout=30)  # fmt: skip
    task = Task(
        dataset=[Sample(id=k, input=v) for k, v in COMMANDS.items()],
        solver=run_command(),
        scorer=finished_cleanly(),
        sandbox=("bwrap", config),
    )
    (log,) = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none",
                  max_samples=2)  # fmt: skip
    assert log.status == "success"
    by_id = {s.id: s for s in log.samples}
    assert set(by_id) == set(COMMANDS)
    reasons = {k: s.metadata["reason"] for k, s in by_id.items()}
    values = {k: s.scores["finished_cleanly"].value for k, s in by_id.items()}
    assert values["ok"] == CORRECT and by_id["ok"].metadata["stdout"].strip() == "ok"
    assert values["after"] == CORRECT and by_id["after"].metadata["stdout"].strip() == "fresh"
    assert reasons["timeout"] == "timeout"
    assert reasons["huge-file"] == "limit: file size"
    assert reasons["memory"] == "limit: memory"
    assert reasons["network"] is not None  # unreachable: a failed command, never a connection
    assert reasons["fork-bomb"] == "limit: processes"
    assert reasons["write-outside"] is not None and reasons["read-home"] is not None
    assert not Path("/usr/pwned").exists() and not Path("/etc/pwned").exists()
    for bad in ("network", "timeout", "huge-file", "memory", "fork-bomb", "write-outside",
                "read-home"):  # fmt: skip
        assert values[bad] == INCORRECT, (bad, reasons[bad])
