"""Run a round's calls at once and keep their order (asyncio or trio, through anyio)."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TypeVar

import anyio

T = TypeVar("T")


async def gather(jobs: Sequence[Awaitable[T]]) -> list[T]:
    """Await every job concurrently; results in the jobs' order. One job runs inline."""
    if len(jobs) == 1:
        return [await jobs[0]]
    results: list[T | None] = [None] * len(jobs)

    async def run(i: int, job: Awaitable[T]) -> None:
        results[i] = await job

    async with anyio.create_task_group() as tg:
        for i, job in enumerate(jobs):
            tg.start_soon(run, i, job)
    return results  # type: ignore[return-value]
