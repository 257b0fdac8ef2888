"""A static file server for a built site, on loopback only, that answers HTTP Range requests.

inspect's log viewer reads `.eval` files (zip archives) piecewise with `Range: bytes=...`
requests, so a server without ranges (such as `python -m http.server`) cannot show a log.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

from harness.errors import HarnessUsageError

HOST = "127.0.0.1"  # loopback only: the site is for the person running the command

_log = logging.getLogger(__name__)

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")

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


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """Resolve one `Range` header value against a file of `size` bytes.

    Args:
        header: The header's value, e.g. `bytes=0-99`, `bytes=100-` or `bytes=-50`.
        size: The file's length in bytes.

    Returns:
        The first and last byte offsets (inclusive) to send, or `None` when the range cannot
        be satisfied (the caller answers 416).

    Raises:
        ValueError: The header is malformed or asks for several ranges; the caller ignores
            it and sends the whole file, as RFC 9110 section 14.2 allows.

    """
    match = _RANGE.match(header.strip())
    if match is None:
        raise ValueError(f"unsupported Range header: {header!r}")
    first, last = match.group(1), match.group(2)
    if first == "" and last == "":
        raise ValueError(f"unsupported Range header: {header!r}")
    if first == "":  # a suffix: the last n bytes
        n = int(last)
        if n == 0 or size == 0:
            return None
        return max(size - n, 0), size - 1
    start = int(first)
    if last != "" and int(last) < start:
        raise ValueError(f"Range header with last < first: {header!r}")
    if start >= size:
        return None
    end = size - 1 if last == "" else min(int(last), size - 1)
    return start, end


class SiteRequestHandler(SimpleHTTPRequestHandler):
    """Serves GET and HEAD for files inside one folder, with single byte ranges.

    Hardened for a page of another origin that reaches the loopback port (DNS rebinding) and for
    a site folder holding links: a `Host` other than this server's loopback names gets 421;
    every file served, a folder's `index.html` included, must resolve inside the site; a path
    that cannot be a file name (a NUL byte) gets 400; an idle or half-sent connection is closed
    after `timeout` seconds.
    """

    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **_CONTENT_TYPES}
    timeout = 10.0  # seconds a connection may sit idle (socket timeout of the handler)

    def __init__(self, *args: object, directory: str, **kwargs: object) -> None:
        self._root = os.path.realpath(directory)
        self._range: tuple[int, int] | None = None
        super().__init__(*args, directory=directory, **kwargs)  # type: ignore[arg-type]

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._root or real.startswith(self._root + os.sep)

    def _host_allowed(self) -> bool:
        port = self.server.server_address[1]
        host = (self.headers.get("Host") or "").strip().lower()
        return host in {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}

    def send_head(self) -> BinaryIO | None:
        """Send the status and headers; return the file positioned at the first byte to send."""
        self._range = None
        if not self._host_allowed():
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "Unknown host")
            return None
        try:
            path = self.translate_path(self.path)
            if not self._inside(path):
                self.send_error(HTTPStatus.NOT_FOUND, "File not found")
                return None
            if os.path.isdir(path):
                index = os.path.join(path, "index.html")
                if os.path.lexists(index) and not self._inside(index):
                    self.send_error(HTTPStatus.NOT_FOUND, "File not found")
                    return None
                # the base class redirects `dir` to `dir/` and serves `dir/index.html`
                return super().send_head()  # type: ignore[return-value]
        except ValueError:  # a NUL byte, or a path no file can have
            self.send_error(HTTPStatus.BAD_REQUEST, "Bad path")
            return None
        header = self.headers.get("Range")
        if header is None or not os.path.isfile(path):
            return super().send_head()  # type: ignore[return-value]
        return self._send_range_head(path, header)

    def _send_range_head(self, path: str, header: str) -> BinaryIO | None:
        try:
            f = open(path, "rb")  # closed by do_GET/do_HEAD, as in the base class
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        try:
            stat = os.fstat(f.fileno())
            try:
                span = parse_range(header, stat.st_size)
            except ValueError:
                f.close()
                return super().send_head()  # type: ignore[return-value]
            if span is None:
                f.close()
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{stat.st_size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            start, end = span
            self.send_response(HTTPStatus.PARTIAL_CONTENT)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Range", f"bytes {start}-{end}/{stat.st_size}")
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
            self.end_headers()
            f.seek(start)
            self._range = span
            return f
        except Exception:
            f.close()
            raise

    def end_headers(self) -> None:
        """Advertise range support on every response, then end the headers."""
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def copyfile(self, source: BinaryIO, outputfile: BinaryIO) -> None:  # type: ignore[override]
        """Copy the whole file, or only the requested range, to the socket."""
        try:
            if self._range is None:
                shutil.copyfileobj(source, outputfile)
                return
            remaining = self._range[1] - self._range[0] + 1
            while remaining > 0:
                chunk = source.read(min(remaining, 64 * 1024))
                if not chunk:
                    break
                outputfile.write(chunk)
                remaining -= len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser cancelled the request (the viewer does when it navigates)

    def list_directory(self, path: str | os.PathLike[str]) -> None:  # type: ignore[override]
        """Refuse folder listings: a site serves its pages, not its folders."""
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")

    def log_message(self, format: str, *args: object) -> None:
        """Send the access log to `logging` at debug level instead of stderr."""
        _log.debug("%s %s", self.address_string(), format % args)


def make_server(site: Path, port: int = 0, idle_timeout: float = 10.0) -> ThreadingHTTPServer:
    """A threaded HTTP server for the files under `site`, bound to 127.0.0.1.

    Call `serve_forever()` on the result (in a thread, for tests) and `shutdown()` plus
    `server_close()` when done.

    Args:
        site: The folder to serve; requests cannot reach outside it.
        port: The TCP port; 0 picks a free one (read it from `server.server_address`).
        idle_timeout: Seconds a connection may stay idle or half-sent before it is closed.

    Raises:
        HarnessUsageError: `site` is not a folder, or the port cannot be bound.

    """
    if not site.is_dir():
        raise HarnessUsageError(f"site folder not found: {site}; build it first")
    handler_class = type("Handler", (SiteRequestHandler,), {"timeout": idle_timeout})
    handler = functools.partial(handler_class, directory=str(site))
    try:
        server = ThreadingHTTPServer((HOST, port), handler)
    except OSError as ex:
        raise HarnessUsageError(
            f"cannot listen on {HOST}:{port} ({ex.strerror}); pick another --port"
        ) from ex
    server.daemon_threads = True  # a held connection never keeps the process alive
    return server


def serve(site: Path, port: int = 8000) -> None:
    """Serve `site` on http://127.0.0.1:PORT/ until Ctrl-C.

    Args:
        site: The folder to serve.
        port: The TCP port; 0 picks a free one.

    """
    server = make_server(site, port)
    host, bound = server.server_address[:2]
    print(f"Serving {site} at http://{host}:{bound}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
