"""Resource limits for sandboxed commands, and the reason a command broke one.

The limits are rlimits set by util-linux's `prlimit` as the first program inside the
sandbox, so they bind the command and everything it starts, but not bubblewrap itself.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from inspect_ai.util import ExecResult

from harness.sandbox.config import BwrapConfig

_MIB = 1024**2

# Exit codes for a process killed by a signal: bwrap reports 128 + n for its child, a shell
# does the same for its own child, and Python's subprocess reports -n.
_CPU_CODES = {128 + signal.SIGXCPU, -signal.SIGXCPU}
_FSIZE_CODES = {128 + signal.SIGXFSZ, -signal.SIGXFSZ}
_KILL_CODES = {128 + signal.SIGKILL, -signal.SIGKILL}

WORK_QUOTA_TEXT = "[harness: the work folder is over its quota"  # written by the bwrap sandbox
CGROUP_OOM_TEXT = "[harness: the kernel killed a process at the sample's memory limit"  # likewise
WALL_CLOCK_TEXT = "[harness: wall clock:"  # likewise, with `BwrapConfig.grace_seconds`
_WALL_CLOCK_RE = re.compile(r"\[harness: wall clock: SIGTERM at (\d+) s(?:, SIGKILL at (\d+) s)?\]")
_MEMORY_TEXT = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
_FSIZE_TEXT = ("File too large", "File size limit exceeded")
_FORK_TEXT = ("fork", "BlockingIOError", "Cannot fork", "pthread_create")


def prlimit_argv(config: BwrapConfig) -> list[str]:
    """Return the `prlimit` prefix that applies the config's limits to a command."""
    cpu = config.cpu_seconds
    return [
        "prlimit",
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={config.memory_mb * _MIB}",
        f"--nproc={config.max_processes}",
        f"--fsize={config.max_file_mb * _MIB}",
        "--core=0",
        "--",
    ]


@dataclass(frozen=True, slots=True)
class WallClock:
    """When the wall clock of a command with a grace period sent its signals."""

    sigterm_at_s: int  # seconds after the command started: the wall clock
    sigkill_at_s: int | None  # the wall clock plus the grace, if SIGKILL was needed
    signal: str  # the last signal sent: "SIGTERM" or "SIGKILL"


def wall_clock_text(seconds: int, kill_after: int | None) -> str:
    """The stderr line the sandbox adds when its wall clock stopped a command."""
    kill = "" if kill_after is None else f", SIGKILL at {seconds + kill_after} s"
    return f"{WALL_CLOCK_TEXT} SIGTERM at {seconds} s{kill}]"


def wall_clock_of(result: ExecResult[str]) -> WallClock | None:
    """The signals the sandbox's wall clock sent to a command, or None when it sent none."""
    found = _WALL_CLOCK_RE.search(result.stderr)
    if found is None:
        return None
    kill = int(found.group(2)) if found.group(2) else None
    return WallClock(int(found.group(1)), kill, "SIGTERM" if kill is None else "SIGKILL")


def limit_reason(outcome: ExecResult[str] | BaseException) -> str | None:
    """Say which limit ended a sandboxed command, or None when no limit did.

    Args:
        outcome: The command's `ExecResult`, or the exception its `exec` raised.

    Returns:
        One of "timeout", "limit: cpu time", "limit: file size", "limit: memory",
        "limit: processes", or None.

    Notes:
        These are heuristics, read from what the command leaves behind:

        - "timeout": the exception is a `TimeoutError` (the sandbox's wall clock), or, with
          a grace period, the sandbox's wall-clock line is on stderr (exit code 124 or 137).
        - "limit: cpu time": exit code 152 or -24 (SIGXCPU). A command that kills itself with
          SIGXCPU reads the same.
        - "limit: file size": exit code 153 or -25 (SIGXFSZ), or "File too large" (EFBIG,
          for a program that ignores SIGXFSZ) on stderr of a failed command.
        - "limit: memory": RLIMIT_AS makes allocations fail rather than kill, so this is read
          from stderr of a failed command ("MemoryError", "Cannot allocate memory",
          "std::bad_alloc", "out of memory"). Exit code 137 or -9 (SIGKILL) is also read
          as memory, since an OOM killer is the usual sender of an unrequested SIGKILL;
          but the CPU hard limit (after an ignored SIGXCPU) and a command's own `kill -9`
          give the same code.
        - "limit: processes": a failed command whose stderr has "Resource temporarily
          unavailable" (EAGAIN) together with a word about forking or threads. A program
          that swallows the error and exits 0 is not caught.

        A command that prints these words and fails for another reason is misread; callers
        that need certainty should look at the limit itself (e.g. a file's size).

    """
    if isinstance(outcome, TimeoutError):
        return "timeout"
    if isinstance(outcome, BaseException):
        return None
    code = outcome.returncode
    if WALL_CLOCK_TEXT in outcome.stderr:
        return "timeout"
    if code in _CPU_CODES:
        return "limit: cpu time"
    if code in _FSIZE_CODES:
        return "limit: file size"
    if code in _KILL_CODES:
        return "limit: memory"
    if outcome.success:
        return None
    stderr = outcome.stderr
    if CGROUP_OOM_TEXT in stderr:
        return "limit: memory"
    if WORK_QUOTA_TEXT in stderr:
        return "limit: work folder"
    if any(text in stderr for text in _FSIZE_TEXT):
        return "limit: file size"
    if any(text in stderr for text in _MEMORY_TEXT):
        return "limit: memory"
    if "Resource temporarily unavailable" in stderr and any(t in stderr for t in _FORK_TEXT):
        return "limit: processes"
    return None
