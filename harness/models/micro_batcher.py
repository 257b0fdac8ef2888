"""A micro-batcher: concurrent requests go to one worker thread that runs them in batches.

inspect-ai calls a provider once per sample, concurrently. The worker takes whatever requests
are waiting when it is free (up to `max_batch`), groups them by sampling settings, and runs each
group as one batch. It never waits for a batch to fill beyond a few milliseconds, unlike the
built-in `hf/` provider, which waits two seconds. If a batch raises, its requests are retried one
by one, so a request that breaks the model costs that request alone.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

Req = TypeVar("Req")
Res = TypeVar("Res")


class MicroBatcher(Generic[Req, Res]):
    """Runs `run_batch` on groups of requests in a daemon thread."""

    def __init__(
        self,
        run_batch: Callable[[list[Req]], list[Res]],
        key: Callable[[Req], Hashable],
        max_batch: int = 32,
        gather_s: float = 0.002,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._run_batch = run_batch
        self._key = key
        self._max_batch = max_batch
        self._gather_s = gather_s
        self._queue: queue.Queue[tuple[Req, Future[Res]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.batch_sizes: list[int] = []  # sizes of the batches run, for tests and benchmarks

    async def submit(self, request: Req) -> Res:
        """Queue a request and wait for its result without blocking the event loop."""
        self._ensure_thread()
        fut: Future[Res] = Future()
        self._queue.put((request, fut))
        return await asyncio.wrap_future(fut)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True, name="harness-mb")
                self._thread.start()

    def _loop(self) -> None:
        while True:
            pending = [self._queue.get()]
            deadline = time.monotonic() + self._gather_s
            while len(pending) < self._max_batch:
                try:
                    pending.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            groups: dict[Hashable, list[tuple[Req, Future[Res]]]] = {}
            for item in pending:
                groups.setdefault(self._key(item[0]), []).append(item)
            for group in groups.values():
                self._run_group(group)

    def _run_group(self, group: list[tuple[Req, Future[Res]]]) -> None:
        live = [(r, f) for r, f in group if f.set_running_or_notify_cancel()]
        if not live:
            return
        self.batch_sizes.append(len(live))
        try:
            results = self._run_batch([r for r, _ in live])
        except Exception as batch_error:
            if len(live) == 1:
                live[0][1].set_exception(batch_error)
                return
            for r, f in live:  # isolate the request that breaks the batch
                try:
                    f.set_result(self._run_batch([r])[0])
                except Exception as ex:
                    f.set_exception(ex)
            return
        for (_, f), res in zip(live, results, strict=True):
            f.set_result(res)
