"""The harness's Python environment, shown read-only inside the bwrap sandbox.

The agent trains with torch, transformers and peft, so the sandbox gets the harness's virtual
environment at `/opt/harness-venv` and the interpreter it links to at that interpreter's own
host path (the venv's `bin/python` is an absolute symlink to it, and the interpreter finds
its shared library there). Both are `BwrapConfig.ro_binds`, so nothing of them is writable.

bwrap runs as `nobody` when the harness runs as root, and `nobody` cannot pass a 0700 home:
a pyenv interpreter under /root is then staged once, as a copy of what the interpreter needs
(the binary, its shared library and the standard library without site-packages, tests and
GUI modules; about 90 MB), in a world-readable folder of the system's temporary folder, and
that copy is bound at the original path. The venv itself must be reachable; if it is not,
the error says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessUsageError

VENV_IN_SANDBOX = "/opt/harness-venv"
_SKIP = {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"}


@dataclass(frozen=True)
class SandboxPython:
    """How the sandbox sees the harness's Python."""

    ro_binds: tuple[tuple[str, str], ...]  # (host path, sandbox path) pairs for BwrapConfig
    python: str  # the interpreter's path inside the sandbox
    bin_dir: str  # the folder to put first on PATH inside the sandbox
    staged: str | None  # the staged copy of the interpreter, when one was needed


def reachable_by_sandbox(path: Path) -> bool:
    """Whether the user bwrap runs as can read `path` (every folder above it searchable)."""
    if os.geteuid() != 0:
        return os.access(path, os.R_OK | os.X_OK)
    current = Path(path).resolve()
    for folder in [current, *current.parents]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return bool(current.stat().st_mode & stat.S_IROTH)


def _copy_tree(source: Path, target: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == source
        return {n for n in names if (top and n in _SKIP) or n.startswith("config-")}

    shutil.copytree(source, target, symlinks=True, ignore=ignore)


def stage_interpreter(home: Path) -> Path:
    """A world-readable copy of what the interpreter at `home` needs; made once, reused."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    binary = Path(sys._base_executable).resolve()  # the real interpreter file
    key = f"{home}|{binary}|{binary.stat().st_mtime_ns}|{sys.version}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"harness-python-{digest}"
    if (target / ".complete").exists():
        return target
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "bin").mkdir(parents=True)
    shutil.copy2(binary, partial / "bin" / binary.name)
    if binary.name != version:
        os.symlink(binary.name, partial / "bin" / version)
    libdir = Path(sysconfig.get_config_var("LIBDIR") or home / "lib")
    (partial / "lib").mkdir()
    for lib in libdir.glob("libpython*.so*"):
        shutil.copy2(lib, partial / "lib" / lib.name, follow_symlinks=False)
    _copy_tree(libdir / version, partial / "lib" / version)
    for folder, dirs, files in os.walk(partial):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
    os.chmod(partial, 0o755)
    (partial / ".complete").write_text("ok\n")
    if target.exists():  # another process finished first
        shutil.rmtree(partial, ignore_errors=True)
    else:
        partial.replace(target)
    return target


def sandbox_python() -> SandboxPython:
    """The read-only binds that make the harness's Python usable inside the sandbox.

    Raises:
        HarnessUsageError: The harness's virtual environment is not readable by the user the
            sandbox runs as.

    """
    home = Path(sys.base_prefix)
    binds: list[tuple[str, str]] = []
    staged = None
    if reachable_by_sandbox(home):
        binds.append((str(home), str(home)))
    else:
        staged = stage_interpreter(home)
        binds.append((str(staged), str(home)))
    if sys.prefix == sys.base_prefix:  # no venv: the interpreter's own site-packages
        if staged is not None:
            raise HarnessUsageError(
                f"the sandbox cannot read the Python at {home} (a folder above it is not "
                "searchable by others); run the harness from a virtual environment outside it"
            )
        bin_dir = str(home / "bin")
        return SandboxPython(tuple(binds), str(Path(sys.executable)), bin_dir, None)
    venv = Path(sys.prefix)
    if not reachable_by_sandbox(venv):
        raise HarnessUsageError(
            f"the sandbox cannot read the harness's virtual environment {venv}; make it and "
            "the folders above it readable by others (chmod o+rx), or move it"
        )
    binds.append((str(venv), VENV_IN_SANDBOX))
    python = f"{VENV_IN_SANDBOX}/bin/python"
    return SandboxPython(tuple(binds), python, f"{VENV_IN_SANDBOX}/bin", staged and str(staged))
