"""Asymptotic confidence sequences (time-uniform central limit theory), and the choice of CS by n.

The asymptotic CS (Waudby-Smith, Arnold, Wu and Ramdas 2024, the Robbins normal mixture): for
i.i.d. observations with mean mu and a finite moment of order > 2,

    mean_t +/- sigma_t sqrt( 2 (t rho^2 + 1) / (t^2 rho^2) log( sqrt(t rho^2 + 1) / alpha ) ),

with sigma_t the sample standard deviation. For Gaussian increments of variance sigma^2 this is
exactly the boundary of the normal-mixture martingale integral exp(l S_t / sigma - l^2 t / 2)
dN(0, rho^2)(l) = exp(rho^2 S_t^2 / (2 sigma^2 (t rho^2 + 1))) / sqrt(t rho^2 + 1) at 1/alpha
(Ville: two-sided, all t at once). For other distributions it holds asymptotically: the
probability that it ever misses after time m tends to at most alpha as m grows (strong
approximation), so it is **not** guaranteed at small n, and it is never exact. rho sets the n
where it is narrowest: rho^2 = (-2 log alpha + log(1 - 2 log alpha)) / n*, with n* the planned n.

At its planned n its half-width is about 3.03 sigma / sqrt(n) at alpha 0.05 (5.02 at
0.05 / 1,770), against 2.96 (4.8) for the betting CS with bets tuned to that n
(`harness.stats._bets`), which holds at every n without assumptions beyond bounded, independent
draws. So `choose_cs("auto", ...)` never picks it; it is here for `cs="asymptotic"`, where its
method string says when it runs below `ASYMPTOTIC_MIN_N`, the smallest n at which its
time-uniform coverage was checked (tests/stats/test_cs_choice.py).

The variance is shrunk towards the largest one the domain allows by one pseudo-observation,
(v_max + sum (X_i - mean_i)^2) / (t + 1), so that a run of equal 0/1 scores does not give a
zero-width interval.

References:
    Waudby-Smith, I., Arnold, D., Wu, S. and Ramdas, A. (2024). Time-uniform central limit
    theory and asymptotic confidence sequences. Annals of Statistics 52(6). arXiv:2103.06476.
    Robbins, H. (1970). Statistical methods related to the law of the iterated logarithm.

"""

from __future__ import annotations

import math
from typing import Literal, get_args

import numpy as np

from harness.stats._sequential import BettingCS, Kind

Choice = Literal["auto", "plug-in", "planned", "asymptotic"]
ASYMPTOTIC_MIN_N = 500  # the asymptotic CS's coverage is checked from here on (see the tests)


def rho_for(planned: int, alpha: float) -> float:
    """The mixture's rho that makes the boundary narrowest at n = `planned`."""
    if planned < 1 or not 0 < alpha < 1:
        raise ValueError(f"need planned >= 1 and alpha in (0, 1), got {planned}, {alpha}")
    log_a = -2.0 * math.log(alpha)
    return math.sqrt((log_a + math.log(1.0 + log_a)) / planned)


