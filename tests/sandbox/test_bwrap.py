"""The attack battery for the bwrap sandbox: each attack is contained, and the sandbox works on."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.util import ExecResult

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment, bwrap_available, limit_reason
from harness.sandbox.bwrap import WORK_DIR
from tests.deadline import deadline

MIB = 1024**2
SMALL = BwrapConfig(memory_mb=1024, max_processes=64, max_file_mb=10, cpu_seconds=5, timeout=30)


@pytest.fixture(scope="module", autouse=True)
def _require_bwrap() -> None:
    # CI installs bwrap (scripts/install-debian-packages.sh); a missing one fails, never skips
    reason = bwrap_available()
    if reason is not None:
        pytest.fail(f"bwrap sandbox unavailable: {reason}")


@pytest.fixture
def box() -> Iterator[BwrapSandboxEnvironment]:
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", SMALL, {}))
    env = envs["default"].as_type(BwrapSandboxEnvironment)
    yield env
    asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", SMALL, envs, False))
    assert not env.work_dir.exists()


def run(box: BwrapSandboxEnvironment, script: str, **kwargs: Any) -> ExecResult[str]:
    return asyncio.run(box.exec(["bash", "-c", script], **kwargs))


def still_works(box: BwrapSandboxEnvironment) -> None:
    result = run(box, "echo ok > alive && cat alive")
    assert result.success and result.stdout == "ok\n", result


def call(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())


def test_work_folder_persists_and_is_home(box: BwrapSandboxEnvironment) -> None:
    assert run(box, "echo one > notes.txt").success
    result = run(box, 'cat notes.txt && pwd && echo "$HOME" && id -u')
    assert result.stdout.splitlines()[:3] == ["one", WORK_DIR, WORK_DIR]
    assert (box.work_dir / "notes.txt").read_text() == "one\n"
    assert result.stdout.splitlines()[3] != "0"  # never root inside


def test_read_write_file_round_trip_and_refuse_escapes(box: BwrapSandboxEnvironment) -> None:
    call(lambda: box.write_file("pkg/data.bin", b"\x00\x01"))
    call(lambda: box.write_file(f"{WORK_DIR}/text.txt", "a\r\nb"))
    assert call(lambda: box.read_file("pkg/data.bin", text=False)) == b"\x00\x01"
    assert call(lambda: box.read_file("text.txt")) == "a\r\nb"
    assert run(box, "cat pkg/data.bin | wc -c").stdout.strip() == "2"
    for bad in ("../escape.txt", "pkg/../../escape.txt", "/etc/passwd"):
        with pytest.raises(PermissionError):
            call(lambda bad=bad: box.read_file(bad))
        with pytest.raises(PermissionError):
            call(lambda bad=bad: box.write_file(bad, "x"))
    assert not (box.work_dir.parent / "escape.txt").exists()
    # a symlink planted inside the sandbox must not let the host read its target
    assert run(box, "ln -s /etc/hostname link").success
    with pytest.raises(PermissionError):
        call(lambda: box.read_file("link"))
    still_works(box)


def test_network_is_unreachable(box: BwrapSandboxEnvironment) -> None:
    script = (
        "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)\nprint('CONNECTED')\n"
    )
    result = asyncio.run(box.exec(["python3", "-c", script]))
    assert not result.success and "CONNECTED" not in result.stdout
    assert "Network is unreachable" in result.stderr, result.stderr
    # only loopback exists: /proc/net/dev has two header lines and then lo alone
    interfaces = run(box, "tail -n +3 /proc/net/dev").stdout.split()
    assert [w for w in interfaces if w.endswith(":")] == ["lo:"], interfaces
    still_works(box)


def test_writes_outside_the_work_folder_fail_or_stay_private(
    box: BwrapSandboxEnvironment,
) -> None:
    for target in ("/usr/harness-x", "/etc/harness-x", "/harness-x"):
        result = run(box, f"echo pwned > {target}")
        assert not result.success, target  # the root and its binds are read-only
        assert not Path(target).exists()
    name = f"harness-bwrap-{uuid.uuid4().hex}"
    assert run(box, f"echo private > /tmp/{name} && cat /tmp/{name}").stdout == "private\n"
    assert not Path("/tmp", name).exists()  # the sandbox's /tmp is its own tmpfs
    assert not run(box, f"cat /tmp/{name}").success  # and it does not outlive the command
    still_works(box)


def test_host_home_is_invisible(box: BwrapSandboxEnvironment) -> None:
    marker = Path.home() / ".harness-bwrap-marker"
    marker.write_text("secret-4711")
    try:
        result = run(box, f"cat {marker}; ls -a {Path.home()}; ls /root /home; cat ~/*marker*")
        assert "secret-4711" not in result.stdout
        assert ".harness-bwrap-marker" not in result.stdout
    finally:
        marker.unlink()
    still_works(box)


def test_own_pid_namespace(box: BwrapSandboxEnvironment) -> None:
    result = run(box, "ls /proc | grep -c '^[0-9]'")
    assert int(result.stdout) < 10, result.stdout  # the host has many more
    assert os.getpid() != 0 and str(os.getpid()) not in run(box, "ls /proc").stdout.split()


def _host_processes_with(marker: str) -> int:
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            count += marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            pass
    return count


def test_fork_bomb_is_stopped(box: BwrapSandboxEnvironment) -> None:
    marker = f"bomb{uuid.uuid4().hex}"
    script = (
        f"# {marker}\n"
        "import os, sys, time\n"
        "n = 0\n"
        "while n < 5000:\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print('forked', n)\n"
    )
    before = len(os.listdir("/proc"))
    result = asyncio.run(box.exec(["python3", "-c", script]))
    assert not result.success and "forked 5000" not in result.stdout
    assert limit_reason(result) == "limit: processes", result.stderr
    assert _host_processes_with(marker) == 0  # the namespace took every child down
    assert len(os.listdir("/proc")) < before + 20
    still_works(box)


def test_memory_bomb_hits_the_memory_limit(box: BwrapSandboxEnvironment) -> None:
    result = asyncio.run(box.exec(["python3", "-c", "x = bytearray(4 * 1024**3)"]))
    assert not result.success
    assert limit_reason(result) == "limit: memory", result
    still_works(box)


def test_cpu_spin_hits_the_cpu_limit() -> None:
    config = BwrapConfig(cpu_seconds=1, timeout=30)
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    try:
        result = asyncio.run(box.exec(["python3", "-c", "while True: pass"]))
        assert limit_reason(result) == "limit: cpu time", result
        still_works(box)
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", config, envs, False))


def test_sleep_past_the_timeout_is_killed(box: BwrapSandboxEnvironment) -> None:
    marker = f"{uuid.uuid4().int % 10**6 + 30}"
    start = time.monotonic()
    with pytest.raises(TimeoutError) as caught:
        asyncio.run(box.exec(["sleep", marker], timeout=2))
    assert time.monotonic() - start < 5
    assert limit_reason(caught.value) == "timeout"
    time.sleep(0.2)
    assert _host_processes_with(f"sleep\x00{marker}") == 0
    still_works(box)


def test_huge_file_hits_the_file_size_limit(box: BwrapSandboxEnvironment) -> None:
    result = run(box, "head -c 2G /dev/zero > big")
    assert limit_reason(result) == "limit: file size", result
    assert (box.work_dir / "big").stat().st_size <= 10 * MIB
    still_works(box)


def test_network_option_shares_the_host_network(box: BwrapSandboxEnvironment) -> None:
    # no outside network may exist here, so look for the host's interfaces, not a connection
    shared = BwrapSandboxEnvironment(box.work_dir, BwrapConfig(network=True))
    host = sorted(os.listdir("/sys/class/net"))
    inside = asyncio.run(shared.exec(["ls", "/proc/self/net/dev"]))
    assert inside.success
    inner = asyncio.run(shared.exec(["cat", "/proc/net/dev"])).stdout
    assert all(name in inner for name in host), (host, inner)
    isolated = run(box, "cat /proc/net/dev").stdout
    assert [n for n in host if n != "lo" and n in isolated] == []


def test_config_round_trips_through_inspect() -> None:
    config = BwrapConfig(memory_mb=512, network=True)
    assert BwrapSandboxEnvironment.config_deserialize(config.model_dump()) == config
    with pytest.raises(ValueError):
        BwrapConfig(timeout=0)


def _bounded(coro: Callable[[], Awaitable[Any]], seconds: float = 5.0) -> Any:
    """Run a host-side file call with a deadline: a call that blocks fails the test, not CI."""

    async def go() -> Any:
        return await asyncio.wait_for(coro(), seconds)

    with deadline(int(seconds) + 5):  # in case the call blocks the event loop itself
        return asyncio.run(go())


def test_a_fifo_neither_blocks_nor_is_read_or_written(box: BwrapSandboxEnvironment) -> None:
    assert run(
        box, "mkfifo notes.py && mkdir -p .git && mkfifo .git/harness-candidate.diff"
    ).success
    for name in ("notes.py", ".git/harness-candidate.diff"):
        with pytest.raises(PermissionError):
            _bounded(lambda name=name: box.read_file(name))
        with pytest.raises(PermissionError):
            _bounded(lambda name=name: box.write_file(name, "x"))
    still_works(box)


def test_a_folder_swapped_for_a_symlink_never_redirects_a_host_write(
    box: BwrapSandboxEnvironment, tmp_path: Path
) -> None:
    """A bounded race: a thread swaps d and a link to a host folder with RENAME_EXCHANGE."""
    import ctypes
    import threading

    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    outside = tmp_path / "host"
    outside.mkdir()
    d, link = box.work_dir / "d", box.work_dir / "link"
    d.mkdir()
    link.symlink_to(outside)
    stop = time.monotonic() + 2.0

    def swap() -> None:
        a, b = bytes(d), bytes(link)
        while time.monotonic() < stop:
            libc.renameat2(at_fdcwd, a, at_fdcwd, b, rename_exchange)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    writes = refused = 0
    while time.monotonic() < stop:
        try:
            _bounded(lambda: box.write_file("d/x", "payload"))
            writes += 1
        except (PermissionError, FileNotFoundError):
            refused += 1
    swapper.join(timeout=5)
    assert not list(outside.iterdir()), "a host write followed the planted link"
    assert writes > 0  # the race ran both ways: some writes landed in the real folder
    still_works(box)


def test_tmp_is_bounded_and_nested_user_namespaces_are_refused() -> None:
    config = SMALL.model_copy(update={"tmp_mb": 4})
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    try:
        filled = run(box, "head -c 8M /dev/zero > /tmp/fill; echo rc=$?; du -m /tmp/fill")
        assert "rc=1" in filled.stdout and "No space left" in filled.stderr, filled
        nested = run(box, "unshare -Urm sh -c 'mount -t tmpfs none /mnt && echo mounted'")
        assert not nested.success and "mounted" not in nested.stdout, nested
        still_works(box)
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", config, envs, False))


def test_long_output_keeps_its_head_and_tail_and_says_where_it_was_cut(
    box: BwrapSandboxEnvironment,
) -> None:
    from inspect_ai.util import SandboxEnvironmentLimits

    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    script = f"echo FIRST; head -c {3 * limit} /dev/zero | tr '\\0' x; echo; echo LAST"
    result = run(box, script)
    assert result.success
    assert result.stdout.startswith("FIRST\n") and result.stdout.endswith("LAST\n")
    assert "bytes of output cut here" in result.stdout
    assert len(result.stdout) < limit + 200


def test_the_work_folder_has_a_quota_of_bytes_and_of_files() -> None:
    config = SMALL.model_copy(update={"work_mb": 4, "work_files": 500})
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    try:
        big = run(box, "head -c 6M /dev/zero > big")
        assert not big.success and limit_reason(big) == "limit: work folder", big
        assert run(box, "rm big").success
        flood = run(box, "mkdir f && cd f && touch $(seq 1 1000)")
        assert not flood.success and limit_reason(flood) == "limit: work folder", flood
        assert run(box, "rm -r f").success
        still_works(box)
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", config, envs, False))


# x86-64 and arm64 numbers of the calls the seccomp filter refuses (PTRACE_SEIZE of pid 1 for
# ptrace: it traces the sandbox's init without stopping it; the other arguments do not matter,
# since a refused call never reaches the kernel)
_SYSCALLS = {
    "x86_64": {"ptrace": 101, "mount": 165, "unshare": 272, "setns": 308, "keyctl": 250,
               "bpf": 321, "perf_event_open": 298, "io_uring_setup": 425},
    "aarch64": {"ptrace": 117, "mount": 40, "unshare": 97, "setns": 268, "keyctl": 219,
                "bpf": 280, "perf_event_open": 241, "io_uring_setup": 425},
}  # fmt: skip
_TRY_SYSCALLS = """
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, nr in json.loads(sys.argv[1]).items():
    args = (0x4206, 1, 0, 0) if name == "ptrace" else (0, 0, 0, 0)
    rc = libc.syscall(nr, *args)
    out[name] = "ok" if rc == 0 else os.strerror(ctypes.get_errno())
