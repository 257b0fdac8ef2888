"""The slice a sample runs, handed from the solver to the policy provider (a context variable).

inspect-ai hands a provider only messages, so the solver binds the sample's workload here, as
the iwg suite binds its round; `serving/POLICY` reads it, simulates, and leaves its result.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from harness.suites.serving.simulator import ServerConfig, SimResult
from harness.suites.serving.trace import Workload


@dataclass
class Run:
    """One sample's simulation: what to run, and (filled in by the provider) what came out."""

    workload: Workload  # the slice's requests at its load
    server: ServerConfig  # the simulated server
    seed: int  # the sample's seed (SJF's prediction errors)
    result: SimResult | None = None  # set by the provider
    extras: dict[str, Any] = field(default_factory=dict)  # γ history, guard breaches


_current: ContextVar[Run | None] = ContextVar("harness_serving_run", default=None)


def bind_run(run: Run) -> None:
    """Make `run` the current sample's simulation (in this asyncio task)."""
    _current.set(run)


def current_run() -> Run | None:
    """The current sample's simulation, or None outside the suite's solver."""
    return _current.get()
