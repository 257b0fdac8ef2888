"""The site server: whole files, each Range form, 416, HEAD, content types, traversal."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import HarnessUsageError
from harness.leaderboard.serve import make_server, parse_range

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
    (tmp_path / "secret.txt").write_text("outside the site")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.fixture
def port(site: Path) -> Iterator[int]:
    server = make_server(site)
    # a short poll interval makes shutdown() quick: each test starts and stops a server
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1]
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
    "path", ["/../secret.txt", "/logs/../../secret.txt", "/%2e%2e/secret.txt", "/escape"]
)
def test_traversal_refused(port: int, path: str) -> None:
    status, _, body = request(port, path)
    assert status == 404
    assert b"outside the site" not in body


def test_no_folder_listing(port: int) -> None:
    status, _, body = request(port, "/logs/")
    assert status == 404
    assert b"a.eval" not in body


def test_parse_range_edges() -> None:
    assert parse_range("bytes=0-0", 1) == (0, 0)
    assert parse_range("bytes=-1", 1) == (0, 0)
    assert parse_range("bytes=1-", 1) is None
    with pytest.raises(ValueError, match="Range"):
        parse_range("bytes=0-1, 3-4", 10)
