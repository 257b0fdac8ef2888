"""JSON and JSONL read with bounded memory: size and nesting depth checked before parsing.

Python's `json` recurses once per level of nesting, and some parsers grow their memory with the
square of the depth: 100 KB of `[` took one reader to 24 GB. So every input a user or another
program hands the harness is checked first:

- its size in bytes (`max_bytes`), from `fstat`, before a byte is read;
- its nesting depth (`max_depth`), by a scan that skips strings and counts brackets in C
  (`bytes.translate` and numpy), in memory linear in the size;
- its encoding (UTF-8), with the line and byte named when it is not;
- and only then `json.loads`.

A FIFO or a device is refused without being opened for reading in a way that blocks.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MAX_DEPTH = 256  # inspect's logs nest about 20 deep; no input of ours needs more
MAX_FILE_BYTES = 4 << 30  # a JSON log or data file
MAX_LINE_BYTES = 256 << 20  # one JSONL line

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_KEEP = b"[]{}"
_DELETE = bytes(b for b in range(256) if b not in _KEEP)
_TO_STEPS = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


class JsonInputError(ValueError):
    """An input that is not JSON we will parse: too big, too deep, not UTF-8, or malformed."""


def depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in `data`, brackets in strings not counted."""
    brackets = _STRING.sub(b"", data).translate(None, _DELETE)
    if not brackets:
        return 0
    steps = np.frombuffer(brackets.translate(_TO_STEPS), dtype=np.int8).astype(np.int32)
    return int(np.cumsum(steps).max())


def loads(data: bytes | str, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON after checking its depth and encoding.

    Raises:
        JsonInputError: deeper than `max_depth`, not UTF-8, or not valid JSON, with `where`
            (a file, or a file and line) named.

    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    found = depth(raw)
    if found > max_depth:
        raise JsonInputError(f"{where}: JSON nested {found} deep, over the limit of {max_depth}")
    try:
        text = raw.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as ex:
        raise JsonInputError(f"{where}: not UTF-8 (byte {ex.start}); save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as ex:
        raise JsonInputError(f"{where}: not valid JSON ({ex.msg})") from None
    except RecursionError:  # the scan above should prevent it; never a traceback
        raise JsonInputError(f"{where}: JSON nested too deep") from None


def _open_regular(path: Path, max_bytes: int) -> int:
    """A descriptor of a regular file no bigger than `max_bytes`; never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as ex:
        raise JsonInputError(f"{path}: cannot be read ({ex.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise JsonInputError(f"{path}: not a regular file")
    if info.st_size > max_bytes:
        os.close(fd)
        raise JsonInputError(f"{path}: {info.st_size} bytes, over the limit of {max_bytes}")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, refused above `max_bytes` before reading."""
    fd = _open_regular(Path(path), max_bytes)
    with os.fdopen(fd, "rb") as f:  # its size was checked by fstat
        return f.read()


def load_file(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """A JSON file, size and depth checked first."""
    return loads(read_bytes(path, max_bytes), str(path))


def iter_lines(
    path: str | Path, max_line: int = MAX_LINE_BYTES, max_bytes: int = MAX_FILE_BYTES
) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL file, each line checked first.

    Raises:
        JsonInputError: the file is not a regular file or too big, or a line is too long, not
            UTF-8, too deep or not JSON; the line is named by number.

    """
    fd = _open_regular(Path(path), max_bytes)
    with os.fdopen(fd, "rb") as f:
        for number, line in enumerate(iter(lambda: f.readline(max_line + 1), b""), start=1):
            if len(line) > max_line:
                raise JsonInputError(f"{path} line {number}: longer than {max_line} bytes")
            if not line.strip():
                continue
            yield number, loads(line, f"{path} line {number}")
