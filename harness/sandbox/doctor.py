"""Which sandboxes work on this machine, and why the others don't (`harness doctor`).

- `bwrap`: works when bubblewrap and prlimit are installed and bwrap can create its namespaces
  (`bwrap_available` runs `true` in one).
- `docker`: works when the docker client is installed and `docker info` reaches a running engine;
  inspect-ai drives it.
- `local`: always runs, with no isolation; never chosen by default for model-written code.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from harness.errors import HarnessUsageError
from harness.sandbox.bwrap import bwrap_available
from harness.sandbox.cgroup import cgroup_support
from harness.sandbox.seccomp import seccomp_filter
from harness.sandbox.workfs import workfs_support


@dataclass(frozen=True)
class SandboxStatus:
    """One sandbox kind on this machine."""

    name: str  # what inspect's `sandbox=` takes
    works: bool
    detail: str  # why not, or what it gives


def docker_available() -> str | None:
    """Return None when a docker engine answers here, else a one-line reason why not."""
    if shutil.which("docker") is None:
        return "the docker client is not installed"
    try:
        done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, text=True, timeout=20)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"`docker info` did not answer: {ex}"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
        return f"no docker engine runs here ({lines[-1].strip()})"
    return None


def sandbox_statuses() -> list[SandboxStatus]:
    """The status of every sandbox kind, bwrap first."""
    out = []
    why = bwrap_available()
    out.append(SandboxStatus("bwrap", why is None, why or
                             "isolated: no network, read-only system, own PID namespace, "
                             "no nested user namespaces, limits"))  # fmt: skip
    if why is None:
        out += aggregate_limits()
    why = docker_available()
    out.append(SandboxStatus("docker", why is None, why or "isolated by a docker engine"))
    out.append(SandboxStatus("local", True, "no isolation: never use it for model-written code"))
    return out


def aggregate_limits() -> list[SandboxStatus]:
    """Which limits hold for a sandbox as a whole, and which filter; why not where one doesn't.

    `/tmp` is a sized tmpfs. The work folder is a filesystem of its own size where the host
    allows one (`workfs.py`), else a quota checked after each command. Memory, processes and
    CPU are bounded for the sample where a cgroup (and its cpu controller) can be had
    (`cgroup.py`); memory and processes per process (prlimit) always. The seccomp filter needs
    libseccomp's binding (`seccomp.py`), and names any call it could not filter.
    """
    support = cgroup_support()
    built = seccomp_filter()
    image_why = workfs_support()
    if isinstance(built, str):
        seccomp = SandboxStatus("  seccomp", False, built)
    elif built.unknown:
        seccomp = SandboxStatus(
            "  seccomp",
            False,
            f"libseccomp does not know {', '.join(built.unknown)}: not filtered; "
            "update libseccomp (python3-seccomp)",
        )
    else:
        seccomp = SandboxStatus(
            "  seccomp",
            True,
            "libseccomp filter: no ptrace, pidfd_getfd, mount, unshare/setns, keyctl, bpf, "
            "perf_event_open, io_uring, AF_VSOCK, module or clock calls",
        )
    return [
        SandboxStatus("  /tmp", True, "a tmpfs of tmp_mb MiB (default 512)"),
        SandboxStatus(
            "  /work",
            True,
            "a loop-mounted image of work_mb MiB and work_files inodes: no write passes it, "
            "even while a command runs"
            if not image_why
            else "a quota of work_mb MiB and work_files entries, checked after each command "
            f"only (a command can hold more while it runs): {image_why}",
        ),
        SandboxStatus(
            "  cgroup",
            bool(support.version),
            f"cgroup {support.version}: total_memory_mb and max_processes for each sample, "
            "all its commands together"
            if support.version
            else "memory and processes are limited per process only (prlimit): " + support.reason,
        ),
        SandboxStatus(
            "  cpu",
            support.cpu,
            f"cgroup {support.version} cpu quota: cpus CPUs (default 1) for each sample"
            if support.cpu
            else "no CPU quota; only the wall clock and cpu_seconds per process: "
            + (support.reason or "no cgroup"),
        ),
        seccomp,
    ]


def require_sandbox(name: str) -> None:
    """Raise a one-line usage error when sandbox `name` cannot run here, naming the alternative."""
    if name == "docker" and (why := docker_available()) is not None:
        raise HarnessUsageError(
            f"sandbox docker: {why}; use the bwrap sandbox instead (`harness doctor` says what "
            "works here)"
        )
    if name == "bwrap" and (why := bwrap_available()) is not None:
        raise HarnessUsageError(f"sandbox bwrap: {why}")
    if name not in ("bwrap", "docker", "local"):
        raise HarnessUsageError(f"unknown sandbox {name!r}; sandboxes: bwrap, docker, local")
