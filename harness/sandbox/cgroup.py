"""A cgroup per sandboxed sample: memory and processes bounded for all its commands together.

prlimit bounds each process; a cgroup bounds their sum (and the sandbox's tmpfs `/tmp`, whose
pages are charged to it). One is made under the harness's own cgroup, so every limit above
the harness still applies, for each sample that `harness.sandbox.bwrap` starts, and every
command of the sample joins it before bwrap starts (see `join_argv`): nothing it forks can
be outside. On cleanup what is left in it is killed and the cgroup removed.

Where it can be made:

- **cgroup v2** (the unified hierarchy at /sys/fs/cgroup) when the harness's cgroup is
  writable and has the memory and pids controllers enabled for its children (a delegated
  subtree, e.g. a systemd scope with `Delegate=yes`): `memory.max`, `memory.swap.max = 0`,
  `pids.max`, and `cpu.max` where the cpu controller can be enabled too.
- **cgroup v1** when the memory and pids hierarchies are mounted and writable (as root on a
  host without v2): `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`, so swap is no
  way out), `pids.max`, and `cpu.cfs_quota_us` where the cpu hierarchy is writable too. The
  issue asked for v2; v1 is used only where v2 is not there.

The CPU quota (`BwrapConfig.cpus`) is the CFS bandwidth limit: the sample's processes together
get `cpus` CPUs' worth of time in each 100 ms period, however many cores they spread over.
`cgroup_support()` says which version, whether the quota holds, or why not, for `harness doctor`.
"""

from __future__ import annotations

import functools
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_CPU_PERIOD_US = 100_000  # the CFS period: the quota is this many microseconds times `cpus`

# Run as the first program of each command: write its own pid into each `cgroup.procs` given
# before `--`, then exec the rest. Joining before bwrap starts means nothing escapes it.
_JOIN = (
    'while [ "$1" != -- ]; do echo $$ >"$1" || '
    '{ echo "harness: could not join the sandbox cgroup $1" >&2; exit 125; }; shift; done; '
    'shift; exec "$@"'
)


@dataclass(frozen=True)
class CgroupSupport:
    """Whether a per-sample cgroup can be made here: its version and parents, or why not."""

    version: str  # "v2", "v1", or "" when none can be made
    parents: tuple[Path, ...]  # v2: one folder; v1: the memory, pids (and cpu) folders
    reason: str  # why not ("" when one can); or, with a version, why there is no CPU quota
    cpu: bool = False  # whether a CPU quota can be set in the sample's cgroup


