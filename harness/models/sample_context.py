"""Which sample a model call belongs to, for providers that answer per sample (replay, scripted).

inspect-ai does not hand a provider the sample id, so every harness task starts its solver chain
with `bind_sample()`, which records the id and epoch in a context variable. Each sample runs in
its own asyncio task, so the value is private to that sample's calls.

`PerSampleAPI` is the provider that answers from what its task bound for the current sample
(`replay/` the sample, a suite's scripted providers their round or simulation), and refuses a call
made outside that task.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Generic, TypeVar

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolChoice, ToolInfo

from harness.errors import HarnessUsageError

Bound = TypeVar("Bound")


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


class PerSampleAPI(ModelAPI, Generic[Bound]):
    """A provider that answers each call from what its task bound for the current sample.

    A subclass names where that is (`bound`: a function returning a context variable's value, None
    outside the task), what a call made outside the task is told (`outside`, with `{model}` for
    the model's name, raised as `refusal`), and how it answers (`answer`).
    """

    bound: Callable[[], Bound | None]  # set as staticmethod(current_...)
    outside: str
    refusal: type[Exception] = HarnessUsageError

    @abstractmethod
    async def answer(self, found: Bound, input: list[ChatMessage]) -> ModelOutput:
        """The reply to `input`, from what the task bound."""

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Answer from what the task bound for the current sample; refuse outside the task."""
        found = self.bound()
        if found is None:
            raise self.refusal(self.outside.format(model=self.model_name))
        return await self.answer(found, input)
