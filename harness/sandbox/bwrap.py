"""A bubblewrap sandbox for model-written code, registered with inspect-ai as `bwrap`.

Each `exec` starts a fresh `bwrap` with every namespace unshared (so its own PID namespace
and a network namespace with only loopback), read-only binds of /usr and /etc with the
merged-/usr symlinks on a read-only root, a private tmpfs /tmp, its own /proc and /dev, and
the sample's work folder bound read-write at `/work`, which is also HOME. Nothing else of
the host is visible: no /root, no /home, no /run. The command runs under `prlimit` (see
`limits.py`) and a wall clock; on timeout the bwrap process group is killed, and
`--die-with-parent` with the PID namespace takes every process the command started down.
With `BwrapConfig.grace_seconds` set, coreutils' `timeout` inside the sandbox sends SIGTERM
at the wall clock and SIGKILL a grace period later; the host's kill stays as the backstop.
`BwrapConfig.ro_binds` shows extra host paths read-only (a Python environment, say).

When the harness runs as root, bwrap runs as `nobody` (65534): RLIMIT_NPROC never binds
real uid 0, and an unprivileged bwrap counts processes per user namespace, so the limit
is per command rather than shared by every sandbox of the same user.

Each command also runs under the seccomp filter of `seccomp.py` (no ptrace, mounts, new
namespaces, keyrings, BPF, perf events, ...), and each sample gets a cgroup (`cgroup.py`)
where the host allows one, so that memory and processes are bounded for all its commands
together. A command joins that cgroup as root, then drops to `nobody` with util-linux's
`setpriv`, before bwrap starts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from typing_extensions import override

from harness.errors import HarnessUsageError
from harness.sandbox.beneath import read_beneath, write_beneath
from harness.sandbox.cgroup import SampleCgroup
from harness.sandbox.config import BwrapConfig
from harness.sandbox.limits import (
    CGROUP_OOM_TEXT,
    WORK_QUOTA_TEXT,
    limit_reason,
    prlimit_argv,
    wall_clock_text,
)
from harness.sandbox.output import read_head_tail, read_pipe, record_cut, record_wall_clock
from harness.sandbox.seccomp import seccomp_fd, seccomp_program
from harness.sandbox.workfs import WorkImage, quota_walk, remove_tree, workfs_support

logger = logging.getLogger(__name__)

WORK_DIR = "/work"
"""Where the sample's work folder appears inside the sandbox."""

_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
_NOBODY = 65534
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_BACKSTOP_SECONDS = 10  # with a grace period: the host kills this long after `timeout` should


def _host_ids() -> tuple[int, int] | None:
    """The uid and gid bwrap runs as, or None to keep the caller's."""
    return (_NOBODY, _NOBODY) if os.geteuid() == 0 else None


