"""Intervals that respect the design's support (`harness.stats._compare.estimate`, `one_sided`).

A quantity that cannot pass one end (seconds, tokens, an entropy: >= 0) gets a t interval on the
log scale of its distance from that end. It never passes the end, and it covers at least as
well as the plain t interval, which is what it replaces; both are checked here by Monte Carlo
at the n such intervals are printed (a few seeds, a few slices: 3 to 20 units).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats._compare import estimate
from harness.stats._design import POSITIVE, REAL, Design

POSITIVE_SEED = Design("seed", "unbounded", bounds=POSITIVE)
NEGATIVE_SEED = Design("seed", "unbounded", bounds=(-math.inf, 2.0), direction="lower")
REAL_SEED = Design("seed", "unbounded", bounds=REAL)


def _coverage(design: Design, draw, truth: float, n: int, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        ci = estimate(design, draw(rng, n))
        hits += ci.low <= truth <= ci.high
    return hits / reps


def _exponential(rng, n):
    return rng.exponential(1.0, n)


def _lognormal(rng, n):
    return rng.lognormal(0.0, 0.5, n)


@pytest.mark.parametrize("n", [3, 5, 10, 20])
def test_a_positive_mean_never_goes_below_zero(n):
    rng = np.random.default_rng(n)
    for _ in range(200):
        x = rng.exponential(0.05, n) * (rng.random(n) < 0.5)  # many zeros, a few small values
        ci = estimate(POSITIVE_SEED, x)
        assert 0.0 <= ci.low <= ci.estimate <= ci.high, (x, ci)
        assert "log scale" in ci.method


def test_the_finite_end_may_be_the_upper_one():
    x = 2.0 - np.random.default_rng(1).exponential(1.0, 6)
    ci = estimate(NEGATIVE_SEED, x)
    assert ci.low <= ci.estimate <= ci.high <= 2.0


def test_every_value_at_the_end_gives_the_point():
    ci = estimate(POSITIVE_SEED, [0.0, 0.0, 0.0, 0.0])
    assert (ci.low, ci.estimate, ci.high) == (0.0, 0.0, 0.0)


def test_values_outside_the_declared_support_say_so():
    ci = estimate(POSITIVE_SEED, [1.0, -2.0, 3.0])
    assert "leave the declared support" in ci.method


@pytest.mark.parametrize(("draw", "truth"), [(_exponential, 1.0), (_lognormal, math.exp(0.125))])
@pytest.mark.parametrize("n", [5, 20])
def test_coverage_at_small_n(draw, truth, n):
    reps = 400
    got = _coverage(POSITIVE_SEED, draw, truth, n, reps, seed=n)
    plain = _coverage(REAL_SEED, draw, truth, n, reps, seed=n)  # the same data sets
    # measured over 2,000 data sets: 0.93 (exponential) and 0.94 (lognormal) at n = 5, 0.94
    # and 0.95 at n = 20: short of 95% at small n under skew, as docs/statistics.md says;
    # the gate is that level less three Monte-Carlo standard errors
    assert got >= 0.93 - 3 * math.sqrt(0.07 * 0.93 / reps), got
    assert got >= plain  # never worse than the t interval it replaces


@pytest.mark.long
@pytest.mark.parametrize(("draw", "truth"), [(_exponential, 1.0), (_lognormal, math.exp(0.125))])
@pytest.mark.parametrize("n", [3, 5, 10, 20])
def test_coverage_over_4000_data_sets(draw, truth, n):
    reps = 4000
    got = _coverage(POSITIVE_SEED, draw, truth, n, reps, seed=100 + n)
    assert got >= 0.92, got  # measured 0.93-0.95; a heavy tail (lognormal sigma 1) is shorter
