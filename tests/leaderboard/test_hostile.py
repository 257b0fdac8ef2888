"""Attacks on the site and its server (issue 20, site part), each bounded in time and memory."""

from __future__ import annotations

import csv
import io
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.leaderboard.build import csv_cell, to_csv
from harness.leaderboard.serve import make_server
from harness.leaderboard.svg import p_label
from tests.deadline import deadline


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<h1>board</h1>")
    (tmp_path / "secret.txt").write_text("host secret")
    (root / "sub" / "index.html").symlink_to(tmp_path / "secret.txt")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "page.html").write_text("host secret")
    (root / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "alias.html").symlink_to(root / "index.html")  # a link that stays inside
    return root


@pytest.fixture
def port(site: Path) -> Iterator[int]:
    server = make_server(site, idle_timeout=1.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    with deadline(10):
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
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LocalHost:{port}"):
        assert _get(port, "/", host).startswith(b"HTTP/1.0 200"), host


def test_a_foreign_host_gets_421(port):
    reply = _get(port, "/", "evil.example")
    assert reply.startswith(b"HTTP/1.0 421") and b"board" not in reply


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1:{other}",  # another port: another origin
        "localhost",  # no port
        "127.0.0.1:{port}.evil.example",
        "[::1]",
    ],
)
def test_other_host_names_get_421(port, host):
    reply = _get(port, "/", host.format(port=port, other=port + 1))
    assert reply.startswith(b"HTTP/1.0 421") and b"board" not in reply


def test_a_request_without_host_or_with_two_gets_421(port):
    assert _raw(port, b"GET / HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 421")
    two = f"GET / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n\r\n"
    reply = _raw(port, two.encode())
    assert b"board" not in reply and reply.split(b" ")[1] in (b"400", b"421")


def test_a_symlinked_index_does_not_leak_a_host_file(port):
    reply = _get(port, "/sub/")
    assert b"host secret" not in reply and reply.startswith(b"HTTP/1.0 404")


@pytest.mark.parametrize("path", ["/leak.txt", "/linked/page.html", "/linked/"])
def test_links_out_of_the_site_are_404(port, path):
    reply = _get(port, path)
    assert b"host secret" not in reply and reply.startswith(b"HTTP/1.0 404")


def test_a_link_inside_the_site_is_404_too(port):
    # the server follows no link at all: a link is checked where it is, never where it points
    reply = _get(port, "/alias.html")
    assert reply.startswith(b"HTTP/1.0 404")


def test_a_nul_byte_is_400_not_a_dropped_connection(port):
    reply = _get(port, "/index.html%00.txt")
    assert reply.startswith(b"HTTP/1.0 400")


def test_a_raw_nul_byte_is_400_and_logs_no_traceback(port, caplog):
    caplog.set_level(logging.DEBUG, logger="harness.leaderboard.serve")
    reply = _raw(port, f"GET /index.html\0.txt HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.0 400")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert any("malformed request" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "path",
    [
        "/index.html%",  # a bare percent sign
        "/index.html%zz",  # not hex
        "/%ff.html",  # not UTF-8
        "/%c0%ae%c0%ae/secret.txt",  # overlong UTF-8 for `..`
        "/../secret.txt",
        "/sub/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2fsecret.txt",  # an encoded slash is a slash
        "http://evil.example/index.html",  # absolute form
    ],
)
def test_bad_paths_are_400(port, path):
    reply = _get(port, path)
    assert reply.startswith(b"HTTP/1.0 400") and b"host secret" not in reply


def _release(fifo: Path) -> None:
    """Open the FIFO's write end, so that a reader blocked in open() goes on (then sees EOF)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader: nothing is blocked
        pass


@pytest.mark.parametrize("name", ["pipe.eval", "pipedir/index.html"])
def test_a_fifo_in_the_site_is_404_and_never_opened(site, port, name):
    fifo = site / name
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    path = "/pipedir/" if name.startswith("pipedir") else "/" + name
    try:
        with deadline(10):
            reply = _get(port, path)  # the socket's 5 s timeout ends a read that stalls
            assert reply.startswith(b"HTTP/1.0 404"), reply[:80]
            assert _get(port, "/").startswith(b"HTTP/1.0 200")  # and the server still serves
    finally:
        _release(fifo)


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


def test_silent_connections_are_closed(port):
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(5)]
    try:
        for s in held:
            assert s.recv(1024) == b""  # never sent a byte; closed after the 1 s timeout
    finally:
        for s in held:
            s.close()


def test_a_kept_alive_connection_that_stalls_is_closed(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        reply = b""
        while not reply.endswith(b"<h1>board</h1>"):
            chunk = s.recv(65536)
            assert chunk, reply
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: ")  # the next request, half sent
        assert s.recv(1024) == b""


def test_held_connections_cost_no_thread_each(port):
    before = threading.active_count()
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
    try:
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\n")
        # a reply on a later connection: the server has taken the 20 before it
        assert _get(port, "/missing").startswith(b"HTTP/1.0 404")
        during = threading.active_count()
    finally:
        for s in held:
            s.close()
    assert during - before < 10, (before, during)  # a thread per connection would add 20


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


@pytest.mark.parametrize(
    ("p", "label"), [(0.00977, "<.01"), (0.0099, "<.01"), (0.0496, "<.05"), (0.0009, "<.001"),
                     (0.05, "n.s."), (0.3, "n.s.")],
)  # fmt: skip
def test_a_heat_map_cell_prints_its_legend_class_not_a_rounded_number(p, label):
    # p = 0.00977 printed ".010" in the p < .01 colour: the text and the colour disagreed
    from harness.leaderboard.svg import heat_colours, p_class

    assert p_class(p) == label
    legend = {"<.001": 0.0005, "<.01": 0.005, "<.05": 0.02, "n.s.": 0.5}
    assert heat_colours(p) == heat_colours(legend[label])


def test_published_labels_hide_local_folders_and_stay_distinct():
    from harness.leaderboard.labels import public_label, short_labels

    a = public_label('scripted/x (outputs="/home/ann/runs/a/o.jsonl")')
    b = public_label('scripted/x (outputs="/home/ann/runs/b/o.jsonl")')
    assert "/home" not in a and "ann" not in a and "o.jsonl" in a and a != b
    assert public_label("replay//tmp/ann/answers.jsonl").startswith("replay/answers.jsonl~")
    assert public_label("openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    names = [f'scripted/x (answer="{k}", a_long_argument_name=5)' for k in (1, 2)]
    shown = short_labels([*names, "openai/gpt-4o"], 30)
    assert len(set(shown)) == 3 and shown[2] == "openai/gpt-4o"
