"""An OpenAI-compatible chat server on loopback that injects faults, for tests and benchmarks.

The harness reaches it as a user reaches a vLLM server, through inspect-ai's `openai-api/NAME/MODEL`
provider with `NAME_BASE_URL` and `NAME_API_KEY` set:

    with fault_server(FaultRates.uniform(0.2), seed=0) as server:
        env = {"FAULTY_BASE_URL": server.base_url, "FAULTY_API_KEY": "k"}
        # harness eval --model openai-api/faulty/tiny-arith --max-retries 3 --attempt-timeout 2
    server.stats().faults  # faults injected, per kind

It serves `POST /v1/chat/completions` (plain and streamed) and `GET /v1/models`, on 127.0.0.1 only,
from a thread that runs its own event loop. Answers are `answer="exact"` (default, instant): for
a prompt `A+B=` or `A-B=` the true result, except for one prompt in four (by a hash of its text),
which gets the result plus one, so a fault-free score is about 0.75 and means something; any other
prompt is echoed. `answer="tiny-arith"` generates with `local/tiny-arith` in the server's process
instead. With `delay_s`, every request waits that long before its answer or fault, as a busy
server would, so a run lasts long enough to be interrupted.

Each request is one attempt of one sample, the sample being named by a hash of its messages.
Whether an attempt gets a fault, and which, is drawn from `(seed, sample, attempt number)`, so a
run gets the same faults whatever order its requests arrive in. The kinds are the fields of
`FaultRates`; all but `slow_stream` make the attempt fail. Prompts in `always_fail` get `http_500`
on every attempt, to exhaust a client's retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import random
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from harness.testing.loopback import LoopbackServer


@dataclass(frozen=True)
class FaultRates:
    """The probability of each kind of fault per request; they sum to at most 1."""

    rate_limit_retry_after: float = 0.0  # 429 with a `Retry-After` header
    rate_limit: float = 0.0  # 429 without one
    http_500: float = 0.0  # 500 Internal Server Error
    http_502: float = 0.0  # 502 Bad Gateway
    http_503: float = 0.0  # 503 Service Unavailable
    hang: float = 0.0  # no answer until `hang_s`, past the client's timeout
    truncated: float = 0.0  # a 200 whose body stops half-way (the connection closes)
    malformed_json: float = 0.0  # a 200 whose body is not JSON
    slow_stream: float = 0.0  # a correct answer, trickled out over `slow_s` seconds
    reset: float = 0.0  # the connection is reset (TCP RST) before any answer

    def __post_init__(self) -> None:
        for name, rate in self.as_dict().items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"FaultRates.{name} must be in [0, 1], got {rate}")
        if sum(self.as_dict().values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates sum to more than 1: {self.as_dict()}")

    @classmethod
    def uniform(cls, total: float) -> FaultRates:
        """`total` split evenly over every kind."""
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**dict.fromkeys(names, total / len(names)))

    def as_dict(self) -> dict[str, float]:
        """Rate by kind name."""
        return dataclasses.asdict(self)


KINDS = tuple(f.name for f in dataclasses.fields(FaultRates))
FAILING = frozenset(KINDS) - {"slow_stream"}  # kinds after which the attempt has no answer


@dataclass(frozen=True)
class FaultStats:
    """What the server saw: a snapshot taken by `FaultServer.stats()`."""

    requests: int  # chat-completion requests received
    faults: dict[str, int]  # faults injected, by kind (every kind present, 0 if none)
    outcomes: dict[str, tuple[str, ...]]  # per sample key: each attempt's fault kind or "ok"
    prompts: dict[str, str]  # per sample key: the text of its last user message
    models: dict[str, int]  # requests per `model` field, as the client named the model

    def attempts(self) -> dict[str, int]:
        """Attempts per sample prompt."""
        return {self.prompts[k]: len(v) for k, v in self.outcomes.items()}

    def unanswered(self) -> set[str]:
        """Prompts whose last attempt failed: a client that stopped there has no answer."""
        return {self.prompts[k] for k, v in self.outcomes.items() if v[-1] in FAILING}


def sample_key(messages: list[Any]) -> str:
    """A sample's name: the hash of its messages as the client sent them."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


