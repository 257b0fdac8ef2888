"""Where suites that train models from a seed run their training: one thread or a process pool.

With `workers` > 1 each spawned process fixes torch to cpu_count // workers threads before it
trains, so the pool does not oversubscribe the cores and a run is deterministic for its seed and
thread count. With one worker, runs train one at a time in a thread of this process.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from typing import Any, TypeVar

T = TypeVar("T")

_executors: dict[int, Executor] = {}


def executor(workers: int) -> Executor:
    """One thread (workers=1) or a pool of spawned processes, shared by a task's samples."""
    if workers not in _executors:
        if workers == 1:
            _executors[workers] = ThreadPoolExecutor(max_workers=1)
        else:
            _executors[workers] = ProcessPoolExecutor(
                max_workers=workers, mp_context=get_context("spawn")
            )
    return _executors[workers]


def _with_threads(fn: Callable[..., T], threads: int, args: tuple[Any, ...]) -> T:
    """Worker entry point: fix the thread count (for determinism), then run."""
    import torch

    torch.set_num_threads(threads)
    return fn(*args)


async def run_training(workers: int, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn(*args)` (picklable, for workers > 1) in the pool and await its result."""
    if workers > 1:
        threads = max(1, (os.cpu_count() or 1) // workers)
        future = executor(workers).submit(_with_threads, fn, threads, args)
    else:
        future = executor(1).submit(fn, *args)
    return await asyncio.wrap_future(future)
