"""The site server: whole files, each Range form, 416, HEAD, conditional requests, content types,
traversal, redirects, the CLI's port 0 and Ctrl-C."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import HarnessUsageError
from harness.leaderboard.serve import make_server
from tests.deadline import deadline

BODY = bytes(range(256)) * 4  # 1024 bytes, every offset distinguishable


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "a.eval").write_bytes(BODY)
    (root / "empty.eval").write_bytes(b"")
    (root / "index.html").write_text("<h1>hi</h1>")
    (root / "app.js").write_text("export {};")
    (root / "data.json").write_text("{}")
    (root / "icon.svg").write_text("<svg/>")
    (root / "mod.wasm").write_bytes(b"\0asm")
    (root / "one.bin").write_bytes(b"x")
    (tmp_path / "secret.txt").write_text("outside the site")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.fixture
def port(site: Path) -> Iterator[int]:
    server = make_server(site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    with deadline(10):
        server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def request(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_binds_loopback_only(site: Path) -> None:
    server = make_server(site)
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert server.server_address[1] > 0
    finally:
        server.server_close()


def test_busy_port_is_a_usage_error(site: Path) -> None:
    first = make_server(site)
    try:
        with pytest.raises(HarnessUsageError, match="pick another --port"):
            make_server(site, first.server_address[1])
    finally:
        first.server_close()


def test_missing_site_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessUsageError, match="site folder not found"):
        make_server(tmp_path / "nope")


def test_full_get(port: int) -> None:
    status, headers, body = request(port, "/logs/a.eval")
    assert status == 200
    assert body == BODY
    assert headers["content-length"] == "1024"
    assert headers["accept-ranges"] == "bytes"
    assert headers["content-type"] == "application/octet-stream"


def test_index_html_for_root(port: int) -> None:
    status, headers, body = request(port, "/")
    assert status == 200
    assert body == b"<h1>hi</h1>"
    assert headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=10-19", 10, 19),
        ("bytes=1000-5000", 1000, 1023),  # last clipped to the file's end
        ("bytes=1000-", 1000, 1023),
        ("bytes=0-", 0, 1023),
        ("bytes=-24", 1000, 1023),
        ("bytes=-5000", 0, 1023),  # a suffix longer than the file is the whole file
    ],
)
def test_range(port: int, header: str, start: int, end: int) -> None:
    status, headers, body = request(port, "/logs/a.eval", {"Range": header})
    assert status == 206
    assert body == BODY[start : end + 1]
    assert headers["content-range"] == f"bytes {start}-{end}/1024"
    assert headers["content-length"] == str(end - start + 1)
    assert headers["accept-ranges"] == "bytes"
    assert headers["content-type"] == "application/octet-stream"


@pytest.mark.parametrize(
    ("path", "header"),
    [
        ("/logs/a.eval", "bytes=1024-"),
        ("/logs/a.eval", "bytes=2000-3000"),
        ("/logs/a.eval", "bytes=-0"),
        ("/empty.eval", "bytes=0-"),
        ("/empty.eval", "bytes=-1"),
    ],
)
def test_unsatisfiable_range_is_416(port: int, path: str, header: str) -> None:
    status, headers, body = request(port, path, {"Range": header})
    assert status == 416
    size = 1024 if path == "/logs/a.eval" else 0
    assert headers["content-range"] == f"bytes */{size}"
    assert body == b""


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-1", "bytes=5-2", "bytes=-"])
def test_unsupported_range_sends_whole_file(port: int, header: str) -> None:
    status, _, body = request(port, "/logs/a.eval", {"Range": header})
    assert status == 200
    assert body == BODY


def test_head(port: int) -> None:
    status, headers, body = request(port, "/logs/a.eval", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-length"] == "1024"
    assert headers["accept-ranges"] == "bytes"


def test_head_with_range(port: int) -> None:
    status, headers, body = request(port, "/logs/a.eval", {"Range": "bytes=0-9"}, method="HEAD")
    assert (status, body) == (206, b"")
    assert headers["content-range"] == "bytes 0-9/1024"
    assert headers["content-length"] == "10"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/app.js", "text/javascript"),
        ("/data.json", "application/json"),
        ("/icon.svg", "image/svg+xml"),
        ("/mod.wasm", "application/wasm"),
        ("/empty.eval", "application/octet-stream"),
    ],
)
def test_content_types(port: int, path: str, content_type: str) -> None:
    status, headers, _ = request(port, path)
    assert status == 200
    assert headers["content-type"].split(";")[0] == content_type


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/../secret.txt", 400),  # a `..` that climbs out of the site is a bad path
        ("/logs/../../secret.txt", 400),
        ("/%2e%2e/secret.txt", 400),
        ("/escape", 404),  # a link to a file outside the site
    ],
)
def test_traversal_refused(port: int, path: str, status: int) -> None:
    got, _, body = request(port, path)
    assert got == status
    assert b"outside the site" not in body


def test_dot_segments_inside_the_site_are_served(port: int) -> None:
    status, _, body = request(port, "/logs/./../logs/a.eval")
    assert (status, body) == (200, BODY)


def test_no_folder_listing(port: int) -> None:
    status, _, body = request(port, "/logs/")
    assert status == 404
    assert b"a.eval" not in body


@pytest.mark.parametrize(
    ("header", "status", "body"),
    [
        ("bytes=0-0", 206, b"x"),
        ("bytes=-1", 206, b"x"),
        ("bytes=1-", 416, b""),
        ("bytes=0-1, 3-4", 200, b"x"),  # several ranges: the whole file
    ],
)
def test_range_edges_on_a_one_byte_file(port: int, header: str, status: int, body: bytes) -> None:
    got = request(port, "/one.bin", {"Range": header})
    assert (got[0], got[2]) == (status, body)
    if status == 206:
        assert got[1]["content-range"] == "bytes 0-0/1"


def test_ranges_over_one_kept_alive_connection(port: int) -> None:
    # the viewer reads a log's zip directory, then its members, on one connection
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        for start, end in [(1000, 1023), (0, 99), (512, 512), (0, 1023)]:
            conn.request("GET", "/logs/a.eval", headers={"Range": f"bytes={start}-{end}"})
            resp = conn.getresponse()
            assert (resp.status, resp.read()) == (206, BODY[start : end + 1])
    finally:
        conn.close()


def test_head_of_the_index(port: int) -> None:
    status, headers, body = request(port, "/", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-type"].startswith("text/html")
    assert headers["content-length"] == str(len("<h1>hi</h1>"))


def test_conditional_get(port: int) -> None:
    _, headers, _ = request(port, "/logs/a.eval")
    etag, modified = headers["etag"], headers["last-modified"]
    assert request(port, "/logs/a.eval", {"If-None-Match": etag})[0] == 304
    assert request(port, "/logs/a.eval", {"If-Modified-Since": modified})[0] == 304
    assert request(port, "/logs/a.eval", {"If-None-Match": '"other"'})[0] == 200


def test_if_range(port: int) -> None:
    # chromium sends If-Range with the ETag it cached, then expects 206 if the file is unchanged
    _, headers, _ = request(port, "/logs/a.eval")
    etag, modified = headers["etag"], headers["last-modified"]
    for validator in (etag, modified):
        status, _, body = request(
            port, "/logs/a.eval", {"Range": "bytes=0-9", "If-Range": validator}
        )
        assert (status, body) == (206, BODY[:10]), validator
    for stale in ('"an-old-version"', "W/" + etag, "Thu, 01 Jan 1970 00:00:00 GMT"):
        status, _, body = request(port, "/logs/a.eval", {"Range": "bytes=0-9", "If-Range": stale})
        assert (status, body) == (200, BODY), stale


def test_a_folder_without_its_slash_is_redirected(port: int, site: Path) -> None:
    (site / "sub dir").mkdir()
    (site / "sub dir" / "index.html").write_text("inner")
    status, headers, _ = request(port, "/sub%20dir?q=1")
    assert status == 301 and headers["location"] == "/sub%20dir/?q=1"
    assert request(port, "/sub%20dir/")[2] == b"inner"
    assert request(port, "/one.bin/")[0] == 404  # a file is not a folder


def test_only_get_and_head(port: int) -> None:
    status, headers, _ = request(port, "/index.html", method="POST")
    assert status == 405 and headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "localhost", "example.com"])
def test_a_non_loopback_host_is_refused(site: Path, host: str) -> None:
    with pytest.raises(HarnessUsageError, match="loopback address"):
        make_server(site, host=host)


def test_cli_serves_on_port_0_and_stops_on_ctrl_c(site: Path) -> None:
    cmd = [sys.executable, "-m", "harness.cli", "leaderboard", "serve", str(site), "--port", "0"]
    # SIGINT back to its default in the server: a shell's background job (or a test runner's
    # worker) may start us with SIGINT ignored, and an ignored signal stays ignored across exec
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        with deadline(60):  # importing the CLI takes a few seconds on 2 shared cores
            line = proc.stdout.readline()
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/ \(Ctrl-C to stop\)", line)
        assert match, line + proc.stderr.read() if proc.poll() is not None else line
        assert request(int(match.group(1)), "/")[2] == b"<h1>hi</h1>"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
