"""A run killed with SIGKILL half-way and re-run completes with every sample present once."""

import os
import signal
import subprocess
import sys
import time

from inspect_ai.analysis import samples_df


def test_sigkill_then_rerun_completes_each_sample_once(tmp_path):
    trace = tmp_path / "answered.txt"
    n = 40
    cmd = [
        sys.executable, "-m", "harness.cli", "eval", "--suite", "arith",
        "--model", "scripted/slow", "-T", f"n={n}", "-T", "difficulty=1",
        "-M", "delay=0.15", "-M", "connections=2", "-M", "answer=0",
        "-M", f"trace={trace}", "--log-dir", str(tmp_path / "logs"), "--display", "none",
    ]  # fmt: skip
    first = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if trace.exists() and len(trace.read_text().split()) >= n // 2:
            break
        assert first.poll() is None, "the run ended before it could be interrupted"
        time.sleep(0.05)
    else:
        raise AssertionError("the run never got half-way")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    answered_before = len(trace.read_text().split())
    assert answered_before < n

    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr

    logs = sorted((tmp_path / "logs").glob("*.eval"))
    df = samples_df([str(p) for p in logs], quiet=True)
    ids = df["id"].tolist()
    assert sorted(ids) == sorted(f"arith-{i}" for i in range(1, n + 1))  # each exactly once
    # the re-run reused finished samples instead of running everything again
    answered_total = len(trace.read_text().split())
    assert answered_total < n + answered_before