def bwrap_argv(
    work: Path,
    config: BwrapConfig,
    cmd: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    seccomp: int | None = None,
) -> list[str]:
    """Return the full command line that runs `cmd` in a sandbox over `work`.

    `seccomp` is a descriptor holding the BPF filter for bwrap to install, or None for none.
    """
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    if seccomp is not None:
        argv += ["--seccomp", str(seccomp)]
    # a user namespace of its own, and none nested inside it: `unshare -Urm` and the mounts it
    # would allow are refused inside the sandbox
    argv += ["--unshare-user", "--disable-userns"]
    if config.network:
        argv += ["--share-net", "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in _TOP_LEVEL:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--size", str(config.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for host, inside in config.ro_binds:
        argv += ["--ro-bind", host, inside]
    # the root bwrap builds is a tmpfs; once every mount point is in it, make it read-only
    argv += ["--bind", str(work), WORK_DIR, "--remount-ro", "/", "--chdir", cwd]
    base = {"PATH": _SYSTEM_PATH, "HOME": WORK_DIR, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    for key, value in {**base, **env}.items():
        argv += ["--setenv", key, value]
    return argv + ["--", *prlimit_argv(config), *cmd]


@functools.cache
def bwrap_available() -> str | None:
    """Return None when a bwrap sandbox can run here, else a one-line reason why not."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed; run scripts/install-debian-packages.sh bwrap=bubblewrap"
    if shutil.which("prlimit") is None:
        return "prlimit is missing; install util-linux"
    with tempfile.TemporaryDirectory(prefix="harness-bwrap-check-") as work:
        ids = _host_ids()
        if ids is not None:
            os.chown(work, *ids)
        argv = bwrap_argv(Path(work), BwrapConfig(), ["true"], cwd=WORK_DIR, env={})
        kwargs: dict[str, Any] = {}
        if ids is not None:
            kwargs = {"user": ids[0], "group": ids[1], "extra_groups": []}
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, **kwargs)
        except (OSError, subprocess.TimeoutExpired) as ex:
            return f"bwrap could not be started: {ex}"
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return (
            f"bwrap cannot create its namespaces here ({detail}); unprivileged user "
            "namespaces must be allowed (sysctl kernel.unprivileged_userns_clone=1, or "
            "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu)"
        )
    return None


def _config(config: SandboxEnvironmentConfigType | None) -> BwrapConfig:
    if config is None:
        return BwrapConfig()
    if isinstance(config, BwrapConfig):
        return config
    raise HarnessUsageError(
        f"the bwrap sandbox takes a BwrapConfig, not {type(config).__name__} {config!r}; "
        "pass ('bwrap', BwrapConfig(...)) or plain 'bwrap'"
    )


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill bwrap's process group; --die-with-parent takes the namespace's processes along."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SandboxEnvironment):
    """One sample's bubblewrap sandbox: a host work folder and the config to run in it."""

    def __init__(
        self,
        work_dir: Path,
        config: BwrapConfig,
        cgroup: SampleCgroup | None = None,
        image: WorkImage | None = None,
    ) -> None:
        super().__init__()
        self.work_dir = work_dir
        self.config = config
        self.cgroup = cgroup
        self.image = image  # the work folder's own filesystem, where the host allows one

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        checked = _config(config)
        reason = bwrap_available()
        if reason is not None:
            raise HarnessUsageError(f"the bwrap sandbox cannot run: {reason}")
        if checked.seccomp and isinstance(why := seccomp_program(), str):
            raise HarnessUsageError(f"the bwrap sandbox cannot run its seccomp filter: {why}")

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        checked = _config(config)
        work = Path(tempfile.mkdtemp(prefix="harness-bwrap-"))
        ids = _host_ids()
        if ids is not None:
            os.chown(work, *ids)
        image = None
        if checked.filesystem_limit and not workfs_support():
            made = await asyncio.to_thread(
                WorkImage.create, work, checked.work_mb, checked.work_files, ids
            )
            if isinstance(made, str):
                logger.warning("bwrap: no image for the work folder (%s); walking a quota", made)
            else:
                image = made
        cgroup = None
        if checked.cgroup:
            memory = checked.total_memory_mb * 1024 * 1024
            cgroup = SampleCgroup.create(memory, checked.max_processes, checked.cpus)
        # inspect copies the sample's `files` in afterwards, through write_file
        return {"default": cls(work, checked, cgroup, image)}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            box = environment.as_type(BwrapSandboxEnvironment)
            if box.cgroup is not None:
                await asyncio.to_thread(box.cgroup.remove)
            if box.image is not None:
                await asyncio.to_thread(box.image.remove)
            try:  # any depth: `shutil.rmtree` hits Python's recursion limit near 1,000 levels
                await asyncio.to_thread(remove_tree, box.work_dir)
            except OSError as ex:
                logger.warning("bwrap: the work folder was left behind: %s", ex)

    @override
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BwrapConfig:
        return BwrapConfig(**config)

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        """Run `cmd` in a fresh sandbox over the work folder; see the module docstring.

        `timeout_retry` is ignored: a timed-out command is not rerun. `user` must be None,
        since everything runs as one unprivileged user.

        Raises:
            SandboxUserUnsupportedError: If `user` is given.
            TimeoutError: If the command runs past `timeout` (or the config's), after the
                sandbox and every process in it have been killed.

        """
        if user is not None:
            raise SandboxUserUnsupportedError(f"the bwrap sandbox cannot run as {user!r}")
        inner_cwd = str(PurePosixPath(WORK_DIR) / (cwd or "."))
        seconds = self.config.timeout if timeout is None else timeout
        grace = self.config.grace_seconds
        backstop = seconds
        shown = cmd[:1]
        if grace is not None:
            # TERM at the wall clock, KILL `grace` s later, from inside; the host kills later
            cmd = ["timeout", "--signal=TERM", f"--kill-after={grace}", str(seconds), *cmd]
            backstop = seconds + grace + _BACKSTOP_SECONDS
        data = input.encode() if isinstance(input, str) else input
        filter_fd = None
        if self.config.seccomp:
            program = seccomp_program()
            if isinstance(program, str):
                raise HarnessUsageError(
                    f"the bwrap sandbox cannot run its seccomp filter: {program}"
                )
            filter_fd = seccomp_fd(program)
        argv = bwrap_argv(
            self.work_dir, self.config, cmd, cwd=inner_cwd, env=env or {}, seccomp=filter_fd
        )
        ids = _host_ids()
        started = time.monotonic()
        kwargs: dict[str, Any] = {}
        if self.cgroup is not None:
            # join the cgroup first (as the harness's user), then drop to nobody
            drop = [] if ids is None else [
                "setpriv", f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups", "--"
            ]  # fmt: skip
            argv = [*self.cgroup.join_argv(), *drop, *argv]
        elif ids is not None:
            kwargs = {"user": ids[0], "group": ids[1], "extra_groups": []}
        ooms = self.cgroup.oom_kills() if self.cgroup is not None else 0
        # stdout and stderr are our own pipes, so that a kill never waits on them (output.py)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                env={"PATH": _SYSTEM_PATH},
                cwd="/",  # else the host's working folder is in /proc/1/environ as PWD
                start_new_session=True,
                pass_fds=() if filter_fd is None else (filter_fd,),
                **kwargs,
            )
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            for fd in (out_w, err_w) if filter_fd is None else (out_w, err_w, filter_fd):
                os.close(fd)
        (out_reader, out_pipe), (err_reader, err_pipe) = [
            await read_pipe(fd) for fd in (out_r, err_r)
        ]
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE

        async def communicate() -> tuple[bytes, bytes, int]:
            if data is not None and process.stdin is not None:
                try:
                    process.stdin.write(data)
                    await process.stdin.drain()
                    process.stdin.close()
                except (BrokenPipeError, ConnectionResetError):
                    pass
            (out, out_cut), (err, err_cut) = await asyncio.gather(
                read_head_tail(out_reader, limit), read_head_tail(err_reader, limit)
            )
            for name, cut in (("stdout", out_cut), ("stderr", err_cut)):
                if cut:
                    record_cut(shown, name, cut)
            return out, err, await process.wait()

        try:
            out, err, code = await asyncio.wait_for(communicate(), backstop)
        except BaseException as ex:  # the timeout, or the sample being cancelled
            _kill(process)
            if process.stdin is not None:
                process.stdin.close()  # a write the command never read must not hold the wait
            await asyncio.shield(process.wait())
            if isinstance(ex, TimeoutError):
                logger.warning("bwrap: %s timed out after %s s (timeout)", shown, backstop)
                raise TimeoutError(f"bwrap: command timed out after {backstop} s") from None
            raise
        finally:
            out_pipe.close()
            err_pipe.close()
        stderr = err.decode("utf-8", errors="replace")
        elapsed = time.monotonic() - started
        if grace is not None and code in (124, 137) and elapsed >= seconds:
            # `timeout` fired: SIGTERM at the wall clock, and SIGKILL after the grace if 137
            stderr += "\n" + wall_clock_text(seconds, grace if code == 137 else None) + "\n"
            record_wall_clock(shown, seconds, grace, code)
        if self.cgroup is not None and self.cgroup.oom_kills() > ooms:
            stderr += f"\n{CGROUP_OOM_TEXT} ({self.config.total_memory_mb} MiB)]\n"
            code = code or 1
        if self.image is not None:
            over = await asyncio.to_thread(self.image.is_full)
        else:
            over = await asyncio.to_thread(
                quota_walk, self.work_dir, self.config.work_mb * 1024 * 1024, self.config.work_files
            )
        if over:
            stderr += f"\n{WORK_QUOTA_TEXT} ({over})]\n"
            code = code or 1
        result = ExecResult(
            success=code == 0,
            returncode=code,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=stderr,
        )
        reason = limit_reason(result)
        if reason is not None:
            logger.warning("bwrap: %s ended with exit code %d (%s)", shown, code, reason)
        return result

    def _relative(self, file: str) -> PurePosixPath:
        """A sandbox path as a path relative to the work folder; one outside it is refused."""
        path = PurePosixPath(file)
        if path.is_absolute():
            try:
                path = path.relative_to(WORK_DIR)
            except ValueError:
                raise PermissionError(f"{file!r} is outside the sandbox's {WORK_DIR}") from None
        return path

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        """Write through `harness.sandbox.beneath`: no symlink, FIFO or race redirects it."""
        if isinstance(contents, str):
            contents = contents.encode("utf-8")
        relative = self._relative(file)
        await asyncio.to_thread(write_beneath, self.work_dir, relative, contents, _host_ids())

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """Read through `harness.sandbox.beneath`, off the event loop; never blocks on a FIFO."""
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        try:
            data = await asyncio.to_thread(read_beneath, self.work_dir, self._relative(file), limit)
        except OverflowError:
            raise OutputLimitExceededError(
                SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None
            ) from None
        if text:
            return data.decode("utf-8")  # as written: no newline translation
        return data
