"""Percentile ranks, δ(x) = δ0 + α·C, the EMA and the complexity pool."""

import numpy as np
import pytest
from scipy.stats import percentileofscore

from harness.suco.threshold import (
    ComplexityPool,
    adaptive_delta,
    ema_update,
    percentile_ranks,
)


def test_spec_vectors():
    c = percentile_ranks([100, 200, 200, 400])
    np.testing.assert_allclose(c, [0.25, 0.75, 0.75, 1.0], atol=1e-12)
    np.testing.assert_allclose(adaptive_delta(c), [0.675, 0.825, 0.825, 0.9], atol=1e-12)
    assert adaptive_delta(0.5) == pytest.approx(0.75)


def test_ranks_match_scipy_weak_percentile():
    # scipy's kind="weak" is exactly (1/N) sum 1[x_j <= x_i], in percent
    x = np.random.default_rng(1).integers(0, 20, size=57)
    expected = [percentileofscore(x, v, kind="weak") / 100 for v in x]
    np.testing.assert_allclose(percentile_ranks(x), expected, atol=1e-12)


def test_threshold_validation():
    with pytest.raises(ValueError, match="delta0 \\+ alpha <= 1"):
        adaptive_delta(0.5, delta0=0.8, alpha=0.3)
    with pytest.raises(ValueError, match="0 <= delta0"):
        adaptive_delta(0.5, delta0=-0.1, alpha=0.3)
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        adaptive_delta(1.5)
    assert adaptive_delta(1.0, delta0=0.7, alpha=0.3) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        percentile_ranks([])


def test_ema_vector():
    assert ema_update(1000, 600) == pytest.approx(960)
    assert ema_update(1000, 600, eta=1.0) == 600
    with pytest.raises(ValueError):
        ema_update(1, 1, eta=0)


def test_complexity_pool_follows_the_ema():
    pool = ComplexityPool()
    pool.update("a", [1000, 1000])
    pool.update("b", [500])
    pool.update("c", [800])
    assert pool.complexities() == {"a": 1.0, "b": pytest.approx(1 / 3), "c": pytest.approx(2 / 3)}
    # a's rollouts get short: z̄_a = 0.9 * 1000 + 0.1 * 0 = 900, still the longest
    assert pool.update("a", [0, 0]) == pytest.approx(900)
    for _ in range(5):  # 900 * 0.9^5 = 531.4, below c's 800
        pool.update("a", [0])
    assert pool.complexity("a") == pytest.approx(2 / 3)
    assert pool.delta("c") == pytest.approx(0.6 + 0.3 * 1.0)
    with pytest.raises(KeyError):
        pool.complexity("zzz")