class AsymptoticCS:
    """The Robbins normal-mixture asymptotic CS, in `BettingCS`'s interface (batch, masks).

    Args:
        alpha: Error level (asymptotically, all n at once).
        kind: "mean" (observations in [0, 1]) or "difference" ([-1, 1]).
        batch: Independent sequences.
        planned: The n where the CS is narrowest (the budget, or the items there are).

    """

    def __init__(self, *, alpha: float = 0.05, kind: Kind = "mean", batch: int = 0,
                 planned: int) -> None:  # fmt: skip
        """Nothing observed."""
        if kind not in get_args(Kind):
            raise ValueError(f"kind must be one of {get_args(Kind)}, got {kind!r}")
        self.alpha, self.kind, self.planned = alpha, kind, planned
        self.rho = rho_for(planned, alpha)
        size = max(batch, 1)
        self._sum = np.zeros(size)
        self._var_sum = np.zeros(size)
        self._count = np.zeros(size, dtype=np.int64)

    @property
    def domain(self) -> tuple[float, float]:
        """The range of an observation."""
        return (0.0, 1.0) if self.kind == "mean" else (-1.0, 1.0)

    @property
    def method(self) -> str:
        """The CS's name, with the n below which it is not checked."""
        text = (f"asymptotic confidence sequence (normal mixture, rho tuned to n = "
                f"{self.planned}; holds as n grows, for independent draws)")  # fmt: skip
        if self.planned < ASYMPTOTIC_MIN_N:
            text += (f"; used here below n = {ASYMPTOTIC_MIN_N}, the smallest n at which its "
                     "coverage was checked")  # fmt: skip
        return text

    def update(self, x: float | np.ndarray, mask: np.ndarray | None = None) -> None:
        """Observe one value per sequence; `mask` skips the False ones."""
        size = self._sum.size
        values = np.broadcast_to(np.asarray(x, dtype=float), (size,))
        low, high = self.domain
        if not np.all(np.isfinite(values)) or np.any(values < low) or np.any(values > high):
            raise ValueError(f"observations must lie in [{low:g}, {high:g}], got {values}")
        on = np.ones(size, bool) if mask is None else np.asarray(mask, bool)
        mean_old = np.where(self._count > 0, self._sum / np.maximum(self._count, 1), 0.0)
        count = self._count + on
        mean_new = (self._sum + np.where(on, values, 0.0)) / np.maximum(count, 1)
        # Welford: sum of squared deviations from the running mean
        self._var_sum = np.where(on, self._var_sum + (values - mean_old) * (values - mean_new),
                                 self._var_sum)  # fmt: skip
        self._sum = np.where(on, self._sum + values, self._sum)
        self._count = count

    def counts(self) -> np.ndarray:
        """Per sequence, observations so far."""
        return self._count.copy()

    def estimates(self) -> np.ndarray:
        """Per sequence, the sample mean (nan before any observation)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._count > 0, self._sum / np.maximum(self._count, 1), np.nan)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, (low, high), cut to the domain (the whole domain before 2 draws)."""
        low_d, high_d = self.domain
        t = self._count.astype(float)
        v_max = (high_d - low_d) ** 2 / 4
        sigma = np.sqrt((v_max + self._var_sum) / (t + 1))
        r2 = self.rho**2
        with np.errstate(divide="ignore", invalid="ignore"):
            half = sigma * np.sqrt(2 * (t * r2 + 1) / (t**2 * r2)
                                   * np.log(np.sqrt(t * r2 + 1) / self.alpha))  # fmt: skip
        mean = np.nan_to_num(self.estimates())
        ok = t >= 2
        return (np.where(ok, np.maximum(mean - half, low_d), low_d),
                np.where(ok, np.minimum(mean + half, high_d), high_d))  # fmt: skip

    def rejects(self, value: float) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, whether the CS lies above `value`, and whether it lies below it."""
        low, high = self.bounds()
        return low > value, high < value


def choose_cs(choice: Choice, *, alpha: float, kind: Kind = "mean", batch: int = 0,
              planned: int | None = None, population: int | None = None,
              grid: np.ndarray | None = None) -> BettingCS | AsymptoticCS:  # fmt: skip
    """The CS a run uses, chosen by `choice` and the planned n.

    - "auto": the betting CS with bets tuned to `planned` where it is known (valid at every
      n), else the plug-in betting CS;
    - "plug-in": the betting CS of Waudby-Smith and Ramdas's eq. 26 alone (the old default);
    - "planned": bets tuned to `planned` (required);
    - "asymptotic": the asymptotic CS tuned to `planned` (required; independent draws only).

    Raises:
        ValueError: an unknown choice, or one that needs `planned` without it, or the
            asymptotic CS for a finite population.

    """
    if choice not in get_args(Choice):
        raise ValueError(f"cs must be one of {get_args(Choice)}, got {choice!r}")
    if choice in ("planned", "asymptotic") and planned is None:
        raise ValueError(f"cs {choice!r} needs the planned n")
    if choice == "asymptotic":
        if population is not None:
            raise ValueError("the asymptotic CS is for independent draws, not a finite board")
        assert planned is not None
        return AsymptoticCS(alpha=alpha, kind=kind, batch=batch, planned=planned)
    tuned = None if choice == "plug-in" else planned
    return BettingCS(alpha=alpha, kind=kind, population=population, batch=batch, grid=grid,
                     planned=tuned)  # fmt: skip
