"""A stopped run leaves no training worker behind (issue 46's ImgCoT run: SIGTERM to `harness
eval` left its two workers training)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import os, sys, time
from harness.suites.training_pool import executor
pool = executor(2)
pids = {pool.submit(os.getpid).result() for _ in range(8)}
for _ in range(2):
    pool.submit(time.sleep, 120)  # a long training run in each worker
print(" ".join(map(str, sorted(pids))), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
        return f.read().split(") ")[-1][0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_end_when_the_run_is_killed(sig):
    proc = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and all(_alive(p) for p in pids)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in pids), "a worker outlived its run"
    finally:
        proc.kill()
        for p in locals().get("pids", []):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
