"""The `inspect_ai` entry point: importing it registers the harness suites, providers and scorers.

`inspect eval harness/aime` and `--model local/tiny-arith` resolve through it. The suites' tasks
register when the catalog imports them, so this module names no suite.
"""

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any

import inspect_ai.scorer
from inspect_ai.scorer import Scorer, scorer
from inspect_ai.util import registry_info

import harness.sandbox  # noqa: F401  (registers the `bwrap` sandbox)
from harness.models.providers import local, pdr, replay, scripted, sr  # noqa: F401
from harness.scorers.calibrated_judge import calibrated_judge  # noqa: F401
from harness.scorers.math_answer import math_answer  # noqa: F401
from harness.scorers.sage import sage  # noqa: F401
from harness.suco.provider import suco  # noqa: F401
from harness.suco.sapo_scorer import sapo  # noqa: F401
from harness.suites.catalog import all_suites

for _suite in all_suites().values():
    _suite.tasks  # noqa: B018  (importing the tasks registers them)


def _harness_scorers() -> Iterator[Callable[..., Scorer]]:
    """The @scorer factories that the loaded harness modules define, namespaced `harness/`."""
    for module_name, module in list(sys.modules.items()):
        if module_name != "harness" and not module_name.startswith("harness."):
            continue
        for obj in list(vars(module).values()):
            if not inspect.isfunction(obj) or obj.__module__ != module_name:
                continue
            try:
                info = registry_info(obj)
            except ValueError:  # a plain function
                continue
            if info.type == "scorer" and info.name.startswith("harness/"):
                yield obj


def _register_scorers_by_bare_name() -> None:
    """Let `inspect score LOG` find our scorers by the bare name a log records.

    inspect namespaces a scorer by the installed package of the function it decorates
    (`harness/NAME`), records `NAME` in the log, and resolves a bare name only among scorers
    outside any package, so `inspect score` on a harness log failed with "couldn't be loaded".
    inspect loads every package's entry point (this module) when a command starts, so each
    harness scorer is registered here under its bare name too, through inspect's public
    `@scorer(name=...)` with the same metrics and metadata: the decorated factory is a
    `functools.partial`, which belongs to no package, so inspect keeps the name bare. A name
    inspect's own scorers use stays theirs. The version is pinned and
    `tests/test_inspect_entry_point.py` runs `inspect score` on our logs.
    """
    for factory in _harness_scorers():
        info = registry_info(factory)
        bare = info.name.removeprefix("harness/")
        if hasattr(inspect_ai.scorer, bare):
            continue
        metadata: dict[str, Any] = dict(info.metadata)
        metrics = metadata.pop("metrics")
        scorer(metrics, name=bare, **metadata)(functools.partial(factory))


_register_scorers_by_bare_name()