print(json.dumps(out))
"""


@pytest.mark.parametrize("seccomp", [True, False], ids=["filter", "control-without"])
def test_seccomp_refuses_ptrace_of_init_mounts_namespaces_and_kernel_facilities(
    seccomp: bool,
) -> None:
    import json
    import platform

    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"no syscall numbers for {platform.machine()} in this test")
    config = SMALL.model_copy(update={"seccomp": seccomp})
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    try:
        result = asyncio.run(box.exec(["python3", "-c", _TRY_SYSCALLS, json.dumps(numbers)]))
        assert result.success, result
        outcome = json.loads(result.stdout)
        status = run(box, "grep Seccomp: /proc/self/status").stdout.split()
        if seccomp:
            assert outcome == dict.fromkeys(numbers, "Operation not permitted"), outcome
            assert status == ["Seccomp:", "2"]
        else:  # the attack the filter stops: the sandbox's own init can be traced without it
            assert outcome["ptrace"] == "ok", outcome
            assert status == ["Seccomp:", "0"]
        still_works(box)
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", config, envs, False))


# Six processes touch 64 MiB each at the same time (each holds its memory until all have it):
# 384 MiB in all, each one well under the per-process limit of 1 GiB.
_SIX_PROCESSES = """
import os, time
kids = []
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        block = bytearray(64 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1)
        os._exit(0)
    kids.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in kids]
