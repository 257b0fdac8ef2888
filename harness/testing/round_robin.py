"""A round-robin reverse proxy on loopback: one base URL in front of several OpenAI-style servers.

inspect's `openai-api/NAME/MODEL` provider sends one model's requests to one base URL
(`NAME_BASE_URL`); it has no list of them. To spread one model over several servers (vLLM on
each GPU node), a load balancer goes in front of them, and this is the smallest one, for tests:

    with fault_server() as a, fault_server() as b, round_robin([a.base_url, b.base_url]) as lb:
        env = {"POOL_BASE_URL": lb.base_url, "POOL_API_KEY": "k"}
        # harness eval --model openai-api/pool/tiny-arith
    lb.counts()  # requests forwarded, per upstream

Each request goes to the next upstream in turn, with its path, body and `Authorization` header;
the answer comes back as it arrives (streamed answers included), with its status and
`Retry-After`. An upstream that cannot be reached gives a 502, which a client retries; one that
breaks off an answer breaks off the client's connection too. In production use nginx, LiteLLM or
a router made for vLLM, which also take a node out of turn when it fails.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import Counter
from collections.abc import Iterator, Sequence

import aiohttp
from aiohttp import web

from harness.testing.loopback import LoopbackServer

_REQUEST_HEADERS = ("Authorization", "Content-Type", "Accept")
_RESPONSE_HEADERS = ("Content-Type", "Retry-After")


class RoundRobin(LoopbackServer):
    """The proxy; use `round_robin(...)` to start and stop it around a block."""

    name = "round-robin proxy"

    def __init__(self, upstreams: Sequence[str]) -> None:
        if not upstreams:
            raise ValueError("round_robin needs at least one upstream base URL")
        super().__init__()
        self.upstreams = [u.rstrip("/") for u in upstreams]  # base URLs ending in /v1
        self._turn = itertools.cycle(self.upstreams)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._session: aiohttp.ClientSession | None = None

    def counts(self) -> dict[str, int]:
        """Requests forwarded so far, per upstream (every upstream present, 0 if none)."""
        with self._lock:
            return {u: self._counts[u] for u in self.upstreams}

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/v1/{tail:.*}", self._forward)

        async def open_session(app: web.Application) -> None:
            self._session = aiohttp.ClientSession()

        async def close_session(app: web.Application) -> None:
            if self._session is not None:
                await self._session.close()

        app.on_startup.append(open_session)
        app.on_cleanup.append(close_session)
        return app

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            upstream = next(self._turn)
            self._counts[upstream] += 1
        assert self._session is not None
        url = f"{upstream}/{request.match_info['tail']}"
        headers = {h: request.headers[h] for h in _REQUEST_HEADERS if h in request.headers}
        try:
            async with self._session.request(
                request.method, url, data=await request.read(), headers=headers
            ) as answer:
                passed = {h: answer.headers[h] for h in _RESPONSE_HEADERS if h in answer.headers}
                response = web.StreamResponse(status=answer.status, headers=passed)
                await response.prepare(request)
                try:
                    async for chunk in answer.content.iter_any():
                        await response.write(chunk)
                except aiohttp.ClientError:  # the upstream broke off: so does the client's answer
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                await response.write_eof()
                return response
        except aiohttp.ClientError as ex:  # not reached, or reset before any answer
            body = {"error": {"message": f"upstream {upstream}: {ex}", "code": 502}}
            return web.json_response(body, status=502)


@contextlib.contextmanager
def round_robin(upstreams: Sequence[str]) -> Iterator[RoundRobin]:
    """A started `RoundRobin(upstreams)`, stopped when the block ends."""
    proxy = RoundRobin(upstreams)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


__all__ = ["RoundRobin", "round_robin"]
