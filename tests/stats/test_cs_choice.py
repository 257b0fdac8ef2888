"""The tighter confidence sequences: bets tuned to a planned n, and the asymptotic CS.

Each is checked for time-uniform coverage: a replication misses when its interval leaves the
true mean at any n up to the planned one (stricter than coverage at one stopping time). The
distributions are the hard ones for each: skewed 0/1 scores (p = 0.03), a heavy-tailed bounded
score (a Pareto with index 1.2 scaled into [0, 1]: most values near 0, a few near 1) and, for
the difference kind, the difference of two such scores. The default run takes a few hundred
replications and allows three Monte-Carlo standard errors above alpha; the `long` runs are
2,000 replications each at the n where the CS is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from harness.stats._asymptotic_cs import ASYMPTOTIC_MIN_N, AsymptoticCS, choose_cs, rho_for
from harness.stats._sequential import BettingCS

EPS = np.finfo(float).eps
Draw = Callable[[np.random.Generator, int], np.ndarray]


def skewed(rng: np.random.Generator, size: int) -> np.ndarray:
    """0/1 scores with mean 0.03."""
    return (rng.random(size) < 0.03).astype(float)


def heavy(rng: np.random.Generator, size: int) -> np.ndarray:
    """min(1, Pareto(1.2) / 40): a heavy right tail cut at 1."""
    return np.minimum(1.0, (rng.pareto(1.2, size) + 1.0) / 40.0)


def heavy_mean() -> float:
    """The mean of `heavy`, from 4 million draws (standard error about 1e-4)."""
    return float(heavy(np.random.default_rng(12345), 4_000_000).mean())


def skewed_difference(rng: np.random.Generator, size: int) -> np.ndarray:
    """A heavy score less a skewed one: a difference in [-1, 1]."""
    return heavy(rng, size) - skewed(rng, size)


def ever_missed(cs: BettingCS | AsymptoticCS, draw: Draw, truth: float, n: int, seed: int,
                start: int = 1) -> np.ndarray:  # fmt: skip
    """Per replication, whether the CS left `truth` at any n in [start, n]."""
    rng = np.random.default_rng(seed)
    size = cs.counts().size
    missed = np.zeros(size, bool)
    tol = 8 * EPS
    for t in range(1, n + 1):
        cs.update(draw(rng, size))
        if t >= start:
            low, high = cs.bounds()
            missed |= (low > truth + tol) | (high < truth - tol)
    return missed


def gate(alpha: float, reps: int) -> float:
    """alpha plus three Monte-Carlo standard errors at `reps` replications."""
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_planned_bets_cover_skewed_scores_uniformly() -> None:
    cs = BettingCS(alpha=0.05, batch=300, grid=np.linspace(0, 1, 101), planned=150)
    missed = ever_missed(cs, skewed, 0.03, 150, seed=1)
    assert missed.mean() <= gate(0.05, 300)


def test_planned_bets_are_narrower_at_the_planned_n() -> None:
    """At n = 1,000 of 0/1 scores near 0.5: narrower than the plug-in's, within 1.9x fixed-n."""
    rng = np.random.default_rng(2)
    x = (rng.random(1000) < 0.5).astype(float)
    plug = BettingCS(grid=np.linspace(0, 1, 501))
    tuned = BettingCS(planned=1000, grid=np.linspace(0, 1, 501))
    for v in x:
        plug.update(v)
        tuned.update(v)
    fixed = 2 * 1.96 * 0.5 / math.sqrt(1000)  # the fixed-n normal interval's width, 0.062
    assert tuned.interval().width < 0.8 * plug.interval().width
    assert tuned.interval().width < 1.9 * fixed
    assert "tuned to the planned n = 1000" in tuned.method
    assert "predictable plug-in" in plug.method


