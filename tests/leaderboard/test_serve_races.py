"""The site server under a link swapped in while it serves, and under descriptor exhaustion.

Issue 32: with a link swapped into the site in a loop, 250 of 1,000 responses were a host
file and 491 were 500s; with a 1,024-descriptor limit, 758 clients that stop reading denied
service to everyone else and logged 55,724 traceback lines.
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

from harness.leaderboard.serve import make_server
from tests.deadline import deadline

ROOT = Path(__file__).resolve().parents[2]


def _swapper(site: Path, outside: Path, stop: threading.Event) -> None:
    """Swap page.html and sub/ between the real thing and a link out of the site, in a loop."""
    while not stop.is_set():
        (site / ".link").symlink_to(outside / "secret.txt")
        os.replace(site / ".link", site / "page.html")
        (site / ".real").write_text("SAFE page")
        os.replace(site / ".real", site / "page.html")
        os.rename(site / "sub", site / ".sub")
        (site / "sub").symlink_to(outside, target_is_directory=True)
        (site / "sub").unlink()
        os.rename(site / ".sub", site / "sub")


def test_a_link_swapped_in_while_serving_never_leaks_and_never_500s(tmp_path):
    site, outside = tmp_path / "site", tmp_path / "outside"
    site.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET host file")
    (site / "index.html").write_text("<h1>board</h1>")
    (site / "page.html").write_text("SAFE page")
    (site / "sub").mkdir()
    (site / "sub" / "secret.txt").write_text("SAFE sub")
    server = make_server(site, idle_timeout=5.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(site, outside, stop), daemon=True)
    swapper.start()
    statuses: Counter[int] = Counter()
    leaked = 0
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        for i in range(1000):
            conn.request("GET", "/page.html" if i % 2 else "/sub/secret.txt")
            resp = conn.getresponse()
            body = resp.read()
            statuses[resp.status] += 1
            leaked += b"SECRET" in body
        conn.close()
    finally:
        stop.set()
        swapper.join(timeout=10)
        with deadline(10):
            server.shutdown()
        server.server_close()
    assert leaked == 0, statuses
    assert set(statuses) <= {200, 404}, statuses
    assert statuses[200] > 0 and statuses[404] > 0, f"the swap did not race: {statuses}"


SERVER = """
import logging, sys
from pathlib import Path
from harness.leaderboard.serve import make_server
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
server = make_server(Path(sys.argv[1]), idle_timeout=1.0)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_clients_that_stop_reading_do_not_deny_service_under_a_low_fd_limit(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>board</h1>")
    (site / "big.bin").write_bytes(os.urandom(4 << 20))
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(site)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_limit_fds,
    )  # fmt: skip
    stalled: list[socket.socket] = []
    try:
        port = int(proc.stdout.readline())
        for _ in range(300):  # more than the 256 descriptors the server may hold
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(f"GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                stalled.append(s)  # and never read
            except OSError:
                pass
        served = None
        for _ in range(20):  # each try bounded by its timeout; no time is asserted
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/index.html")
                resp = conn.getresponse()
                served = (resp.status, resp.read())
                conn.close()
                break
            except OSError:
                continue
        assert served == (200, b"<h1>board</h1>")
    finally:
        for s in stalled:
            s.close()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-2000:]
    assert len(err.splitlines()) <= 10, err[-2000:]
