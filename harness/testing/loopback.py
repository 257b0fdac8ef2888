"""An aiohttp application served on a free 127.0.0.1 port by its own thread and event loop.

The test servers (`fault_server`, `round_robin`) run beside code that blocks (a `harness eval`
in the test's thread), so each gets a thread of its own: they subclass `LoopbackServer` and
make their application in `_app()`. Their per-loop state goes in the application's
`on_startup`, `on_shutdown` (ending long requests: it runs before the handlers are waited for)
and `on_cleanup` hooks, which run in the server's loop.
"""

from __future__ import annotations

import asyncio
import socket
import threading

from aiohttp import web


class LoopbackServer:
    """Serves `self._app()` on 127.0.0.1; `start()`, then `stop()`."""

    name = "loopback server"

    def __init__(self) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        """The base URL to give a client: `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _app(self) -> web.Application:
        raise NotImplementedError

    def start(self) -> None:
        """Bind a free loopback port and serve from a new thread; wait until it serves."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(sock, ready), name=self.name, daemon=True
        )
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError(f"the {self.name} did not start within 30 s")

    def stop(self) -> None:
        """Run the app's shutdown and cleanup hooks, close the server and join its thread."""
        if self._loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        self._thread.join(30)
        self._loop = self._thread = None

    def _serve(self, sock: socket.socket, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self._app(), access_log=None, handler_cancellation=True)

        async def setup() -> None:
            assert self._runner is not None
            await self._runner.setup()
            await web.SockSite(self._runner, sock).start()

        self._loop.run_until_complete(setup())
        ready.set()
        self._loop.run_forever()
        self._loop.close()

    async def _shutdown(self) -> None:
        assert self._runner is not None and self._loop is not None
        await self._runner.cleanup()
        self._loop.call_soon(self._loop.stop)