def test_asymptotic_boundary_is_the_normal_mixture() -> None:
    """The half-width at t = n* with sigma known: sqrt(2 (t r + 1) / (t^2 r) log(sqrt(t r + 1)
    / alpha)) sigma, r = rho^2 = (-2 log a + log(1 - 2 log a)) / n*; at alpha 0.05 and t = n*
    it is 3.035 sigma / sqrt(n*)."""
    n, alpha = 1000, 0.05
    r = rho_for(n, alpha) ** 2
    assert r * n == pytest.approx(-2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha)))
    cs = AsymptoticCS(alpha=alpha, planned=n)
    x = np.tile([0.0, 1.0], n // 2)
    for v in x:
        cs.update(v)
    low, high = cs.bounds()
    sigma = math.sqrt((0.25 + 0.25 * n) / (n + 1))  # the shrunk variance: exactly 0.25
    half = sigma * math.sqrt(2 * (n * r + 1) / (n**2 * r) * math.log(math.sqrt(n * r + 1) / alpha))
    assert high[0] - 0.5 == pytest.approx(half, rel=1e-12)
    assert 0.5 - low[0] == pytest.approx(half, rel=1e-12)
    assert half * math.sqrt(n) / sigma == pytest.approx(3.035, abs=5e-3)


def test_choose_cs_names_what_it_chose() -> None:
    assert choose_cs("auto", alpha=0.05).bets.planned is None  # type: ignore[union-attr]
    assert choose_cs("auto", alpha=0.05, planned=800).bets.planned == 800  # type: ignore[union-attr]
    small = choose_cs("asymptotic", alpha=0.05, planned=100)
    assert f"below n = {ASYMPTOTIC_MIN_N}" in small.method
    assert "below" not in choose_cs("asymptotic", alpha=0.05, planned=ASYMPTOTIC_MIN_N).method
    with pytest.raises(ValueError, match="one of"):
        choose_cs("normal", alpha=0.05)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="planned n"):
        choose_cs("asymptotic", alpha=0.05)
    with pytest.raises(ValueError, match="finite board"):
        choose_cs("asymptotic", alpha=0.05, planned=100, population=100)


@pytest.mark.long
@pytest.mark.parametrize("planned", [200, 2000])
@pytest.mark.parametrize("case", ["skewed", "heavy", "difference"])
def test_planned_bets_time_uniform_coverage_long(case: str, planned: int) -> None:
    """2,000 replications, every n up to the planned one, at alpha 0.05 and at 0.05 / 45."""
    draw, kind = {"skewed": (skewed, "mean"), "heavy": (heavy, "mean"),
                  "difference": (skewed_difference, "difference")}[case]  # fmt: skip
    truth = {"skewed": 0.03, "heavy": heavy_mean(), "difference": heavy_mean() - 0.03}[case]
    for alpha in (0.05, 0.05 / 45):
        grid = np.union1d(np.linspace(-1 if kind == "difference" else 0, 1, 101), [truth])
        cs = BettingCS(alpha=alpha, kind=kind, batch=2000, grid=grid,  # type: ignore[arg-type]
                       planned=planned)  # fmt: skip
        missed = ever_missed(cs, draw, truth, planned, seed=planned)
        assert missed.mean() <= alpha + 3 * math.sqrt(alpha / 2000), (case, alpha, missed.mean())


@pytest.mark.long
@pytest.mark.parametrize("case", ["skewed", "heavy", "difference"])
def test_asymptotic_cs_time_uniform_coverage_from_its_min_n_long(case: str) -> None:
    """2,000 replications, every n from ASYMPTOTIC_MIN_N to 4 times it, at alpha 0.05."""
    draw, kind = {"skewed": (skewed, "mean"), "heavy": (heavy, "mean"),
                  "difference": (skewed_difference, "difference")}[case]  # fmt: skip
    truth = {"skewed": 0.03, "heavy": heavy_mean(), "difference": heavy_mean() - 0.03}[case]
    n = 4 * ASYMPTOTIC_MIN_N
    cs = AsymptoticCS(alpha=0.05, kind=kind, batch=2000, planned=n)  # type: ignore[arg-type]
    missed = ever_missed(cs, draw, truth, n, seed=7, start=ASYMPTOTIC_MIN_N)
    assert missed.mean() <= gate(0.05, 2000), (case, missed.mean())
