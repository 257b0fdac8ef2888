"""A fake OpenAI-compatible /completions server on 127.0.0.1 that echoes prompt log-probs."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def step_prob(prompt: str) -> float:
    """Every token's probability grows with the 'Step' sentences before the answer."""
    return min(0.99, 0.2 + 0.25 * prompt.count("Step"))


def char_echo(body: dict[str, Any]) -> dict[str, Any]:
    """One token per character; the first has no log-prob, as OpenAI's echo gives."""
    prompt = body["prompt"]
    lp = math.log(step_prob(prompt))
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "text": prompt,
                "finish_reason": "length",
                "logprobs": {
                    "tokens": list(prompt),
                    "token_logprobs": [None] + [lp] * (len(prompt) - 1),
                    "text_offset": list(range(len(prompt))),
                    "top_logprobs": None,
                },
            }
        ],
    }


@dataclass
class FakeServer:
    base_url: str
    respond: Callable[[dict[str, Any]], dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    state = FakeServer("", char_echo)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state.requests.append(body)
                state.auth.append(self.headers.get("Authorization"))
            if self.path != "/v1/completions":
                self.send_response(404)
                self.end_headers()
                return
            payload = json.dumps(state.respond(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()
