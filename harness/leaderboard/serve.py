"""A static file server for a built site, on loopback only, served by aiohttp.

inspect's log viewer reads `.eval` files (zip archives) piecewise with `Range: bytes=...`
requests, so a server without ranges (such as `python -m http.server`) cannot show a log.
aiohttp's `FileResponse` answers ranges, HEAD and conditional requests; this module decides
which file, if any, a request may have.

Hardened for a page of another origin that reaches the loopback port (DNS rebinding), for a
site folder that holds links or special files, and for clients that hold connections open:

- a `Host` other than `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` gets 421;
- a target that is not a clean path (bad percent-encoding, not UTF-8, a NUL byte, a `..` that
  climbs out of the site, not of the form `/...`) gets 400;
- every file served, a folder's `index.html` included, is opened one path component at a time
  beneath a descriptor of the site folder held since the server started, each with
  `O_NOFOLLOW` (the last with `O_NONBLOCK`), and must be a regular file: a link anywhere on the
  way, inside the site or out, a FIFO or a device gets 404. The file is then sent from that
  open descriptor, so a link swapped in after the check is never read: there is no gap
  between the check and the open;
- a connection that does not send a whole request head within `idle_timeout` seconds of
  opening, or sits idle that long after a response, is closed;
- a response that the client does not read is cut after `idle_timeout` seconds plus its size
  at 1 MiB/s (a loopback client reads far faster), and at most `max_connections` connections
  are held (by default a third of the file descriptors the process may open), the oldest
  closed to make room, so clients that stop reading cannot take every descriptor or keep a
  new client out; a failed accept is logged once, not once per attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import pathlib
import re
import socket
import stat
import threading
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote_to_bytes

from aiohttp import hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_exceptions import HttpProcessingError

from harness.errors import HarnessUsageError

HOST = "127.0.0.1"  # loopback only: the site is for the person running the command
_SHUTDOWN_GRACE = 1.0  # seconds a response in flight may take to finish once the server stops

_log = logging.getLogger(__name__)
_protocol_log = logging.getLogger(f"{__name__}.protocol")  # aiohttp's, for each connection


def _quiet_bad_requests(record: logging.LogRecord) -> bool:
    """Log a client's malformed request, which aiohttp answers with 400, as one debug line.

    aiohttp logs it as an error with a traceback, which would read as a crash of the server
    in the terminal of the person running it. Errors of the server itself still go through.
    """
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, HttpProcessingError):
        _log.debug("400 to a malformed request: %r", error.message)
        return False
    return True


_protocol_log.addFilter(_quiet_bad_requests)

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".eval": "application/octet-stream",
    ".wasm": "application/wasm",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
}
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ONE_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.ASCII | re.IGNORECASE)


def target_parts(target: str) -> tuple[list[str], bool]:
    """The path segments a request target names below the site root.

    Args:
        target: The request target as sent, e.g. `/logs/a%20b.eval?x=1`.

    Returns:
        The decoded segments with `.` and `..` applied, and whether the path ends in `/`.

    Raises:
        ValueError: The target is not a clean origin-form path; the server answers 400.

    """
    path = target.split("?", 1)[0].split("#", 1)[0]
    if not path.startswith("/") or not path.isascii():
        raise ValueError("the target must be a path of ASCII characters beginning with /")
    if _BAD_ESCAPE.search(path):
        raise ValueError("bad percent-encoding")
    try:
        decoded = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the path is not UTF-8") from None
    if "\0" in decoded:
        raise ValueError("NUL byte in the path")
    parts: list[str] = []
    for segment in decoded.split("/"):
        if segment == "..":
            if not parts:
                raise ValueError("the path climbs out of the site")
            parts.pop()
        elif segment not in ("", "."):
            parts.append(segment)
    return parts, decoded.endswith("/")


def _range_verdict(
    request: web.BaseRequest, st: os.stat_result
) -> Literal["pass", "ignore", "unsatisfiable"]:
    """What to do with the request's `Range`: "pass" it to aiohttp, "ignore" it, or answer 416.

    aiohttp answers 416 to any `Range` it cannot parse (several ranges, another unit, last
    before first), where RFC 9110 section 14.2 has a server ignore a range it does not take and
    send the whole file. aiohttp sends the whole file for `bytes=-0`, a suffix of no bytes,
    which section 14.1.3 calls unsatisfiable. And aiohttp takes an `If-Range` that holds an
    entity tag as no condition at all; chromium sends one whenever it has part of a log in its
    cache, so the tag is compared here with the one `FileResponse` sends (the file's mtime in
    ns and its size, in hex), and the whole file is sent when they differ (section 13.1.5).
    """
    header = request.headers.get(hdrs.RANGE)
    if header is None:
        return "pass"
    match = _ONE_RANGE.fullmatch(header.strip())
    if match is None:
        return "ignore"
    first, last = match.groups()
    if first == last == "" or (first and last and int(last) < int(first)):
        return "ignore"
    if_range = request.headers.get(hdrs.IF_RANGE)
    if if_range is not None and request.if_range is None:  # an entity tag, not a date
        if if_range.strip() != f'"{st.st_mtime_ns:x}-{st.st_size:x}"':
            return "ignore"
    return "unsatisfiable" if first == "" and int(last) == 0 else "pass"


def _text(status: int, text: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_MIN_RATE = 1 << 20  # bytes/s a loopback client must read at; slower, and its response is cut
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_beneath(root_fd: int, parts: list[str]) -> tuple[int, os.stat_result] | None:
    """A descriptor of `parts` beneath the folder `root_fd`, no link followed; None if absent.

    Every component is opened relative to its parent's descriptor with `O_NOFOLLOW`, so no
    link, wherever it points, and no swap of a component for a link between two requests or
    within one, can lead outside the site. The last component is opened with `O_NONBLOCK`
    (a FIFO never blocks) and may be a folder or a regular file; anything else is None.
    """
    try:
        fd = os.dup(root_fd)
    except OSError as ex:
        raise _Busy from ex
    try:
        for name in parts:
            child = os.open(name, _FILE_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            info = os.fstat(fd)
            if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
                os.close(fd)
                return None
        info = os.fstat(fd)
        return fd, info
    except OSError as ex:  # missing, a link, a component that is not a folder, no permission
        os.close(fd)
        if ex.errno in (errno.EMFILE, errno.ENFILE):
            raise _Busy from ex
        return None


class _Busy(Exception):
    """No file descriptor is free to open the file: the server answers 503."""


def _default_max_connections() -> int:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = 65536 if soft == resource.RLIM_INFINITY else soft
    # a connection sending a file holds two (its socket and the file); room for those closing
    return max(4, min(10_000, (soft - 32) // 4))


class _OnceLog(logging.Filter):
    """Pass the first record of each kind of accept or send error; count the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        key = type(error).__name__ + str(getattr(error, "errno", "")) if error else record.msg
        self.seen[str(key)] = self.seen.get(str(key), 0) + 1
        if self.seen[str(key)] > 1:
            return False
        record.exc_info, record.exc_text = None, None
        record.msg = f"{record.getMessage()}: {error} (logged once)" if error else record.msg
        record.args = ()
        return True


