"""The `inspect_ai` entry point: importing it registers the harness suites and providers.

`inspect eval harness/aime` and `--model local/tiny-arith` resolve through it. The suites' tasks
register when the catalog imports them, so this module names no suite.
"""

import harness.sandbox  # noqa: F401  (registers the `bwrap` sandbox)
from harness.models.providers import local, pdr, replay, scripted, sr, suco  # noqa: F401
from harness.scorers.math_answer import math_answer  # noqa: F401
from harness.suco.sapo_scorer import sapo  # noqa: F401
from harness.suites.catalog import all_suites

for _suite in all_suites().values():
    _suite.tasks  # noqa: B018  (importing the tasks registers them)
