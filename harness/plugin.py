"""The `inspect_ai` entry point: importing it registers the harness suites and providers.

`inspect eval harness/aime` and `--model local/tiny-arith` resolve through it. The suites' tasks
register when the catalog imports them, so this module names no suite.
"""

import harness.sandbox  # noqa: F401  (registers the `bwrap` sandbox)
from harness.models.providers import local, pdr, replay, scripted, sr, suco  # noqa: F401
from harness.scorers.calibrated_judge import calibrated_judge  # noqa: F401
from harness.scorers.math_answer import math_answer  # noqa: F401
from harness.scorers.sage import sage  # noqa: F401
from harness.suco.sapo_scorer import sapo  # noqa: F401
from harness.suites.catalog import all_suites

for _suite in all_suites().values():
    _suite.tasks  # noqa: B018  (importing the tasks registers them)


def _alias_scorers_by_bare_name() -> None:
    """Let `inspect score LOG` find our scorers by the bare name a log records.

    inspect registers a packaged scorer as `harness/NAME` but records `NAME` in the log, and
    resolves a bare name only among its own scorers, so `inspect score` on a harness log failed
    with "couldn't be loaded". inspect loads every package's entry point (this module) when a
    command starts, so each harness scorer is registered here under its bare name too, unless
    inspect has a scorer of that name. inspect-ai's registry has no public call for this; the
    version is pinned and `tests/test_inspect_entry_point.py` runs `inspect score` on our logs.
    """
    from inspect_ai._util import registry

    table = registry._registry
    for key, obj in list(table.items()):
        kind, _, name = key.partition(":")
        if kind != "scorer" or not name.startswith("harness/"):
            continue
        bare = name.removeprefix("harness/")
        if f"scorer:{bare}" not in table and f"scorer:inspect_ai/{bare}" not in table:
            table[f"scorer:{bare}"] = obj


_alias_scorers_by_bare_name()