class _Server(web.Server):
    """aiohttp's low-level server, plus a deadline for each connection's first request head.

    aiohttp closes a connection that sits idle for `keepalive_timeout` seconds after a
    response, a half-sent next request included. Up to 3.14.3 it starts that timer only after
    the first response, so a client that connects and sends nothing, or half a request line,
    is held forever (3.14.5, installed here, also starts it when a connection opens). This
    class closes a connection whose first request has not reached the handler `head_timeout`
    seconds after it opened, whatever the aiohttp version; after that, aiohttp's own timer
    holds. `connection_made` and `connection_lost` are the calls aiohttp's protocol makes on
    its server for every connection.
    """

    def __init__(
        self,
        handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]],
        *,
        head_timeout: float,
        max_connections: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, **kwargs)
        self._head_timeout = head_timeout
        self._max_connections = max_connections
        self._deadlines: dict[web.RequestHandler, asyncio.TimerHandle] = {}
        self._open: dict[web.RequestHandler, asyncio.Transport] = {}  # oldest first

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        """Register the connection, and close it if no request head arrives in time.

        Past `max_connections` open connections, the oldest is closed: a client that holds
        connections without reading cannot keep a new one out.
        """
        super().connection_made(handler, transport)
        self._open[handler] = transport
        if len(self._open) > self._max_connections:
            oldest = next(iter(self._open))
            self._open.pop(oldest).abort()
        loop = asyncio.get_running_loop()
        self._deadlines[handler] = loop.call_later(self._head_timeout, transport.close)

    def connection_lost(
        self, handler: web.RequestHandler, exc: BaseException | None = None
    ) -> None:
        """Forget the connection and its deadline."""
        self._open.pop(handler, None)
        self.request_arrived(handler)
        super().connection_lost(handler, exc)

    def request_arrived(self, handler: web.RequestHandler) -> None:
        """Cancel the connection's deadline: a whole request head came in."""
        deadline = self._deadlines.pop(handler, None)
        if deadline is not None:
            deadline.cancel()