_PROBLEM = re.compile(r"^\s*(-?\d+)\s*([+-])\s*(\d+)\s*=\s*$")


def exact_answer(prompt: str) -> str:
    """The deterministic answer: `A+B=` or `A-B=` solved, plus one for a quarter of the prompts."""
    found = _PROBLEM.match(prompt)
    if not found:
        return prompt
    a, op, b = int(found.group(1)), found.group(2), int(found.group(3))
    value = a + b if op == "+" else a - b
    wrong = hashlib.sha256(prompt.encode()).digest()[0] % 4 == 0
    return str(value + 1 if wrong else value)


class FaultServer(LoopbackServer):
    """The server; use `fault_server(...)` to start and stop it around a block."""

    name = "fault server"

    def __init__(
        self,
        rates: FaultRates = FaultRates(),
        *,
        seed: int = 0,
        answer: Literal["exact", "tiny-arith"] = "exact",
        api_key: str | None = None,
        always_fail: frozenset[str] = frozenset(),
        hang_s: float = 60.0,
        slow_s: float = 0.5,
        retry_after_s: int = 1,
        delay_s: float = 0.0,
    ) -> None:
        if answer not in ("exact", "tiny-arith"):
            raise ValueError(f"answer must be 'exact' or 'tiny-arith', got {answer!r}")
        if delay_s < 0:
            raise ValueError(f"delay_s must be at least 0, got {delay_s}")
        super().__init__()
        self.rates = rates
        self.seed = seed
        self.answer = answer
        self.api_key = api_key  # when set, requests must carry it as a bearer token
        self.always_fail = always_fail
        self.hang_s = hang_s  # a hang lasts this long, or until the server stops
        self.slow_s = slow_s  # a slow stream takes this long in all
        self.retry_after_s = retry_after_s  # the Retry-After header's value
        self.delay_s = delay_s  # every request waits this long before its answer or fault
        self._lock = threading.Lock()
        self._requests = 0
        self._faults: Counter[str] = Counter()
        self._outcomes: dict[str, list[str]] = {}
        self._prompts: dict[str, str] = {}
        self._model_counts: Counter[str] = Counter()
        self._local: Any = None
        self._stopping: asyncio.Event | None = None

    def stats(self) -> FaultStats:
        """A snapshot of the counts so far."""
        with self._lock:
            return FaultStats(
                requests=self._requests,
                faults={k: self._faults[k] for k in KINDS},
                outcomes={k: tuple(v) for k, v in self._outcomes.items()},
                prompts=dict(self._prompts),
                models=dict(self._model_counts),
            )

    def start(self) -> None:
        """Load the answering model if any, then serve (`stop()` ends hangs first)."""
        if self.answer == "tiny-arith":
            from harness.models.local import LocalTorchAPI

            self._local = LocalTorchAPI("tiny-arith")
        super().start()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)

        async def startup(app: web.Application) -> None:
            self._stopping = asyncio.Event()

        async def end_hangs(app: web.Application) -> None:
            assert self._stopping is not None
            self._stopping.set()

        app.on_startup.append(startup)
        app.on_shutdown.append(end_hangs)
        return app

    def _draw(self, key: str, prompt: str, model: str) -> str:
        """Record one attempt of sample `key` and return its fault kind, or "ok"."""
        with self._lock:
            self._requests += 1
            self._model_counts[model] += 1
            attempt = len(self._outcomes.setdefault(key, []))
            self._prompts[key] = prompt
            kind = "ok"
            if prompt in self.always_fail:
                kind = "http_500"
            else:
                u = random.Random(f"{self.seed}:{key}:{attempt}").random()
                for name, rate in self.rates.as_dict().items():
                    if u < rate:
                        kind = name
                        break
                    u -= rate
            self._outcomes[key].append(kind)
            if kind != "ok":
                self._faults[kind] += 1
            return kind

    async def _models(self, request: web.Request) -> web.Response:
        models = ["tiny-arith"]
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "harness"} for m in models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            return _error(401, "invalid api key")
        body = await request.json()
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        prompt = _text(users[-1].get("content")) if users else ""
        kind = self._draw(sample_key(messages), prompt, str(body.get("model", "")))
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        if kind in ("rate_limit_retry_after", "rate_limit"):
            headers = {"Retry-After": str(self.retry_after_s)} if kind.endswith("after") else {}
            return _error(429, "rate limited (injected)", headers)
        if kind.startswith("http_"):
            return _error(int(kind[5:]), f"{kind} (injected)")
        if kind == "reset":
            _reset(request)
            return web.Response()  # never sent: the connection is gone
        if kind == "hang":
            assert self._stopping is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.hang_s)
            return _error(504, "hung (injected)")
        text = await self._answer(
            prompt, body.get("max_tokens") or body.get("max_completion_tokens")
        )
        completion = _completion(body.get("model", ""), prompt, text)
        if body.get("stream"):
            return await self._stream(request, completion, kind == "slow_stream")
        payload = json.dumps(completion).encode()
        if kind == "malformed_json":
            payload = payload[: len(payload) // 2] + b"<not json"
        elif kind in ("truncated", "slow_stream"):
            pieces = 2 if kind == "truncated" else 8
            return await self._trickle(request, payload, pieces, kind == "truncated")
        return web.Response(body=payload, content_type="application/json")

    async def _answer(self, prompt: str, max_tokens: int | None) -> str:
        if self._local is None:
            return exact_answer(prompt)
        from inspect_ai.model import ChatMessageUser, GenerateConfig

        config = GenerateConfig(max_tokens=max_tokens or 16, temperature=0.0)
        out = await self._local.generate([ChatMessageUser(content=prompt)], [], "none", config)
        return out.completion

    async def _trickle(
        self, request: web.Request, payload: bytes, pieces: int, cut: bool
    ) -> web.StreamResponse:
        """Send `payload` in pieces `slow_s / pieces` apart, or cut it after the first half."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(payload)
        await response.prepare(request)
        size = -(-len(payload) // pieces)
        for start in range(0, len(payload), size):
            await response.write(payload[start : start + size])
            if cut:
                _reset(request)
                return response
            await asyncio.sleep(self.slow_s / pieces)
        await response.write_eof()
        return response

    async def _stream(
        self, request: web.Request, completion: dict[str, Any], slow: bool
    ) -> web.StreamResponse:
        """Server-sent chunks, one per character of the answer, then usage and `[DONE]`."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        text = completion["choices"][0]["message"]["content"]
        base = {k: completion[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        deltas = [{"role": "assistant", "content": ""}] + [{"content": c} for c in text]
        for i, delta in enumerate(deltas):
            last = i == len(deltas) - 1
            choice = {"index": 0, "delta": delta, "finish_reason": "stop" if last else None}
            await response.write(_sse(base | {"choices": [choice]}))
            if slow:
                await asyncio.sleep(self.slow_s / len(deltas))
        await response.write(_sse(base | {"choices": [], "usage": completion["usage"]}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def _completion(model: str, prompt: str, text: str) -> dict[str, Any]:
    usage = {"prompt_tokens": len(prompt), "completion_tokens": len(text)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-{hashlib.sha256(prompt.encode()).hexdigest()[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return web.json_response(body, status=status, headers=headers)


def _sse(chunk: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _reset(request: web.Request) -> None:
    """Close the connection with a TCP reset (SO_LINGER 0) rather than a clean FIN."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


@contextlib.contextmanager
def fault_server(rates: FaultRates = FaultRates(), **options: Any) -> Iterator[FaultServer]:
    """A started `FaultServer(rates, **options)`, stopped when the block ends."""
    server = FaultServer(rates, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["FAILING", "KINDS", "FaultRates", "FaultServer", "FaultStats", "fault_server"]
