"""Two options of the bwrap sandbox: read-only binds of host paths, and a wall clock with grace.

`ro_binds` shows a host folder read-only at a path of our choosing; `grace_seconds` makes the
wall clock send SIGTERM, then SIGKILL after the grace, and say so in the result.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.util import ExecResult
from pydantic import ValidationError

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment, bwrap_available, limit_reason
from harness.sandbox.limits import wall_clock_of


@pytest.fixture(scope="module", autouse=True)
def _require_bwrap() -> None:
    reason = bwrap_available()
    if reason is not None:
        pytest.fail(f"bwrap sandbox unavailable: {reason}")


@pytest.fixture
def shared() -> Iterator[Path]:
    """A host folder the sandbox's user can read (0755, a 0644 file in it)."""
    with tempfile.TemporaryDirectory(prefix="harness-ro-bind-") as folder:
        path = Path(folder)
        path.chmod(0o755)
        (path / "data.txt").write_text("from the host\n")
        (path / "data.txt").chmod(0o644)
        yield path


def _box(config: BwrapConfig) -> BwrapSandboxEnvironment:
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    return envs["default"].as_type(BwrapSandboxEnvironment)


def _close(box: BwrapSandboxEnvironment) -> None:
    asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", box.config, {"default": box}, False))


def _run(box: BwrapSandboxEnvironment, script: str, **kwargs) -> ExecResult[str]:
    return asyncio.run(box.exec(["bash", "-c", script], **kwargs))


def test_ro_bind_is_readable_and_not_writable(shared: Path) -> None:
    box = _box(BwrapConfig(timeout=30, ro_binds=((str(shared), "/opt/shared"),)))
    try:
        read = _run(box, "cat /opt/shared/data.txt")
        assert read.success and read.stdout == "from the host\n", read
        write = _run(box, "echo x > /opt/shared/data.txt || echo refused; touch /opt/shared/new")
        assert "refused" in write.stdout and not write.success
        assert (shared / "data.txt").read_text() == "from the host\n"
        assert not (shared / "new").exists()
        # the work folder is still the one writable place
        assert _run(box, "echo ok > here && cat here").stdout == "ok\n"
    finally:
        _close(box)


def test_without_ro_binds_the_host_path_is_not_there(shared: Path) -> None:
    box = _box(BwrapConfig(timeout=30))
    try:
        result = _run(box, f"ls {shared} /opt/shared")
        assert not result.success and "No such file" in result.stderr
    finally:
        _close(box)


@pytest.mark.parametrize(
    "bind",
    [("relative", "/opt/x"), ("/tmp", "opt/x"), ("/tmp", "/"), ("/tmp", "/work/venv"),
     ("/tmp", "/usr/local/x"), ("/tmp", "/proc/x"), ("/tmp", "/tmp/x")],
)  # fmt: skip
def test_ro_binds_refuse_paths_that_cover_the_sandbox(bind: tuple[str, str]) -> None:
    with pytest.raises(ValidationError, match="ro_binds"):
        BwrapConfig(ro_binds=(bind,))


def test_grace_sends_term_first_and_records_it() -> None:
    box = _box(BwrapConfig(timeout=60, grace_seconds=5))
    try:
        script = "trap 'echo got TERM; exit 3' TERM; echo started; sleep 30 & wait"
        result = _run(box, script, timeout=2)
        assert result.returncode == 124, result
        assert "started" in result.stdout and "got TERM" in result.stdout
        clock = wall_clock_of(result)
        assert clock is not None and clock.signal == "SIGTERM"
        assert clock.sigterm_at_s == 2 and clock.sigkill_at_s is None
        assert limit_reason(result) == "timeout"
    finally:
        _close(box)


def test_grace_ends_with_kill_when_term_is_ignored() -> None:
    box = _box(BwrapConfig(timeout=60, grace_seconds=2))
    try:
        script = "trap '' TERM; echo started; while true; do sleep 0.2; done"
        result = _run(box, script, timeout=1)
        assert result.returncode == 137, result
        clock = wall_clock_of(result)
        assert clock is not None and clock.signal == "SIGKILL"
        assert (clock.sigterm_at_s, clock.sigkill_at_s) == (1, 3)
        assert limit_reason(result) == "timeout"
        # nothing of the command is left running in the sandbox
        assert _run(box, "ps -e -o comm= | grep -c sleep || true").stdout.strip() == "0"
    finally:
        _close(box)


def test_a_command_that_exits_124_itself_is_not_a_timeout() -> None:
    box = _box(BwrapConfig(timeout=60, grace_seconds=2))
    try:
        result = _run(box, "exit 124", timeout=30)
        assert result.returncode == 124 and wall_clock_of(result) is None
        assert limit_reason(result) is None
    finally:
        _close(box)


def test_without_grace_the_wall_clock_still_raises() -> None:
    box = _box(BwrapConfig(timeout=60))
    try:
        with pytest.raises(TimeoutError):
            _run(box, "sleep 30", timeout=1)
    finally:
        _close(box)
    assert os.path.exists("/usr/bin/timeout") or os.path.exists("/bin/timeout")