class SiteServer:
    """The site's files on a bound loopback socket, served by aiohttp on a loop of its own.

    The same calls as `http.server`'s servers: `serve_forever()` blocks (run it in a thread
    for tests), `shutdown()` from another thread stops it and waits, and `server_close()` frees
    the socket. A connection costs no thread, only an entry in the event loop.
    """

    def __init__(
        self,
        root: str,
        sock: socket.socket,
        idle_timeout: float,
        max_connections: int | None = None,
    ) -> None:
        self._root = root
        self._root_fd = os.open(root, _DIR_FLAGS)  # held: the site is this folder, whatever
        self._sock = sock  # later becomes of its path
        self._idle_timeout = idle_timeout
        self._max_connections = max_connections or _default_max_connections()
        host, port = sock.getsockname()[:2]
        self.server_address: tuple[str, int] = (host, port)
        names = ("127.0.0.1", "localhost", "::1", host)
        self._hosts = frozenset(_authority(name, port) for name in names)
        self._lock = threading.Lock()
        self._stopping = False
        self._wake: Callable[[], object] | None = None
        self._done = threading.Event()
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        """The site's address, e.g. `http://127.0.0.1:8000/`."""
        return f"http://{_authority(*self.server_address)}/"

    def serve_forever(self) -> None:
        """Serve until `shutdown()` (from another thread) or Ctrl-C (which raises here)."""
        try:
            with asyncio.Runner() as runner:
                runner.run(self._serve())
        finally:
            self._done.set()

    def shutdown(self) -> None:
        """Stop `serve_forever()` and wait until it has returned."""
        with self._lock:
            self._stopping = True
            wake = self._wake
        if wake is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed already
            wake()
        self._done.wait()

    def server_close(self) -> None:
        """Close the listening socket and the site folder's descriptor."""
        self._sock.close()
        with contextlib.suppress(OSError):
            os.close(self._root_fd)

    async def _serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._stopping:
                return
            self._wake = lambda: loop.call_soon_threadsafe(stop.set)
        once = _OnceLog()
        loop.set_exception_handler(lambda lp, ctx: _log_loop_error(once, ctx))
        self._server = _Server(
            self._handle,
            head_timeout=self._idle_timeout,
            max_connections=self._max_connections,
            keepalive_timeout=self._idle_timeout,  # idle after a response, or half-sent
            lingering_time=self._idle_timeout,  # reading an unread request body, at most
            access_log=None,  # `_handle` logs each request at debug level instead
            logger=_protocol_log,
        )
        runner = web.ServerRunner(self._server, shutdown_timeout=_SHUTDOWN_GRACE)
        await runner.setup()
        try:
            await web.SockSite(runner, self._sock).start()
            await stop.wait()
        finally:
            await runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        assert self._server is not None
        self._server.request_arrived(request.protocol)
        _log.debug("%s %s %s", request.remote, request.method, request.raw_path)
        hosts = request.headers.getall(hdrs.HOST, [])
        if len(hosts) != 1 or hosts[0].strip().lower() not in self._hosts:
            return _text(421, "421 Misdirected Request: unknown Host")
        if request.method not in ("GET", "HEAD"):
            return _text(405, "405 Method Not Allowed", {hdrs.ALLOW: "GET, HEAD"})
        try:
            parts, slash = target_parts(request.raw_path)
        except ValueError as ex:
            return _text(400, f"400 Bad Request: {ex}")
        try:
            return self._file_response(request, parts, slash)
        except _Busy:
            return _text(503, "503 Service Unavailable: busy", {hdrs.RETRY_AFTER: "1"})

    def _file_response(
        self, request: web.BaseRequest, parts: list[str], slash: bool
    ) -> web.StreamResponse:
        found = open_beneath(self._root_fd, parts)
        name = parts[-1] if parts else ""
        if found is not None and stat.S_ISDIR(found[1].st_mode):
            os.close(found[0])
            if not slash:  # so that the index's relative links resolve inside the folder
                query = request.raw_path.partition("?")[2]
                location = "".join("/" + quote(p) for p in parts) + "/" + (query and "?" + query)
                return _text(301, "301 Moved Permanently", {hdrs.LOCATION: location})
            found = open_beneath(self._root_fd, [*parts, "index.html"])
            name, slash = "index.html", False
        if found is not None and (slash or not stat.S_ISREG(found[1].st_mode)):
            os.close(found[0])
            found = None
        if found is None:
            return _text(404, "404 Not Found")  # no folder listings, no links, no special files
        return self._send_file(request, found, name)

    def _send_file(
        self, request: web.BaseRequest, found: tuple[int, os.stat_result], name: str
    ) -> web.StreamResponse:
        fd, st = found
        verdict = _range_verdict(request, st)
        if verdict == "unsatisfiable":
            os.close(fd)
            headers = {hdrs.CONTENT_RANGE: f"bytes */{st.st_size}", hdrs.ACCEPT_RANGES: "bytes"}
            return web.Response(status=416, headers=headers)
        content_type = _CONTENT_TYPES.get(os.path.splitext(name)[1].lower())
        return _CheckedFile(
            fd,
            ignore_range=verdict == "ignore",
            deadline=self._idle_timeout + st.st_size / _MIN_RATE,
            headers={hdrs.CONTENT_TYPE: content_type} if content_type else None,
        )


