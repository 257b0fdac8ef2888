"""Members of a zip (an `.eval` log) inflated with bounded memory.

A zstd member of 57 KB can inflate to 3 GB, and Python's `zipfile` hands a zstd member's whole
inflated output to the caller in one piece (`zipfile_zstd` decompresses each read without a
bound, and a read of the declared size asks for it all). So members are read here from their
raw bytes, in chunks of at most `CHUNK` inflated bytes, and each is refused once it passes its
limit: `min(ceiling, max(MEMBER_FLOOR, MAX_RATIO * compressed size))`. A log is JSON, which
compresses about 5 to 20 times; a bomb compresses thousands of times, and so stops at the
floor. A whole log read (inspect's reader) is checked first by `check_members`, which inflates
every member and keeps none of it, within a total of `MAX_RATIO` times the file's size.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import BinaryIO

MEMBER_FLOOR = 16 << 20  # any member may inflate to this much, whatever its compressed size
MAX_RATIO = 100  # and beyond it, to this many times its compressed size
TOTAL_FLOOR = 64 << 20  # a whole log may inflate to this much, or MAX_RATIO times its size
CHUNK = 1 << 20  # inflated bytes handed over at once
MAX_WINDOW = 1 << 25  # zstd window a frame may ask for (inspect writes 2 MB windows)
STORED, DEFLATED, ZSTD = 0, 8, 93
_LOCAL = struct.Struct("<4s22xHH")  # a local file header: signature, name and extra lengths


class ZipBombError(ValueError):
    """A member, or a whole zip, that inflates past its limit; or one that cannot be read."""


def member_limit(info: zipfile.ZipInfo, ceiling: int) -> int:
    """The most `info` may inflate to (see the module's docstring)."""
    return min(ceiling, max(MEMBER_FLOOR, MAX_RATIO * info.compress_size))


class _Raw:
    """The compressed bytes of one member, as a file that ends where the member does."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data


def _chunks(raw: _Raw, method: int, where: str) -> Iterator[bytes]:
    """The inflated bytes of a member, at most CHUNK at a time."""
    if method == STORED:
        while data := raw.read(CHUNK):
            yield data
    elif method == DEFLATED:
        inflate = zlib.decompressobj(-15)
        while data := raw.read(1 << 16):
            while data:
                yield inflate.decompress(data, CHUNK)
                data = inflate.unconsumed_tail
        yield inflate.flush()
    elif method == ZSTD:
        yield from _zstd_chunks(raw, where)
    else:
        raise ZipBombError(f"{where}: compression method {method} is not read")


def _zstd_chunks(raw: _Raw, where: str) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:  # Python 3.14+: zipfile's own zstd
        from compression import zstd  # type: ignore[import-not-found]

        inflate = zstd.ZstdDecompressor()
        while data := raw.read(1 << 16):
            while True:
                yield inflate.decompress(data, CHUNK)
                data = b""
                if inflate.needs_input or inflate.eof:
                    break
        return
    reader = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
        raw, read_size=1 << 16, read_across_frames=True, closefd=False
    )
    try:
        while data := reader.read(CHUNK):
            yield data
    except zstandard.ZstdError as ex:
        raise ZipBombError(f"{where}: not valid zstd ({ex})") from None


def iter_member(path: str, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The inflated bytes of one member, refused once past `limit` or if damaged.

    Raises:
        ZipBombError: the member declares or inflates to more than `limit`, is encrypted, has
            another size or CRC than the zip says, or uses a compression not read here.

    """
    where = info.filename
    if info.file_size > limit:
        raise ZipBombError(f"{where} inflates to {info.file_size} bytes, over {limit}")
    if info.flag_bits & 1:
        raise ZipBombError(f"{where} is encrypted")
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(_LOCAL.size)
        if len(head) < _LOCAL.size or head[:4] != b"PK\x03\x04":
            raise ZipBombError(f"{where}: no local header where the zip says")
        _, name_len, extra_len = _LOCAL.unpack(head)
        f.seek(info.header_offset + _LOCAL.size + name_len + extra_len)
        total, crc = 0, 0
        for data in _chunks(_Raw(f, info.compress_size), info.compress_type, where):
            total += len(data)
            if total > limit:
                raise ZipBombError(f"{where} inflates to more than {limit} bytes "
                                   f"(from {info.compress_size} compressed)")  # fmt: skip
            if total > info.file_size:  # zipfile would cut it there; a lying size is damage
                raise ZipBombError(f"{where} inflates to more than the {info.file_size} "
                                   "bytes the zip declares")  # fmt: skip
            crc = zlib.crc32(data, crc)
            yield data
    if total != info.file_size or crc != info.CRC:
        raise ZipBombError(f"{where}: damaged (its size or CRC is not what the zip says)")


def read_member(path: str, z: zipfile.ZipFile, name: str, ceiling: int) -> bytes:
    """One member's inflated bytes, within `member_limit(info, ceiling)`.

    Raises:
        KeyError: the zip has no such member.
        ZipBombError: see `iter_member`.

    """
    info = z.getinfo(name)
    return b"".join(iter_member(path, info, member_limit(info, ceiling)))


def check_members(path: str, ceiling: int = 1 << 30) -> None:
    """Inflate every member of a zip, keeping none, before another reader reads it whole.

    Raises:
        ZipBombError: a member inflates past its limit, or all of them past the zip's total
            (`max(TOTAL_FLOOR, MAX_RATIO * file size)`); or a member is damaged.
        zipfile.BadZipFile: not a zip.

    """
    budget = max(TOTAL_FLOOR, MAX_RATIO * os.path.getsize(path))
    total = 0
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            for data in iter_member(path, info, member_limit(info, ceiling)):
                total += len(data)
                if total > budget:
                    raise ZipBombError(f"its members inflate to more than {budget} bytes")
