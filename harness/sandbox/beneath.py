"""Host-side file operations inside a sandbox's work folder that sandboxed code cannot redirect.

Sandboxed code controls the work folder: it can plant a symlink, swap a folder for a symlink
between a check and an open, or leave a FIFO where a file is expected. So every path component
is opened relative to its parent's descriptor with `O_NOFOLLOW` (never by a path resolved
earlier), the last one with `O_NONBLOCK`, and the open descriptor must be a regular file
(`fstat`), which is then read, written and `fchown`ed through that descriptor. A symlink or a
special file anywhere on the way is refused with `PermissionError`; nothing blocks.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _parts(relative: PurePosixPath) -> list[str]:
    parts = [p for p in relative.parts if p not in ("", ".")]
    if not parts or any(p in ("..", "/") for p in parts):
        raise PermissionError(f"{relative}: not a file path beneath the work folder")
    return parts


def _open_dirs(root: Path, parts: list[str], create: bool, ids: tuple[int, int] | None) -> int:
    """A descriptor of the folder holding the last part, opened component by component."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                if ids is not None:
                    os.fchown(child, *ids)
            except OSError as ex:
                if ex.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PermissionError(f"{name}: a link or not a folder") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _regular(fd: int, name: str) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{name}: a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise PermissionError(f"{name}: not a regular file")
    return info


def _open_file(parent: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=parent)
    except OSError as ex:
        if ex.errno == errno.EISDIR:
            raise IsADirectoryError(f"{name}: a folder, not a file") from None
        if ex.errno in (errno.ELOOP, errno.ENXIO):
            raise PermissionError(f"{name}: a link or a FIFO, not a file") from None
        raise


def read_beneath(root: Path, relative: PurePosixPath, max_size: int) -> bytes:
    """The bytes of a regular file beneath `root`; `OverflowError` when over `max_size`."""
    parts = _parts(relative)
    parent = _open_dirs(root, parts, create=False, ids=None)
    try:
        fd = _open_file(parent, parts[-1], os.O_RDONLY)
    finally:
        os.close(parent)
    try:
        info = _regular(fd, parts[-1])
        if info.st_size > max_size:
            raise OverflowError(f"{relative}: {info.st_size} bytes, over {max_size}")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_beneath(
    root: Path, relative: PurePosixPath, data: bytes, ids: tuple[int, int] | None
) -> None:
    """Write a regular file beneath `root` (folders made as needed), owned by `ids`."""
    parts = _parts(relative)
    parent = _open_dirs(root, parts, create=True, ids=ids)
    try:
        fd = _open_file(parent, parts[-1], os.O_WRONLY | os.O_CREAT)
    finally:
        os.close(parent)
    try:
        _regular(fd, parts[-1])  # before truncating: a device or FIFO is never written
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if ids is not None:
            os.fchown(fd, *ids)
    finally:
        os.close(fd)
