"""The library behind `harness eval`: the request, its checks, model and task building, the run.

`harness.eval.run(EvalRequest(...))` makes the one inspect `eval_set` call and returns an
`EvalResult` (whether every task finished, the summary rows, the logs read). Names load on
first use, so importing this package (as the CLI does) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.eval.build import build_models, build_tasks
    from harness.eval.checks import check
    from harness.eval.request import EvalRequest
    from harness.eval.roles import run_roles
    from harness.eval.runner import EvalResult, run
    from harness.eval.summary import short_labels

__all__ = [
    "EvalRequest",
    "EvalResult",
    "build_models",
    "build_tasks",
    "check",
    "run",
    "run_roles",
    "short_labels",
]

_HOMES = {
    "EvalRequest": "request",
    "EvalResult": "runner",
    "build_models": "build",
    "build_tasks": "build",
    "check": "checks",
    "run": "runner",
    "run_roles": "roles",
    "short_labels": "summary",
}


def __getattr__(name: str) -> Any:
    """The public name `name`, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'harness.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.eval.{home}"), name)
