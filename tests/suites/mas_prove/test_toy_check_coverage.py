"""Monte-Carlo coverage of the toy-model check's cluster-bootstrap intervals (a new kind).

Data are drawn from the toy model itself (candidates independently right with probability p,
the verifier keeping a right one with probability a on mixed sets), so the true values are
known: p, a, toy(p, a) for both the predicted and the observed kept-right rate, and a
difference of 0. At the sizes the report prints intervals for (50 and 100 problems), each
nominal 95% interval should cover about 95% of the time.
"""

import numpy as np
import pytest

from harness.suites.mas_prove.ranking import toy_step_accuracy
from harness.suites.mas_prove.toy_check import MIN_CLUSTERS, toy_check


def _problem_counts(rng, problems: int, searches: int, p: float, a: float, n: int = 3):
    out = {}
    for i in range(problems):
        right = rng.random((searches, n)) < p  # (searches, N)
        count = right.sum(axis=1)
        mixed = (count > 0) & (count < n)
        skilled = mixed & (rng.random(searches) < a)
        out[f"p{i}"] = np.array(
            [searches * n, right.sum(), searches, mixed.sum(), skilled.sum(), (count == n).sum()],
            dtype=float,
        )
    return out


def test_below_the_minimum_no_interval_is_printed():
    counts = _problem_counts(np.random.default_rng(0), MIN_CLUSTERS - 1, 4, 0.7, 0.8)
    check = toy_check("x", 3, counts)
    assert not check.predicted.estimable and "not estimable" in check.predicted.method


@pytest.mark.slow
@pytest.mark.parametrize("problems", [50, 100])
def test_the_intervals_cover_95_percent(problems):
    rng = np.random.default_rng(problems)
    p, a, n, reps = 0.7, 0.8, 3, 300
    truth = {"p": p, "a": a, "predicted": toy_step_accuracy(p, a, n),
             "observed": toy_step_accuracy(p, a, n), "difference": 0.0}  # fmt: skip
    hits = dict.fromkeys(truth, 0)
    for r in range(reps):
        check = toy_check("x", n, _problem_counts(rng, problems, 4, p, a), n_resamples=500, seed=r)
        for name, value in truth.items():
            interval = getattr(check, name)
            hits[name] += interval.low <= value <= interval.high
    coverage = {k: v / reps for k, v in hits.items()}
    # 300 replications: the Monte-Carlo standard error at 95% is 1.3 points; allow 3.5 of them
    for name, value in coverage.items():
        assert 0.905 <= value <= 0.995, (name, coverage)
