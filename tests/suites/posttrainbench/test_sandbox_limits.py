"""The sandbox the suite gives its agents: the harness's Python read-only, no network, no
writes outside the work folder, the seccomp filter and the budget's wall clock on."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment
from harness.suites.posttrainbench.runtime import VENV_IN_SANDBOX, reachable_by_sandbox
from harness.suites.posttrainbench.task import posttrainbench

PROBE = f"""
import os, socket
out = []
try:
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    out.append("network: reached")
except OSError:
    out.append("network: refused")
for path in ("{VENV_IN_SANDBOX}/planted.py", "/usr/planted", "/etc/planted", "/planted"):
    try:
        open(path, "w").write("x")
        out.append(path + ": written")
    except OSError:
        out.append(path + ": refused")
open("/work/mine.txt", "w").write("x")
out.append("work: written")
print("\\n".join(out))
"""


@pytest.mark.skipif(
    not reachable_by_sandbox(Path(sys.prefix)),
    reason=f"the sandbox's user cannot read this virtual environment ({sys.prefix}): a folder "
    "above it is not searchable by others (a clone under a 0700 folder)",
)
def test_the_agents_sandbox_holds_its_limits() -> None:
    task = posttrainbench(agents="honest", benchmarks="add2", budget_minutes=1, grace_seconds=5)
    config = task.sandbox.config
    assert isinstance(config, BwrapConfig)
    assert not config.network and config.seccomp and config.cgroup
    assert config.grace_seconds == 5 and config.ro_binds
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("ptb", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    try:
        python = f"{VENV_IN_SANDBOX}/bin/python"
        result = asyncio.run(box.exec([python, "-I", "-c", PROBE], timeout=60))
        assert result.success, result
        lines = result.stdout.split("\n")
        assert "network: refused" in lines
        assert [line for line in lines if line.endswith(": written")] == ["work: written"], lines
        assert (box.work_dir / "mine.txt").exists()
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("ptb", config, envs, False))
