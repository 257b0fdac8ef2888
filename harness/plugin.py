"""The `inspect_ai` entry point: importing it registers the harness suites and providers.

`inspect eval harness/aime` and `--model local/tiny-arith` resolve through it.
"""

import harness.sandbox  # noqa: F401  (registers the `bwrap` sandbox)
from harness.models.providers import local, pdr, replay, scripted, sr, suco  # noqa: F401
from harness.scorers.math_answer import math_answer  # noqa: F401
from harness.suco.sapo_scorer import sapo  # noqa: F401
from harness.suites.aime import aime, aime2024, aime2025  # noqa: F401
from harness.suites.arith.task import arith, first_integer_match  # noqa: F401
from harness.suites.k_parity.task import k_parity  # noqa: F401
from harness.suites.l2a.task import l2a_queries, l2a_recall  # noqa: F401
from harness.suites.lokra.task import lokra_fit, lokra_transfer  # noqa: F401
from harness.suites.swe_rebench.task import swe_rebench  # noqa: F401
from harness.suites.team.task import team  # noqa: F401
