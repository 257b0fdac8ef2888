"""Parameter selection: the least distortion that reaches a target power (reconstructed, ours).

Paper (A) claims a constrained choice of (gamma, delta) on the power-distortion Pareto front;
its rule was not available, so this one is ours (specs/provenance.md §2): for each gamma of a
grid, delta*(gamma) is the least delta whose predicted power at T scored tokens reaches
1 - beta (bisection: power rises with delta), D(gamma) the mean KL per token at delta*(gamma);
the choice is argmin D. A gamma whose power cannot reach the target even as delta grows without
bound is reported infeasible. Every gamma's row is kept: the winner depends on the distortion
measure, so the report shows the whole D(gamma) curve.

Two position models predict power and KL at a delta:
- `UniformPositions`: the entropy model U_k (every position alike);
- `CalibrationPositions`: the green masses G of an unwatermarked model's next-token
  distributions along calibration texts, under a set of random masks (Monte Carlo over keys).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harness.suites.provenance.detect import critical_count
from harness.suites.provenance.power import (
    exact_power,
    green_probability,
    kl,
    poisson_binomial_sf,
    uniform_model,
)

DELTA_MAX = 30.0  # the "delta -> inf" end of the search; pi(G) is then 1 wherever G > 0


class PositionModel(Protocol):
    """Predicted power and mean KL at a delta, for one gamma."""

    def power(self, delta: float) -> float:
        """Predicted power at `delta`."""
        ...

    def kl(self, delta: float) -> float:
        """Mean KL per token at `delta`, nats."""
        ...


@dataclass(frozen=True)
class UniformPositions:
    """U_k at (gamma, n, alpha): every scored position has the same green rate."""

    k: int
    gamma: float
    n: int
    alpha: float

    def power(self, delta: float) -> float:
        """Exact power of n positions at U_k's green rate."""
        rate = uniform_model(self.k, self.gamma, delta).green_rate
        return exact_power(rate, self.n, self.gamma, self.alpha)

    def kl(self, delta: float) -> float:
        """U_k's mean KL."""
        return uniform_model(self.k, self.gamma, delta).kl


@dataclass(frozen=True)
class CalibrationPositions:
    """Calibration texts' green masses under random masks.

    With the mass A of the successors U that a position's context had earlier in its text, and
    their green mass B, a scored position (x not in U) is green with probability
    e^d (G - B) / (1 + (e^d - 1) G - (A - B) - e^d B): the dedup correction, which is pi(G)
    where U is empty.

    Attributes:
        green_mass: (M, N, n) G: mask m, text i, its t-th scored position.
        gamma: The green fraction the masks were drawn at.
        alpha: Test level.
        seen_mass: (N, n) A, or None (no correction).
        seen_green: (M, N, n) B, or None.

    """

    green_mass: np.ndarray
    gamma: float
    alpha: float
    seen_mass: np.ndarray | None = None
    seen_green: np.ndarray | None = None

    def rates(self, delta: float) -> np.ndarray:
        """Key-averaged green probability of each scored position (N, n)."""
        g = self.green_mass
        if self.seen_mass is None or self.seen_green is None:
            return green_probability(g, delta).mean(0)
        e = math.exp(delta)
        a, b = self.seen_mass[None], self.seen_green
        denom = 1.0 + (e - 1.0) * g - (a - b) - e * b
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(denom > 1e-12, e * (g - b) / denom, green_probability(g, delta))
        return np.clip(rate, 0.0, 1.0).mean(0)

    def power(self, delta: float) -> float:
        """Mean over texts of the Poisson-binomial tail at the key-averaged green rates."""
        rates = self.rates(delta)  # (N, n)
        c = critical_count(rates.shape[1], self.gamma, self.alpha)
        return float(poisson_binomial_sf(rates, c).mean())

    def kl(self, delta: float) -> float:
        """Mean KL over masks, texts and positions."""
        return float(kl(self.green_mass, delta).mean())


@dataclass(frozen=True, slots=True)
class GammaChoice:
    """One gamma of the grid.

    Attributes:
        gamma: Green fraction.
        delta: delta*(gamma), the least delta reaching the target (nan: infeasible).
        kl: Mean KL per token at delta* (nan: infeasible).
        power: Predicted power at delta* (at DELTA_MAX when infeasible).
        feasible: Whether the target can be reached.

    """

    gamma: float
    delta: float
    kl: float
    power: float
    feasible: bool


@dataclass(frozen=True, slots=True)
class Selection:
    """The chosen (gamma*, delta*) and the whole D(gamma) curve.

    Attributes:
        rows: One per gamma, in grid order.
        target: The target power.
        chosen: The feasible row of least KL (None when none is feasible).

    """

    rows: tuple[GammaChoice, ...]
    target: float
    chosen: GammaChoice | None

    def summary(self) -> str:
        """One line per gamma, then the choice."""
        lines = [
            f"gamma={r.gamma:g}: " + (f"delta*={r.delta:.3f} KL={r.kl:.4f} power={r.power:.3f}"
                                      if r.feasible else f"infeasible (power {r.power:.3f} at "
                                      f"delta={DELTA_MAX:g})")
            for r in self.rows
        ]  # fmt: skip
        pick = self.chosen
        lines.append("chosen: none" if pick is None else
                     f"chosen: gamma={pick.gamma:g}, delta={pick.delta:.3f}")  # fmt: skip
        return "\n".join(lines)


def least_delta(model: PositionModel, target: float, tol: float = 1e-4) -> float:
    """The least delta in [0, DELTA_MAX] with power >= target (bisection); nan if none."""
    if model.power(DELTA_MAX) < target:
        return math.nan
    if model.power(0.0) >= target:
        return 0.0
    low, high = 0.0, DELTA_MAX
    while high - low > tol:
        mid = 0.5 * (low + high)
        if model.power(mid) >= target:
            high = mid
        else:
            low = mid
    return high


def select(models: Sequence[tuple[float, PositionModel]], target: float) -> Selection:
    """delta*(gamma) and D(gamma) for each (gamma, model); the feasible gamma of least KL."""
    rows = []
    for gamma, model in models:
        delta = least_delta(model, target)
        if math.isnan(delta):
            rows.append(GammaChoice(gamma, math.nan, math.nan, model.power(DELTA_MAX), False))
        else:
            rows.append(GammaChoice(gamma, delta, model.kl(delta), model.power(delta), True))
    feasible = [r for r in rows if r.feasible]
    chosen = min(feasible, key=lambda r: r.kl) if feasible else None
    return Selection(tuple(rows), target, chosen)