print(sum(code == 0 for code in codes), "of", len(codes), "held 64 MiB")
"""


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "control-without"])
def test_memory_is_bounded_for_the_sample_as_a_whole(cgroup: bool) -> None:
    from harness.sandbox.cgroup import cgroup_support

    if cgroup and not (support := cgroup_support()).version:
        pytest.skip(f"no cgroup can be made here: {support.reason}")
    config = SMALL.model_copy(update={"total_memory_mb": 160, "cgroup": cgroup})
    envs = asyncio.run(BwrapSandboxEnvironment.sample_init("test", config, {}))
    box = envs["default"].as_type(BwrapSandboxEnvironment)
    folders = box.cgroup.folders if box.cgroup is not None else ()
    try:
        result = asyncio.run(box.exec(["python3", "-c", _SIX_PROCESSES]))
        if cgroup:
            assert not result.success and limit_reason(result) == "limit: memory", result
            assert "6 of 6" not in result.stdout, result
            peak = box.cgroup.peak_memory()
            assert peak is None or peak <= 160 * MIB, peak
            still_works(box)
        else:  # without the cgroup, the per-process limits let all six through
            assert result.success and "6 of 6" in result.stdout, result
    finally:
        asyncio.run(BwrapSandboxEnvironment.sample_cleanup("test", config, envs, False))
    assert not any(folder.exists() for folder in folders)
