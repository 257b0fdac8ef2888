"""One inspect eval of one task with models in named roles, as data (a run spec, as HELM's).

A suite's own command (`Suite.commands`, for example `harness iwg synthesize`) parses its flags
into a `RoleEval` and returns it; the CLI runs it with the same model building as `harness
eval` (`harness.eval.run_roles`) and prints what `finish` says of the finished log. So a suite
builds no model and imports neither `harness.eval` nor `harness.cli`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelRole:
    """A role's model: its spec (`PROVIDER/NAME`) and its -M arguments."""

    spec: str
    args: dict[str, Any]


@dataclass(frozen=True)
class RoleEval:
    """The task, each role's model (the first is the eval's model), and where the log goes."""

    name: str  # what the eval is, for its messages ("synthesis")
    task: Any  # an inspect `Task`
    roles: dict[str, ModelRole]
    log_dir: str
    finish: Callable[[str], str]  # the finished log's path -> the line to print
    display: str | None = None  # inspect display: full, rich, plain, log, none
    max_connections: int = 8