def _own_paths() -> dict[str, str]:
    """The cgroup of this process per hierarchy: {"": v2 path, "memory": ..., "pids": ...}."""
    out = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _sweep_stale(parent: Path) -> None:
    """Remove the empty sample cgroups of harness processes that are gone (a crash, a kill -9)."""
    for folder in parent.glob("harness-sandbox-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                folder.rmdir()
            except OSError:  # processes still in it, or not ours to remove: leave it
                pass


def _probe(parent: Path) -> str:
    """Why a child cgroup cannot be made under `parent` ("" when one can)."""
    probe = parent / f"harness-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as ex:
        return f"cannot create a cgroup under {parent} ({ex.strerror})"
    _sweep_stale(parent)
    return ""


def _v2_support(own: dict[str, str]) -> CgroupSupport:
    parent = CGROUP_ROOT / own.get("", "/").lstrip("/")
    enabled = parent / "cgroup.subtree_control"
    try:
        active = set(enabled.read_text().split())
    except OSError as ex:
        return CgroupSupport("", (), f"cgroup v2: cannot read {enabled} ({ex.strerror})")
    if not {"memory", "pids"} <= active:
        try:
            enabled.write_text("+memory +pids")
        except OSError as ex:
            return CgroupSupport(
                "",
                (),
                f"cgroup v2: the memory and pids controllers are not delegated to {parent} "
                f"and cannot be enabled there ({ex.strerror}); run the harness in a delegated "
                "cgroup (systemd-run --user --scope -p Delegate=yes ...)",
            )
    why = _probe(parent)
    if why:
        return CgroupSupport("", (), f"v2: {why}")
    if "cpu" not in set(enabled.read_text().split()):
        try:
            enabled.write_text("+cpu")
        except OSError as ex:
            return CgroupSupport(
                "v2", (parent,), f"cgroup v2: the cpu controller cannot be enabled ({ex.strerror})"
            )
    return CgroupSupport("v2", (parent,), "", cpu=True)


def _v1_support(own: dict[str, str]) -> CgroupSupport:
    parents = []
    for name in ("memory", "pids"):
        mount = CGROUP_ROOT / name
        if name not in own or not (mount / "cgroup.procs").is_file():
            return CgroupSupport("", (), f"cgroup v1: the {name} hierarchy is not mounted")
        parent = mount / own[name].lstrip("/")
        if why := _probe(parent):
            return CgroupSupport("", (), f"cgroup v1: {why}")
        parents.append(parent)
    mount = CGROUP_ROOT / "cpu"
    if "cpu" not in own or not (mount / "cgroup.procs").is_file():
        return CgroupSupport("v1", tuple(parents), "cgroup v1: the cpu hierarchy is not mounted")
    cpu = mount / own["cpu"].lstrip("/")
    if why := _probe(cpu):
        return CgroupSupport("v1", tuple(parents), f"cgroup v1: {why}")
    return CgroupSupport("v1", (*parents, cpu), "", cpu=True)


@functools.cache
def cgroup_support() -> CgroupSupport:
    """Whether each sample can get a cgroup here, which version, and why not if not."""
    try:
        own = _own_paths()
    except (OSError, ValueError) as ex:
        return CgroupSupport("", (), f"/proc/self/cgroup cannot be read ({ex})")
    if (CGROUP_ROOT / "cgroup.controllers").is_file():
        return _v2_support(own)
    if (CGROUP_ROOT / "memory").is_dir():
        return _v1_support(own)
    return CgroupSupport("", (), "no cgroup hierarchy is mounted at /sys/fs/cgroup")


@dataclass(frozen=True)
class SampleCgroup:
    """The cgroup (one folder per hierarchy) that one sample's commands run in."""

    version: str
    folders: tuple[Path, ...]  # v2: one; v1: memory, pids (and cpu)
    cpus: float | None = None  # the CPU quota set, in CPUs; None where none is

    @classmethod
    def create(
        cls, memory_bytes: int, max_pids: int, cpus: float | None = None
    ) -> SampleCgroup | None:
        """Make a cgroup with these limits, or return None where `cgroup_support` says no.

        `cpus` is the CPU quota in CPUs (None for none); it is set where `cgroup_support().cpu`.
        """
        support = cgroup_support()
        if not support.version:
            return None
        name = f"harness-sandbox-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        folders = tuple(parent / name for parent in support.parents)
        quota = None
        if cpus is not None and support.cpu:
            quota = max(1000, round(cpus * _CPU_PERIOD_US))  # the kernel's floor is 1 ms
        made = []
        try:
            for folder in folders:
                folder.mkdir()
                made.append(folder)
            if support.version == "v2":
                (folder,) = folders
                (folder / "memory.max").write_text(str(memory_bytes))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")
                (folder / "pids.max").write_text(str(max_pids))
                if quota is not None:
                    (folder / "cpu.max").write_text(f"{quota} {_CPU_PERIOD_US}")
            else:
                memory, pids, *cpu = folders
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (memory / "memory.memsw.limit_in_bytes").exists():
                    (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (pids / "pids.max").write_text(str(max_pids))
                if quota is not None and cpu:
                    (cpu[0] / "cpu.cfs_period_us").write_text(str(_CPU_PERIOD_US))
                    (cpu[0] / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError:
            for folder in made:
                folder.rmdir()
            raise
        return cls(support.version, folders, cpus if quota is not None else None)

    def join_argv(self) -> list[str]:
        """The prefix that puts a command into this cgroup before it runs."""
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        return ["/bin/sh", "-c", _JOIN, "sh", *procs, "--"]

    def oom_kills(self) -> int:
        """How many processes the kernel has killed for this cgroup's memory limit so far."""
        events = self.folders[0] / (
            "memory.events" if self.version == "v2" else "memory.oom_control"
        )
        try:
            for line in events.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def cpu_limit(self) -> float | None:
        """The CPU quota the kernel holds for the cgroup, in CPUs; None where there is none."""
        if self.cpus is None:
            return None
        folder = self.folders[-1]
        try:
            if self.version == "v2":
                quota, period = (folder / "cpu.max").read_text().split()
            else:
                quota = (folder / "cpu.cfs_quota_us").read_text().strip()
                period = (folder / "cpu.cfs_period_us").read_text().strip()
            return None if quota in ("max", "-1") else int(quota) / int(period)
        except (OSError, ValueError):
            return None

    def cpu_throttled(self) -> int:
        """How many periods the CPU quota has held the cgroup back so far (0 without one)."""
        if self.cpus is None:
            return 0
        try:
            for line in (self.folders[-1] / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "nr_throttled":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak_memory(self) -> int | None:
        """The most memory the cgroup has held, in bytes, where the kernel reports it."""
        name = "memory.peak" if self.version == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.folders[0] / name).read_text())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Kill whatever is still in the cgroup, then remove it (best effort, bounded)."""
        for _ in range(50):
            pids = set()
            for folder in self.folders:
                try:
                    pids |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
                except (OSError, ValueError):
                    continue
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                for folder in self.folders:
                    if folder.exists():
                        folder.rmdir()
                return
            except OSError:
                time.sleep(0.02)
