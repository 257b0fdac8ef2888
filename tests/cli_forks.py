"""Run many `harness` command lines, each in a process of its own, for the price of one start.

`python -m tests.cli_forks CASES.json RESULTS.json` imports the CLI (and inspect-ai) once, then
forks a child per case: each child has its own working folder, environment, file descriptors
and memory, runs `harness.cli.main` on the case's arguments as the `harness` script would, and
exits with its code; an exception that escapes is printed as Python prints it (a traceback on
stderr, exit 1). The parent keeps two children running at once, kills one that outlives the
case's timeout (reported as `timed_out`), and reads each child's peak memory from `wait4`.

A test writes the cases (a list of {"args", "cwd", "env", "timeout", "stdin", "memory_limit"};
the last, true unless given, caps the child's address space) and reads the
results (a list of {"rc", "stdout", "stderr", "timed_out", "maxrss_kb"}).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

PARALLEL = 2  # the CI machine's cores
MEMORY_HEADROOM = 3 << 30  # address space a child may add beyond the parent's, in bytes


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(case: dict[str, Any], out: int, err: int) -> None:
    """Run one case in this (forked) process and exit; never returns."""
    code = 1
    try:
        import resource

        if case.get("memory_limit", True):  # a runaway case fails, not the machine
            limit = _vm_size() + MEMORY_HEADROOM
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.chdir(case["cwd"])
        os.environ.clear()
        os.environ.update(case["env"])
        stdin = os.open(case.get("stdin") or os.devnull, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(stdin, True)
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        from harness.cli import main

        try:
            main(case["args"], prog_name="harness")
            code = 0
        except SystemExit as ex:
            if ex.code is None or isinstance(ex.code, int):
                code = ex.code or 0
            else:
                print(ex.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: S110 - a closed or full stream: nothing more to say
                pass
        os._exit(code)


def run_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case's exit code, output, whether it was killed, and its peak memory."""
    results: list[dict[str, Any] | None] = [None] * len(cases)
    running: dict[int, tuple[int, float, Any, Any, float]] = {}  # pid -> index, deadline, ...
    todo = list(range(len(cases)))
    while todo or running:
        while todo and len(running) < PARALLEL:
            index = todo.pop(0)
            out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(cases[index], out.fileno(), err.fileno())
            started = time.monotonic()
            deadline = started + float(cases[index].get("timeout", 120))
            running[pid] = (index, deadline, out, err, started)
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.02)
            for child, (index, deadline, *_) in running.items():
                if time.monotonic() > deadline and results[index] is None:
                    results[index] = {"timed_out": True}
                    os.kill(child, signal.SIGKILL)
            continue
        index, _, out, err, started = running.pop(pid)
        out.seek(0)
        err.seek(0)
        killed = results[index] is not None
        results[index] = {
            "rc": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "timed_out": killed,
            "maxrss_kb": usage.ru_maxrss,
            "seconds": round(time.monotonic() - started, 2),  # for finding slow cases, not a test
        }
        out.close()
        err.close()
    return [r or {} for r in results]


def _preload() -> None:
    """Import what most commands import, once, so that each child starts warm."""
    import inspect_ai  # noqa: F401
    import inspect_ai.log  # noqa: F401
    import inspect_ai.model  # noqa: F401

    import harness.cli  # noqa: F401
    import harness.eval._runner  # noqa: F401
    import harness.leaderboard.build  # noqa: F401
    import harness.report._data  # noqa: F401
    import harness.report._render  # noqa: F401
    from harness import registry

    registry.names("command")


if __name__ == "__main__":
    _preload()
    with open(sys.argv[1], encoding="utf-8") as f:
        todo_cases = json.load(f)
    done = run_cases(todo_cases)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(done, f)
