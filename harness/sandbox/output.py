"""What a sandboxed command wrote, read without ever blocking the sandbox, and what to log about it.

`read_pipe` connects a pipe's read end to the event loop and returns a reader and its transport,
so that the caller can close the transport itself: on Python 3.11, a process whose pipes asyncio
made is not reaped until both pipes close, and a reader cancelled at the timeout leaves a full
pipe paused for ever (issue 31). `read_head_tail` reads one to its end, keeping the first and
last bytes. The two `record_*` functions say in the log, and in the sample's store when there is
one, that output was cut or that the wall clock stopped a command.
"""

from __future__ import annotations

import asyncio
import logging
import os

logger = logging.getLogger("harness.sandbox.bwrap")


async def read_pipe(fd: int) -> tuple[asyncio.StreamReader, asyncio.ReadTransport]:
    """A stream reader over the read end `fd` of a pipe (taken over: closing it closes `fd`)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.connect_read_pipe(lambda: protocol, os.fdopen(fd, "rb", 0))
    return reader, transport


async def read_head_tail(stream: asyncio.StreamReader | None, limit: int) -> tuple[bytes, int]:
    """Read a stream to its end, keeping its first and last `limit // 2` bytes.

    Returns the kept bytes, with a marker line where the middle was cut, and how many bytes
    were cut (0 when everything fit).
    """
    head, tail = bytearray(), bytearray()
    half = limit // 2
    total = 0
    while stream is not None and (chunk := await stream.read(1 << 16)):
        total += len(chunk)
        room = half - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        tail += chunk
        if len(tail) > half:
            del tail[: len(tail) - half]
    cut = total - len(head) - len(tail)
    if cut <= 0:
        return bytes(head + tail), 0
    marker = f"\n[harness: {cut} bytes of output cut here; the first and last {half} kept]\n"
    return bytes(head) + marker.encode() + bytes(tail), cut


def record_cut(cmd: list[str], stream: str, cut: int) -> None:
    """Say in the log that output was cut: a warning, and the sample's store when in one."""
    logger.warning(
        "bwrap: %s wrote %d bytes too many on %s; the middle was cut", cmd[:1], cut, stream
    )
    try:
        from inspect_ai.util import store

        cuts = store().get("harness_output_cut", [])
        store().set("harness_output_cut", [*cuts, {"cmd": cmd[:1], "stream": stream, "bytes": cut}])
    except Exception:  # not inside a sample (a direct call, a test): the warning says it
        pass


def record_wall_clock(shown: list[str], seconds: int, grace: int, code: int) -> None:
    """Say in the log, and the sample's store when in one, that the wall clock stopped a command.

    `shown` is the command's first word, as a one-item list.
    """
    killed = code == 137
    logger.warning(
        "bwrap: %s got SIGTERM at its wall clock of %s s%s",
        shown,
        seconds,
        f" and SIGKILL {grace} s later" if killed else "",
    )
    event = {
        "cmd": shown,
        "sigterm_at_s": seconds,
        "sigkill_at_s": seconds + grace if killed else None,
        "signal": "SIGKILL" if killed else "SIGTERM",
        "exit_code": code,
    }
    try:
        from inspect_ai.util import store

        store().set("harness_wall_clock", [*store().get("harness_wall_clock", []), event])
    except Exception:  # not inside a sample (a direct call, a test): the warning says it
        pass
