"""UniBoost's priority and its γ-Ada controller, from the authors' SGLang scheduling module.

Requests are served in ascending Φ_i = a_i − b_γ(w_i), with

    b_γ(w) = (1/γ)·ln(1/(1 − e^{−γw})) = −ln(−expm1(−γw))/γ,

a_i the time (s) the request entered the wait queue and w_i = α·(uncached tokens), α = 64 µs per
token. w ≤ 0 gives b = 1e9 (the request goes first). γ → ∞ is FCFS; γ → 0 is SJF on w.

The controller (`GammaAda`) keeps the end-to-end latencies of the last 2000 finished requests;
every 5 s, with at least 200 of them, it moves γ by β = 0.3 towards γ_max/(1 + s·max(r − 1, 0)),
r = t99/t95, s = 4, and clamps it to [1, 200].

References:
    Y. Li et al., "Beyond Prediction: Tail-Aware Scheduling for LLM Inference", ICML 2026
    (arXiv 2606.18431); authors' code `yl3469/sglang`. γ-Boost: G. Yu and Z. Scully,
    SIGMETRICS 2024.

"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from harness.errors import HarnessUsageError

ALPHA = 64e-6  # seconds of work per uncached token (the authors' default)
FIRST = 1e9  # b for w <= 0: such a request goes first (the authors' constant)


def boost(w: float, gamma: float) -> float:
    """b_γ(w) in seconds, in the stable form −ln(−expm1(−γw))/γ.

    For γw ≤ ln 2, `expm1` keeps 1 − e^{−γw} exact (no cancellation: γw = 1e-12 gives
    ln(1e12)/γ); above it, −log1p(−e^{−γw}) keeps the small result's relative precision
    (γw = 50 gives e^{−50}/γ, not 0), and e^{−γw} only underflows to 0, never overflows.
    w <= 0 gives 1e9.

    Raises:
        ValueError: γ is not a positive finite number (a bug: callers validate user input).

    """
    if not (gamma > 0 and math.isfinite(gamma)):
        raise ValueError(f"gamma must be positive and finite, got {gamma}")
    if w <= 0:
        return FIRST
    x = gamma * w
    if x == 0.0:  # γw underflowed: b = −ln(γw)/γ to double precision, in logs
        return -(math.log(gamma) + math.log(w)) / gamma
    if x > math.log(2.0):
        return -math.log1p(-math.exp(-x)) / gamma
    return -math.log(-math.expm1(-x)) / gamma


def priority(entered: float, w: float, gamma: float) -> float:
    """Φ = a − b_γ(w): smaller is served first."""
    return entered - boost(w, gamma)


@dataclass(frozen=True, slots=True)
class GammaUpdate:
    """One γ-Ada update.

    Attributes:
        time: Simulated time of the update (s).
        gamma: γ after the update (1/s).
        ratio: r = t99/t95 of the buffer's latencies.
        target: γ_max/(1 + s·max(r − 1, 0)).

    """

    time: float
    gamma: float
    ratio: float
    target: float


@dataclass(frozen=True, slots=True)
class GammaAdaConfig:
    """The controller's constants (the authors' defaults)."""

    gamma0: float = 10.0  # starting γ (1/s)
    gamma_min: float = 1.0  # clamp (1/s)
    gamma_max: float = 200.0  # clamp, and the target at a flat tail (1/s)
    sensitivity: float = 4.0  # s in the target
    beta: float = 0.3  # step towards the target
    period: float = 5.0  # seconds between updates
    window: int = 2000  # ring buffer of finished requests' latencies
    min_samples: int = 200  # no update below this many

    def __post_init__(self) -> None:
        """Refuse constants that make no controller."""
        if not 0 < self.gamma_min <= self.gamma0 <= self.gamma_max < math.inf:
            raise HarnessUsageError(
                f"gamma-ada: need 0 < gamma_min <= gamma0 <= gamma_max, got "
                f"{self.gamma_min}, {self.gamma0}, {self.gamma_max}"
            )
        if not 0 < self.beta <= 1 or self.sensitivity < 0 or self.period <= 0:
            raise HarnessUsageError("gamma-ada: need 0 < beta <= 1, sensitivity >= 0, period > 0")
        if not 1 <= self.min_samples <= self.window:
            raise HarnessUsageError("gamma-ada: need 1 <= min_samples <= window")


def target_gamma(ratio: float, config: GammaAdaConfig) -> float:
    """γ_max/(1 + s·max(r − 1, 0))."""
    return config.gamma_max / (1.0 + config.sensitivity * max(ratio - 1.0, 0.0))


def step_gamma(gamma: float, ratio: float, config: GammaAdaConfig) -> float:
    """One update: (1 − β)γ + β·target, clamped to [γ_min, γ_max]."""
    moved = (1.0 - config.beta) * gamma + config.beta * target_gamma(ratio, config)
    return min(max(moved, config.gamma_min), config.gamma_max)


class GammaAda:
    """The γ-Ada controller, ticked by the simulator's clock instead of a thread."""

    def __init__(self, config: GammaAdaConfig) -> None:
        """A controller at γ0 with an empty buffer; the first update is due at `period`."""
        self.config = config
        self.gamma = config.gamma0
        self._latencies: deque[float] = deque(maxlen=config.window)
        self.next_due = config.period
        self.history: list[GammaUpdate] = []

    def record(self, latency: float) -> None:
        """A finished, non-aborted request's end-to-end latency (s)."""
        self._latencies.append(latency)

    def tick(self, now: float) -> bool:
        """Run every update due by `now`; True when γ changed."""
        changed = False
        while now >= self.next_due:
            if len(self._latencies) >= self.config.min_samples:
                t95, t99 = np.percentile(np.fromiter(self._latencies, float), [95, 99])
                ratio = float(t99 / t95) if t95 > 0 else 1.0
                new = step_gamma(self.gamma, ratio, self.config)
                changed = changed or new != self.gamma
                self.gamma = new
                target = target_gamma(ratio, self.config)
                self.history.append(GammaUpdate(self.next_due, new, ratio, target))
            self.next_due += self.config.period
        return changed

    def converged(self, last: int = 10, tolerance: float = 1.0) -> bool:
        """|Δγ| < tolerance over the last `last` updates (spec §5.3); False with fewer."""
        gammas = [self.config.gamma0] + [u.gamma for u in self.history]
        if len(self.history) < last:
            return False
        steps = np.abs(np.diff(gammas[-(last + 1) :]))
        return bool(np.all(steps < tolerance))
