"""Which sample a model call belongs to, for providers that answer per sample (replay, scripted).

inspect-ai does not hand a provider the sample id, so every harness task starts its solver chain
with `bind_sample()`, which records the id and epoch in a context variable. Each sample runs in
its own asyncio task, so the value is private to that sample's calls.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from inspect_ai.solver import Generate, Solver, TaskState, solver


@dataclass(frozen=True)
class SampleRef:
    """The sample a model call is made for."""

    id: str  # sample id, as a string
    epoch: int  # 1-based epoch


_current: ContextVar[SampleRef | None] = ContextVar("harness_current_sample", default=None)


def current_sample() -> SampleRef | None:
    """The sample being solved in this task, or None outside a harness task."""
    return _current.get()


def set_current_sample(state: TaskState) -> None:
    """Record the sample for the calls that follow in this asyncio task (scorers use it too)."""
    _current.set(SampleRef(id=str(state.sample_id), epoch=state.epoch))


@solver
def bind_sample() -> Solver:
    """Record the sample id and epoch for the providers that answer per sample."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        set_current_sample(state)
        return state

    return solve
