"""The configuration of the `bwrap` sandbox: its limits, its timeout, and its network."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, field_validator

# where a read-only bind may not land: the sandbox's own mounts and its read-only system folders
_RESERVED = ("/work", "/tmp", "/proc", "/dev", "/usr", "/etc")


class BwrapConfig(BaseModel):
    """Limits and options for one `bwrap` sandbox, passed as `("bwrap", BwrapConfig(...))`.

    It is a frozen pydantic model rather than a dataclass because inspect-ai types a sandbox
    config as `BaseModel | str` and writes it into the eval log; `config_deserialize` reads
    it back. The rlimits apply to each process of one `exec` call; `total_memory_mb`,
    `max_processes` (again), `tmp_mb` and the work quota bound the sample as a whole.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: int = Field(default=600, gt=0)
    """Wall-clock seconds for a command when the caller passes no `timeout`."""

    cpu_seconds: int = Field(default=600, gt=0)
    """RLIMIT_CPU soft limit (SIGXCPU); the hard limit, one second later, is SIGKILL."""

    memory_mb: int = Field(default=4096, gt=0)
    """RLIMIT_AS in MiB: address space, not resident memory, so runtimes that reserve large
    virtual ranges up front (Go, the JVM, some CUDA stacks) need a higher value."""

    max_processes: int = Field(default=256, gt=0)
    """RLIMIT_NPROC, counted inside the sandbox's own user namespace (see `bwrap.py`); and,
    where the sample gets a cgroup, `pids.max` for all its commands together."""

    total_memory_mb: int = Field(default=4096, gt=0)
    """Memory in MiB for the whole sample (every command and process, and /tmp, together),
    set as a cgroup limit where the host lets the harness make one (`harness doctor`); past
    it the kernel kills a process and the command fails with "limit: memory"."""

    max_file_mb: int = Field(default=1024, gt=0)
    """RLIMIT_FSIZE in MiB: the largest file one process may write (SIGXFSZ beyond it)."""

    tmp_mb: int = Field(default=512, gt=0)
    """Size of the sandbox's /tmp in MiB: a tmpfs in host memory, so it is bounded."""

    work_mb: int = Field(default=4096, gt=0)
    """Quota on the work folder in MiB, all files together. Where the host allows it
    (`filesystem_limit`, `harness doctor`), the work folder is a filesystem of this size, so
    no write can pass it even while a command runs; elsewhere it is checked after each
    command. A command that fills it fails with the reason "limit: work folder"."""

    work_files: int = Field(default=200_000, gt=0)
    """Quota on the number of files and folders in the work folder, held the same way (on an
    image, the inodes are also capped at one for each 2 KiB of `work_mb`)."""

    filesystem_limit: bool = True
    """Make the work folder a loop-mounted image of `work_mb` MiB where the host allows it
    (`harness.sandbox.workfs`); off, or where it cannot be had, the quota is walked after
    each command instead."""

    cpus: float | None = Field(default=1.0, gt=0)
    """CPU quota for the whole sample, in CPUs (0.5: half of one core's time; 2: two cores'),
    set in the sample's cgroup where the host has the cpu controller (`harness doctor`);
    None for none. Only the wall clock and `cpu_seconds` bound CPU where it cannot be set."""

    network: bool = False
    """Share the host's network, for an install phase only; off by default."""

    seccomp: bool = True
    """Run under the seccomp filter of `seccomp.py`; off only to measure what it costs."""

    cgroup: bool = True
    """Give the sample a cgroup where the host allows one; off only to measure what it costs."""

    ro_binds: tuple[tuple[str, str], ...] = ()
    """Extra host folders or files shown read-only, as `(host path, sandbox path)` pairs, for
    example a Python environment the sandboxed code may import from. Both paths are absolute;
    the sandbox path may not be `/` or lie under /work, /tmp, /proc, /dev, /usr or /etc. The
    host path must be reachable by the user bwrap runs as (`nobody` when the harness is root):
    a folder under a 0700 home is not, and the command then fails with bwrap's message."""

    grace_seconds: int | None = Field(default=None, ge=0)
    """None (the default): at the wall clock the command's processes are killed (SIGKILL) and
    `exec` raises `TimeoutError`. A number: at the wall clock the command gets SIGTERM, and
    SIGKILL that many seconds later if it is still running; `exec` then returns exit code
    124 (it ended after SIGTERM) or 137 (it needed SIGKILL), with a line on stderr saying
    when each signal was sent (`limits.wall_clock_of` reads it back)."""

    @field_validator("ro_binds")
    @classmethod
    def _check_binds(cls, binds: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        for host, inside in binds:
            if not (host.startswith("/") and inside.startswith("/")):
                raise ValueError(f"ro_binds paths must be absolute, got ({host!r}, {inside!r})")
            target = PurePosixPath(inside)
            if target == PurePosixPath("/") or any(
                target.is_relative_to(reserved) for reserved in _RESERVED
            ):
                raise ValueError(
                    f"ro_binds: {inside!r} would cover a mount of the sandbox; choose a path "
                    f"outside /, {', '.join(_RESERVED)} (for example /opt/NAME)"
                )
        return binds
