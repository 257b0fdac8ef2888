"""Anytime-valid inference for bounded means: betting confidence sequences, e-values, families.

A confidence sequence (CS) covers its parameter at every n at once: P(for all n, mu in C_n)
>= 1 - alpha. So it stays valid at any stopping time, including one chosen by looking at the
data ("stop when the interval excludes 0"), which a fixed-n interval does not.

The construction (Waudby-Smith and Ramdas 2024, section 4): for each candidate mean m, bet on
the next observation with a predictable fraction lambda and keep the capital

    K+_t(m) = prod_i (1 + lambda+_i(m) (X_i - mu_i(m))),
    K-_t(m) = prod_i (1 - lambda-_i(m) (X_i - mu_i(m))),

with mu_i(m) = m for independent draws. Under m = the true mean each is a nonnegative
martingale, and so is the hedged capital theta K+ + (1 - theta) K-, so by Ville's inequality it
passes 1/alpha with probability at most alpha, ever. The CS is the set of m whose hedged
capital max(theta K+, (1 - theta) K-) has stayed below 1/alpha (a running intersection).

- lambda is the predictable plug-in (their eq. 26): lambda_t = sqrt(2 log(2/alpha) /
  (sigma2_{t-1} t log(1 + t))), from the first t - 1 observations only, truncated to
  c / mu_i(m) (for K+) and c / (1 - mu_i(m)) (for K-) with c = 3/4, which keeps every factor at
  least 1 - c > 0.
- With these truncations each factor of K+ is non-increasing in m and each of K- non-decreasing,
  so the CS is an interval, and on a grid the outermost rejected grid points bound it from
  outside: the interval read off the grid contains the exact one. Nothing is lost to the grid
  but resolution.
- Sampling without replacement from N items (Waudby-Smith and Ramdas 2020): under the null
  "the N items have mean m", the mean of the items not yet drawn is mu_t(m) = (N m - S_{t-1}) /
  (N - t + 1), where S_{t-1} is the sum of the values drawn so far. Betting against mu_t(m)
  instead of m gives a martingale again, and a CS that shrinks much faster than the iid one as
  t nears N. A candidate for which mu_t(m) leaves [0, 1] is impossible and rejected, and once
  all N are seen the interval is the grid cell holding the mean, which is then known.
- A paired difference D = A - B of scores in [0, 1] lies in [-1, 1]; Y = (D + 1) / 2 is the
  bounded mean the CS runs on, and the interval is mapped back.
- An anytime p-value for H0: mean = m0 is 1 / max_{s <= t} E_s(m0), with E the hedged capital
  theta K+ + (1 - theta) K- (a test martingale, so E at a stopping time is an e-value).
- The capital equals that of the authors' package, confseq 0.0.11 (`betting_mart` with
  `trunc_scale=0.75`), to rounding; tests/stats/test_sequential.py pins its values.
- Families: each of k pairs gets its CS at alpha / k (Bonferroni over confidence sequences).
  Then every CS covers at once, at any stopping time, with probability >= 1 - alpha, so every
  decision read from them (direction, equivalence within a margin) is right simultaneously.
  That is the rule `harness board replay` uses. `e_bh` (Wang and Ramdas 2022) is here for
  e-values too; it controls the false discovery rate of "not equal" decisions, not the
  family-wise rate, and says nothing about equivalence.

References:
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1-27. arXiv:2010.09686.
    Waudby-Smith, I. and Ramdas, A. (2020). Confidence sequences for sampling without
    replacement. NeurIPS 33. arXiv:2006.04347.
    Wang, R. and Ramdas, A. (2022). False discovery rate control with e-values. JRSS-B 84(3).

"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from harness.stats._bets import Bets, bet_sizes, bets_for

Kind = Literal["mean", "difference"]
TRUNCATION = 0.75  # c: bets never stake more than 3/4 of what a single draw could lose
HEDGE = 0.5  # theta: the capital is split evenly between betting up and betting down
GRID = 1001  # candidate means on [0, 1]: a resolution of 0.001 (0.002 for a difference)


@dataclass(frozen=True, slots=True)
class ConfidenceSequence:
    """A confidence sequence read at the current n.

    Attributes:
        estimate: The sample mean of what was observed (nan before any observation).
        low: Lower end; the CS lies within [low, high] (the grid's outer bound).
        high: Upper end.
        n: Observations so far.
        alpha: Error level: all n are covered at once with probability >= 1 - alpha.
        method: How it was made, in words.

    """

    estimate: float
    low: float
    high: float
    n: int
    alpha: float
    method: str

    @property
    def width(self) -> float:
        """The interval's width, high - low."""
        return self.high - self.low

    def excludes(self, value: float) -> bool:
        """Whether `value` lies outside [low, high]."""
        return value < self.low or value > self.high

    def summary(self) -> str:
        """One line: the estimate, the interval, n and the method."""
        return (
            f"{self.estimate:.4f} [{self.low:.4f}, {self.high:.4f}] (n = {self.n}; "
            f"{1 - self.alpha:.0%} {self.method})"
        )


@dataclass(frozen=True, slots=True)
class AnytimeTest:
    """An anytime-valid test of H0: mean = null.

    Attributes:
        null: The value tested (on the kind's scale: a mean, or a difference).
        e_value: The hedged capital now; an e-value at any stopping time.
        p_value: 1 / the running maximum of the capital, capped at 1: P(ever <= alpha) <= alpha.
        n: Observations so far.
        method: How it was made, in words.

    """

    null: float
    e_value: float
    p_value: float
    n: int
    method: str

    def summary(self) -> str:
        """One line: the null, e and p."""
        return f"H0: {self.null:g}; e = {self.e_value:.4g}, anytime p = {self.p_value:.4g}"


def predictable_lambda(n_seen: np.ndarray, var_sum: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bet for draw t = n_seen + 1 (Waudby-Smith and Ramdas 2024, eq. 26).

    Args:
        n_seen: Observations before this one (t - 1), per sequence.
        var_sum: Sum over those of (X_i - mu_hat_i)^2, per sequence.
        alpha: The CS's level.

    """
    t = np.asarray(n_seen, dtype=float) + 1.0
    sigma2 = (0.25 + var_sum) / t  # sigma2_{t-1}: shrunk towards 1/4 by one pseudo-observation
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (sigma2 * t * np.log1p(t)))


class BettingCS:
    """A betting confidence sequence, updated one observation at a time.

    Works on a batch: `batch` independent sequences share one grid, and `update` takes one
    observation for each (tests and replays run thousands at once). Observations are means in
    [0, 1] (`kind="mean"`) or differences a - b in [-1, 1] (`kind="difference"`).

    Args:
        alpha: Error level of the CS (all n at once).
        kind: "mean" or "difference".
        population: The number of items when drawing without replacement from a finite set
            (the CS is then for the mean of those items); None for independent draws.
        batch: The number of independent sequences (0 or 1: a single one).
        grid: Candidate values on the kind's scale, sorted; default 1001 evenly spaced.
        planned: The n the run plans to reach (its budget, or the items there are): the
            capital mixes bets tuned to it (`harness.stats._bets`), narrower there than the
            plug-in schedule; None keeps the plug-in alone. Valid either way, at every n.

    Notes:
        The interval is the convex hull of the grid points not yet rejected, widened to the
        neighbouring rejected points, which contains the exact CS (see the module docstring);
        its resolution is the grid spacing. Coverage at data-dependent stopping times is
        checked by Monte-Carlo in tests/stats/test_sequential.py.

    """

    def __init__(
        self,
        *,
        alpha: float = 0.05,
        kind: Kind = "mean",
        population: int | None = None,
        batch: int = 0,
        grid: Sequence[float] | np.ndarray | None = None,
        planned: int | None = None,
    ) -> None:
        """An empty sequence (nothing observed)."""
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if kind not in get_args(Kind):
            raise ValueError(f"kind must be one of {get_args(Kind)}, got {kind!r}")
        if population is not None and population < 1:
            raise ValueError(f"population must be a positive count, got {population}")
        self.alpha = alpha
        self.kind: Kind = kind
        self.population = population
        self.bets: Bets = bets_for(planned)
        size = max(batch, 1)
        k = len(self.bets.weights)
        values = np.linspace(*self.domain, GRID) if grid is None else np.asarray(grid, float)
        if values.ndim != 1 or values.size < 2 or np.any(np.diff(values) <= 0):
            raise ValueError("grid must be a sorted 1-D sequence of two or more distinct values")
        low, high = self.domain
        if values[0] < low or values[-1] > high:
            raise ValueError(f"grid must lie in [{low:g}, {high:g}] for kind {kind!r}")
        self.grid = values  # (G,) on the kind's scale
        self._m = self._to_unit(values)  # (G,) the same candidates as means in [0, 1]
        self._sum = np.zeros(size)  # (B,) sum of observations (on the [0, 1] scale)
        self._var_sum = np.zeros(size)  # (B,) sum of (X_i - mu_hat_i)^2
        self._count = np.zeros(size, dtype=np.int64)  # (B,) observations per sequence
        self._log_up = np.zeros((size, k, values.size))  # (B, K, G) log K+ of each bet
        self._log_down = np.zeros((size, k, values.size))  # (B, K, G) log K-
        self._max_log_e = np.zeros((size, values.size))  # (B, G) running max of log E
        self._max_up = np.zeros((size, values.size))  # (B, G) running max of log sum_k w_k K+
        self._max_down = np.zeros((size, values.size))  # (B, G) the same for K-
        self._below = np.full(size, -1)  # (B,) highest grid index ever rejected from below
        self._above = np.full(size, values.size)  # (B,) lowest grid index ever rejected above

    @property
    def domain(self) -> tuple[float, float]:
        """The range of an observation on the kind's scale."""
        return (0.0, 1.0) if self.kind == "mean" else (-1.0, 1.0)

    def _to_unit(self, x: np.ndarray) -> np.ndarray:
        return x if self.kind == "mean" else (x + 1.0) / 2.0

    def _from_unit(self, m: np.ndarray | float) -> np.ndarray | float:
        return m if self.kind == "mean" else 2.0 * m - 1.0

    @property
    def method(self) -> str:
        """The CS's name, in words."""
        draw = (
            f"without replacement from {self.population} items"
            if self.population is not None
            else "independent draws"
        )
        return f"betting confidence sequence, hedged, {self.bets.describe()} ({draw})"

    def update(
        self, x: float | Sequence[float] | np.ndarray, mask: np.ndarray | None = None
    ) -> None:
        """Observe one value per sequence; `mask` (bool per sequence) skips the False ones.

        Raises:
            ValueError: a value outside the kind's domain or not finite, or more draws than the
                population holds.

        """
        size = self._sum.size
        values = np.broadcast_to(np.asarray(x, dtype=float), (size,))
        low, high = self.domain
        if not np.all(np.isfinite(values)) or np.any(values < low) or np.any(values > high):
            raise ValueError(f"observations must lie in [{low:g}, {high:g}], got {values}")
        active = np.ones(size, bool) if mask is None else np.asarray(mask, bool)
        if self.population is not None and np.any(self._count[active] >= self.population):
            raise ValueError(f"more draws than the population of {self.population} items")
        y = self._to_unit(values)  # (B,)
        counts = self._count
        lam = bet_sizes(counts, self._var_sum, self.alpha, self.bets)[:, :, None]  # (B, K, 1)
        if self.population is None:
            mu = np.broadcast_to(self._m, (size, self._m.size))  # (B, G)
        else:
            left = (self.population - counts)[:, None]  # (B, 1) items not yet drawn
            mu = (self.population * self._m[None, :] - self._sum[:, None]) / left  # (B, G)
        # rounding in N m - S is ~eps N; only a mean clearly outside [0, 1] is impossible
        slack = 8 * np.finfo(float).eps * (self.population or 1)
        impossible_low = mu < -slack  # the undrawn items would need a negative mean
        impossible_high = mu > 1.0 + slack
        mu_c = np.clip(mu, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            cap_up = np.where(mu_c > 0, TRUNCATION / mu_c, np.inf)
            cap_down = np.where(mu_c < 1, TRUNCATION / (1.0 - mu_c), np.inf)
        lam_up = np.minimum(lam, cap_up[:, None, :])  # (B, K, G)
        lam_down = np.minimum(lam, cap_down[:, None, :])
        step = (y[:, None] - mu_c)[:, None, :]  # (B, 1, G)
        log_up = np.log1p(lam_up * step)
        log_down = np.log1p(-lam_down * step)
        log_up = np.where(impossible_low[:, None, :], np.inf, log_up)
        log_down = np.where(impossible_high[:, None, :], np.inf, log_down)
        sel = active[:, None, None]
        self._log_up = np.where(sel, self._log_up + log_up, self._log_up)
        self._log_down = np.where(sel, self._log_down + log_down, self._log_down)
        up, down = self._mixed()
        self._max_up = np.maximum(self._max_up, up)
        self._max_down = np.maximum(self._max_down, down)
        log_e = np.logaddexp(math.log(HEDGE) + up, math.log(1.0 - HEDGE) + down)
        self._max_log_e = np.maximum(self._max_log_e, log_e)
        bar = math.log(1.0 / self.alpha)
        grid_index = np.arange(self._m.size)
        below = np.where(math.log(HEDGE) + up >= bar, grid_index, -1).max(axis=1)
        above = np.where(math.log(1.0 - HEDGE) + down >= bar, grid_index, self._m.size).min(axis=1)
        self._below = np.maximum(self._below, below)
        self._above = np.minimum(self._above, above)
        mean_now = (0.5 + self._sum + y) / (counts + 2)  # mu_hat_t, with this draw
        self._var_sum = np.where(active, self._var_sum + (y - mean_now) ** 2, self._var_sum)
        self._sum = np.where(active, self._sum + y, self._sum)
        self._count = counts + active

    def _mixed(self) -> tuple[np.ndarray, np.ndarray]:
        """(B, G) log of the mixed capitals sum_k w_k K+_k and sum_k w_k K-_k."""
        if self._log_up.shape[1] == 1:
            return self._log_up[:, 0], self._log_down[:, 0]
        w = self.bets.log_weights[None, :, None]
        return (np.logaddexp.reduce(w + self._log_up, axis=1),
                np.logaddexp.reduce(w + self._log_down, axis=1))  # fmt: skip

    def one_sided_p_values(self, null: float) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, anytime p-values for H: mean <= null, and for H: mean >= null.

        min(1, 1 / the running maximum of K+(null)), and of K-(null): under mean <= null, K+ is
        a nonnegative supermartingale (each factor has mean 1 + lambda (mu - null) <= 1), so by
        Ville the p-value is <= x with probability <= x, at any stopping time. Sequential Holm
        (`harness.stats.sequential_holm`) runs on these.
        """
        j = self._null_index(null)
        return np.minimum(1.0, np.exp(-self._max_up[:, j])), np.minimum(
            1.0, np.exp(-self._max_down[:, j]))  # fmt: skip

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, (low, high) on the kind's scale: the CS lies within them."""
        low_d, high_d = self.domain
        low = np.where(self._below >= 0, self.grid[np.maximum(self._below, 0)], low_d)
        high_index = np.minimum(self._above, self.grid.size - 1)
        high = np.where(self._above < self.grid.size, self.grid[high_index], high_d)
        if self.population is not None:  # every item seen: the mean is known, not estimated
            done = self._count >= self.population
            mean = np.asarray(self._from_unit(self._sum / self.population))
            tol = 8 * np.finfo(float).eps
            below = np.clip(np.searchsorted(self.grid, mean + tol, side="right") - 1, 0, None)
            above = np.clip(np.searchsorted(self.grid, mean - tol, side="left"), None,
                            self.grid.size - 1)  # fmt: skip
            low = np.where(done, np.maximum(low, self.grid[below]), low)
            high = np.where(done, np.minimum(high, self.grid[above]), high)
        return low, high

    def rejects(self, value: float) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, whether the CS lies above `value`, and whether it lies below it.

        `value` must be a grid point. Above: every candidate <= value has been rejected (the
        mean is > value); below: every candidate >= value has. Once a finite population is
        seen in full, the known mean decides.
        """
        j = self._null_index(value)
        above = self._below >= j
        below = self._above <= j
        if self.population is not None:
            done = self._count >= self.population
            mean = np.asarray(self._from_unit(self._sum / self.population))
            tol = 8 * np.finfo(float).eps
            above = np.where(done, mean > value + tol, above)
            below = np.where(done, mean < value - tol, below)
        return above, below

    def estimates(self) -> np.ndarray:
        """Per sequence, the sample mean on the kind's scale (nan before any observation)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(self._count > 0, self._sum / np.maximum(self._count, 1), np.nan)
        return np.asarray(self._from_unit(m))

    def counts(self) -> np.ndarray:
        """Per sequence, observations so far."""
        return self._count.copy()

    def interval(self, index: int = 0) -> ConfidenceSequence:
        """The CS of one sequence now."""
        low, high = self.bounds()
        return ConfidenceSequence(
            estimate=float(self.estimates()[index]),
            low=float(low[index]),
            high=float(high[index]),
            n=int(self._count[index]),
            alpha=self.alpha,
            method=self.method,
        )

    def _null_index(self, null: float) -> int:
        hits = np.flatnonzero(np.abs(self.grid - null) <= 4 * np.finfo(float).eps * (1 + abs(null)))
        if hits.size == 0:
            raise ValueError(f"the null {null:g} is not a grid point; put it in `grid`")
        return int(hits[0])

    def e_values(self, null: float) -> np.ndarray:
        """Per sequence, the hedged capital at `null` now (an e-value at any stopping time)."""
        j = self._null_index(null)
        up, down = self._mixed()
        return np.exp(np.logaddexp(math.log(HEDGE) + up[:, j], math.log(1 - HEDGE) + down[:, j]))

    def p_values(self, null: float) -> np.ndarray:
        """Per sequence, the anytime p-value min(1, 1 / max_s E_s(null))."""
        j = self._null_index(null)
        return np.minimum(1.0, np.exp(-self._max_log_e[:, j]))

    def test(self, null: float, index: int = 0) -> AnytimeTest:
        """The anytime test of one sequence at `null` (which must be a grid point)."""
        return AnytimeTest(
            null=null,
            e_value=float(self.e_values(null)[index]),
            p_value=float(self.p_values(null)[index]),
            n=int(self._count[index]),
            method=self.method,
        )


def bonferroni_alpha(alpha: float, k: int) -> float:
    """Each CS's level so that k of them cover at once with probability >= 1 - alpha."""
    if not 0 < alpha < 1 or k < 1:
        raise ValueError(f"need alpha in (0, 1) and k >= 1, got {alpha}, {k}")
    return alpha / k


def sequential_holm(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down on anytime p-values: which hypotheses the family rejects now.

    `p_values` is (..., m): the last axis holds one family's m anytime-valid p-values (each
    <= x with probability <= x under its null, at any stopping time, and non-increasing in
    time, as `BettingCS.one_sided_p_values` gives them). Sorted p_(1) <= ... <= p_(m), Holm
    rejects p_(1), ..., p_(r) where r is the first i with p_(i) > alpha / (m - i + 1) (minus
    one). Applied at every look, its rejections only grow, and the family-wise error over all
    looks is at most alpha: the first true null rejected is rejected while at most m - m0
    others are, so at a threshold <= alpha / m0, and by Ville each of the m0 true nulls' p-values
    ever reaches alpha / m0 with probability <= alpha / m0. It rejects every hypothesis that
    Bonferroni (alpha / m each) rejects, and more where several are false.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim == 0 or p.shape[-1] < 1:
        raise ValueError("need at least one p-value on the last axis")
    if not 0 < alpha < 1:
        raise ValueError(f"need alpha in (0, 1), got {alpha}")
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    thresholds = alpha / (m - np.arange(m))  # alpha / m, alpha / (m - 1), ..., alpha
    passing = np.cumprod(ranked <= thresholds, axis=-1).astype(bool)  # the step-down prefix
    rejected = np.zeros_like(passing)
    np.put_along_axis(rejected, order, passing, axis=-1)
    return rejected


def bonferroni_level(alpha: float, k: int) -> str:
    """Each CS's level and the family's, in words: "1 - 0.05/3 each (98.33%), 95% jointly"."""
    if k <= 1:
        return f"{100 * (1 - alpha):.4g}%"
    each = 100 * (1 - bonferroni_alpha(alpha, k))
    return f"1 - {alpha:g}/{k} each ({each:.4g}%), {100 * (1 - alpha):.4g}% jointly"


def e_bh(e_values: Sequence[float], alpha: float) -> tuple[int, ...]:
    """The hypotheses e-BH rejects (indices, sorted): FDR <= alpha under any dependence.

    Rejects the k* largest e-values, with k* the largest k such that the k-th largest e-value
    is >= K / (alpha k) (Wang and Ramdas 2022). Valid at any stopping time when each e-value is
    an e-process read at that time.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    e = np.asarray(e_values, dtype=float)
    if e.ndim != 1 or np.any(np.isnan(e)) or np.any(e < 0):
        raise ValueError("e-values must be a 1-D sequence of non-negative numbers")
    k = e.size
    if k == 0:
        return ()
    order = np.argsort(-e, kind="stable")
    ranks = np.arange(1, k + 1)
    ok = e[order] >= k / (alpha * ranks)
    if not ok.any():
        return ()
    k_star = int(np.flatnonzero(ok).max()) + 1
    return tuple(sorted(int(i) for i in order[:k_star]))