def _log_loop_error(once: _OnceLog, context: dict[str, Any]) -> None:
    """The event loop's errors (a failed accept when descriptors run out), each kind once."""
    error = context.get("exception")
    record = logging.LogRecord(
        _log.name, logging.ERROR, __file__, 0, context.get("message", "event loop error"), (),
        (type(error), error, None) if error is not None else None,
    )  # fmt: skip
    if once.filter(record):
        _log.handle(record)


class _DescriptorPath(pathlib.PosixPath):
    """A path whose `stat` and `open` are those of a descriptor already opened and checked.

    aiohttp's `FileResponse` stats and opens the path it holds; this one answers from the
    descriptor, and hands it over on `open`, so that no name is looked up again and no second
    descriptor is needed. A descriptor never handed over is closed with the path.
    """

    held: list[int]  # the descriptor, until `open` hands it over

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        """The descriptor's `fstat`."""
        return os.fstat(self.held[0])

    def open(self, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """A binary file object that owns the descriptor."""
        return os.fdopen(self.held.pop(), "rb")


def _close_all(held: list[int]) -> None:
    while held:
        os.close(held.pop())


class _CheckedFile(web.FileResponse):
    """aiohttp's `FileResponse` for a file already opened and checked, sent from that descriptor.

    `FileResponse` sends `FILE.gz` or `FILE.br`
    instead of FILE when the client accepts that encoding; this one prepares against the
    request without `Accept-Encoding`, and without `Range` where `_range_verdict` says to
    ignore it. A client that has not taken the response after `deadline` seconds is cut off.
    """

    def __init__(self, fd: int, *, ignore_range: bool, deadline: float, **kwargs: Any) -> None:
        super().__init__(f"/fd/{fd}", **kwargs)
        path = _DescriptorPath(f"/fd/{fd}")
        path.held = [fd]
        self._path = path  # aiohttp's own attribute: the path it stats and opens
        self._close = weakref.finalize(self, _close_all, path.held)  # if it is never sent
        self._ignore_range = ignore_range
        self._deadline = deadline

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        """Send the status, the headers and the file's bytes (or the range asked for)."""
        headers = request.headers.copy()
        headers.popall(hdrs.ACCEPT_ENCODING, None)
        if self._ignore_range:
            headers.popall(hdrs.RANGE, None)
        try:
            async with asyncio.timeout(self._deadline):
                return await super().prepare(request.clone(headers=headers))
        except TimeoutError:
            if request.transport is not None:
                request.transport.abort()
            _log.debug("cut a response the client did not read in %.0f s", self._deadline)
            raise ConnectionResetError("the client stopped reading") from None
        except OSError as ex:  # aiohttp's own open of the file, when descriptors run out
            if ex.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if request.transport is not None:
                request.transport.abort()
            raise ConnectionResetError("no file descriptor free") from None
        finally:
            self._close()


def make_server(
    site: Path,
    port: int = 0,
    idle_timeout: float = 10.0,
    *,
    host: str = HOST,
    max_connections: int | None = None,
) -> SiteServer:
    """A server for the files under `site`, bound to a loopback address.

    Call `serve_forever()` on the result (in a thread, for tests) and `shutdown()` plus
    `server_close()` when done.

    Args:
        site: The folder to serve; requests cannot reach outside it.
        port: The TCP port; 0 picks a free one (read it from `server.server_address`).
        idle_timeout: Seconds a connection may stay idle or half-sent before it is closed.
        host: The address to listen on: a loopback address, 127.0.0.1 unless given.
        max_connections: Connections held at once; more are closed as they open (default:
            half the process's file descriptor limit).

    Raises:
        HarnessUsageError: `site` is not a folder, `host` is not a loopback address, or the
            port cannot be bound.
        ValueError: `idle_timeout` is not positive.

    """
    if not idle_timeout > 0:
        raise ValueError(f"idle_timeout must be positive, got {idle_timeout}")
    if not site.is_dir():
        raise HarnessUsageError(f"site folder not found: {site}; build it first")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise HarnessUsageError(
            f"refusing to serve on {host}: the site is for this machine only; "
            "use a loopback address such as 127.0.0.1 or ::1"
        )
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        sock.bind((host, port))
        sock.listen(128)
    except OSError as ex:
        sock.close()
        raise HarnessUsageError(
            f"cannot listen on {_authority(host, port)} ({ex.strerror}); pick another --port"
        ) from ex
    return SiteServer(os.path.realpath(site), sock, idle_timeout, max_connections)


def serve(site: Path, port: int = 8000, *, host: str = HOST) -> None:
    """Serve `site` on http://127.0.0.1:PORT/ until Ctrl-C.

    Args:
        site: The folder to serve.
        port: The TCP port; 0 picks a free one.
        host: A loopback address to listen on.

    """
    server = make_server(site, port, host=host)
    print(f"Serving {site} at {server.url} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
