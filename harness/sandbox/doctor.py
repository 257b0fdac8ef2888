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
                             "limits"))  # fmt: skip
    why = docker_available()
    out.append(SandboxStatus("docker", why is None, why or "isolated by a docker engine"))
    out.append(SandboxStatus("local", True, "no isolation: never use it for model-written code"))
    return out


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
