"""Where the harness keeps what it makes, and checks of the folders and files a user names."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.errors import HarnessUsageError


def cache_dir() -> Path:
    """The harness cache folder, created if missing.

    `HARNESS_CACHE_DIR` wins; otherwise `$XDG_CACHE_HOME/harness`, falling back to
    `~/.cache/harness`.
    """
    root = os.environ.get("HARNESS_CACHE_DIR")
    if root:
        path, origin = Path(root), "HARNESS_CACHE_DIR"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path, origin = Path(xdg) / "harness", "XDG_CACHE_HOME"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        raise HarnessUsageError(
            f"cache folder '{path}' (from {origin}) cannot be made ({ex.strerror or ex}); "
            f"point {origin} at a writable folder"
        ) from None
    return path


def cached_build(path: Path, marker: str, build: Callable[[Path], None]) -> Path:
    """`path`, a folder in the cache, built by `build(folder)` first if it lacks `marker`.

    One process builds at a time: another that needs the same folder waits on its lock file
    (`.locks/NAME.lock` beside it, empty, kept as Hugging Face's cache keeps its own) and then
    finds it built, so two evals or two test workers starting
    together train a model once, not twice. `build` writes into a private `NAME.partial-PID`
    folder, which must hold `marker` when it returns; the folder is renamed into place, so a
    killed build leaves no half-written `path`.
    """
    import fcntl
    import shutil

    if (path / marker).is_file():
        return path
    locks = path.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{path.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        if (path / marker).is_file():  # another process built it while this one waited
            return path
        if path.exists():  # a build is renamed into place only with its marker: not ours
            raise HarnessUsageError(
                f"cache folder {path} exists without its {marker}: it was not built by the "
                f"harness, or was damaged; move it away to rebuild it"
            )
        tmp = path.with_name(f"{path.name}.partial-{os.getpid()}")
        if tmp.is_symlink() or (tmp.exists() and not tmp.is_dir()):
            raise HarnessUsageError(f"cache path {tmp} is a link or a file, not a build folder "
                                    f"of the harness; move it away")  # fmt: skip
        # a real folder by this name is a build of ours that a killed process (with this
        # process's id) left: this process's private name, under the lock
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            build(tmp)
            if not (tmp / marker).is_file():
                raise RuntimeError(f"building {path.name} wrote no {marker}")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        tmp.replace(path)
    return path


def writable_dir(path: str | os.PathLike[str], what: str) -> Path:
    """`path` as a folder that exists (created if missing) and can be written, else a usage error.

    `what` names the option in the message, for example "--log-dir".
    """
    if not str(path).strip():
        raise HarnessUsageError(f"{what} is empty; name a folder")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise HarnessUsageError(f"{what} '{folder}' is a file, not a folder; name a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        raise HarnessUsageError(
            f"{what} '{folder}' cannot be created ({ex.strerror or ex}); name a writable folder"
        ) from None
    try:  # a real write: root passes os.access checks on folders it still cannot write (/proc)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as ex:
        raise HarnessUsageError(
            f"{what} '{folder}' is not writable ({ex.strerror or ex}); name a writable folder"
        ) from None
    return folder


def writable_file(path: str | os.PathLike[str], what: str) -> Path:
    """`path` as a file that can be written (its folder created), else a usage error."""
    file = Path(path)
    if file.is_dir():
        raise HarnessUsageError(f"{what} '{file}' is a folder; name a file")
    writable_dir(file.parent if str(file.parent) else ".", f"the folder of {what}")
    if file.exists() and not os.access(file, os.W_OK):
        raise HarnessUsageError(f"{what} '{file}' is not writable")
    return file


def port_number(port: int) -> int:
    """A TCP port in 0..65535 (0: any free port), else a usage error."""
    if not 0 <= port <= 65535:
        raise HarnessUsageError(f"--port must be in 0..65535 (0 picks a free port), got {port}")
    return port
