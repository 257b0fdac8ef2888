"""Attacks on the site and its server (issue 20, site part), each bounded in time and memory."""

from __future__ import annotations

import csv
import io
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.leaderboard.build import csv_cell, to_csv
from harness.leaderboard.serve import make_server
from harness.leaderboard.svg import p_label


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<h1>board</h1>")
    (tmp_path / "secret.txt").write_text("host secret")
    (root / "sub" / "index.html").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.fixture
def port(site: Path) -> Iterator[int]:
    server = make_server(site, idle_timeout=1.0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _get(port: int, path: str, host: str | None = None) -> bytes:
    host = host or f"127.0.0.1:{port}"
    return _raw(port, f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())


def test_the_site_is_served_to_its_own_host_names(port):
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert _get(port, "/", host).startswith(b"HTTP/1.0 200")


def test_a_foreign_host_gets_421(port):
    reply = _get(port, "/", "evil.example")
    assert reply.startswith(b"HTTP/1.0 421") and b"board" not in reply


def test_a_symlinked_index_does_not_leak_a_host_file(port):
    reply = _get(port, "/sub/")
    assert b"host secret" not in reply and reply.startswith(b"HTTP/1.0 404")


def test_a_nul_byte_is_400_not_a_dropped_connection(port):
    reply = _get(port, "/index.html%00.txt")
    assert reply.startswith(b"HTTP/1.0 400")


def test_idle_connections_are_closed(port):
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(5)]
    try:
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\n")  # half a request, then nothing
        for s in held:
            assert s.recv(1024) == b""  # closed by the server; the 5 s timeout bounds the test
    finally:
        for s in held:
            s.close()


def test_csv_cells_cannot_become_formulas():
    for bad in ('=HYPERLINK("http://x")', "+1", "-1+1", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(bad).startswith("'")
    assert csv_cell("openai/gpt") == "openai/gpt" and csv_cell(-0.5) == -0.5
    data = {"tasks": [{"suite": "s", "task": "t", "rows": [{
        "model": "=HYPERLINK(\"http://evil\")", "score": 0.5, "ci_low": 0.1, "ci_high": 0.9,
        "ci_method": "wilson", "n": 10, "errors": 0, "rank": 1, "groups": "a", "log": "x.eval",
    }]}]}  # fmt: skip
    [row] = list(csv.DictReader(io.StringIO(to_csv(data))))
    assert row["model"].startswith("'=") and row["score"] == "0.5"


def test_heat_map_p_values_never_read_as_zero():
    assert p_label(0.001) == ".001" and p_label(0.0004) == "<.001" and p_label(0.23) == "0.23"
