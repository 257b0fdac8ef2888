"""Anytime-valid estimation of a finite board's mean when the next item is chosen actively.

The setting: a board of N items, each with a fixed score y_i in [0, 1] that is revealed when
the item is asked. The target is the board's mean mu = (1/N) sum_i y_i. Before step t a
predictor gives f_{t,i} in [0, 1] for every item not yet asked (from a model fitted on other
models' past results and on the answers so far: predictable), and the items already asked
carry their known score. Let

    F_t = (1/N) (sum over asked y_i + sum over unasked f_{t,i}),   r_i = y_i - f_{t,i}.

The next item I_t is drawn from a predictable distribution q_t over the unasked items U_t, and

    phi_t = F_t + r_{I_t} / (N q_t(I_t))

is observed. Then E[phi_t | past] = F_t + (1/N) sum_{i in U_t} r_i = mu exactly, at every t,
whatever the predictor and whatever q_t (Horvitz-Thompson weighting by the selection
probability, as in active inference: Zrnic and Candes 2024; and FAQ's factor-model estimator:
Wu, Nair and Candes 2026). The asked items' residuals are zero because their scores are known,
so no item is asked twice and every step is a new query: the draw is without replacement, and
the target is the board's own (finite-population) mean.

phi_t is bounded by predictable numbers: with l_t = F_t - max_{i in U} f_i / (N q_i) and u_t =
F_t + max_{i in U} (1 - f_i) / (N q_i), phi_t lies in [l_t, u_t]. The confidence sequence is a
betting CS for a mean with such bounds (Waudby-Smith and Ramdas 2024, with the bounds varying
predictably): for a candidate m the capitals

    K+_t(m) = prod (1 + lam+_s (phi_s - m)),   K-_t(m) = prod (1 - lam-_s (phi_s - m)),

with lam+_s <= c / (m - l_s) and lam-_s <= c / (u_s - m), are nonnegative martingales under
mu = m (a candidate outside [l_s, u_s] is impossible and rejected), so the hedged capital
passes 1/alpha with probability at most alpha, ever (Ville). The bet is the predictable
plug-in of `harness.stats._sequential`. The CS is also cut to the range the unasked items
allow, [S/N, (S + |U|)/N] with S the asked items' sum, and is the known mean once every item
has been asked.

The selection: the variance of phi_t is smallest with q_i proportional to the residual's
root mean square, sqrt(f_i (1 - f_i)) for a calibrated 0/1 prediction; `selection` mixes that
with the uniform over U (weight `explore`) so that no 1 / q is large, and clips f away from
0 and 1. Every pair (new model, other model) whose other mean is known reads its decision from
this one CS, so the item that shrinks it fastest resolves every open pair fastest.

Ours (labelled reconstructed in the replay's output): the mixing weight, the clipping, the
refit schedule and the use of one CS for all pairs against models with known board means.
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats._bets import bet_sizes, bets_for
from harness.stats._sequential import GRID, HEDGE, TRUNCATION

EXPLORE = 0.1  # weight of the uniform distribution mixed into the selection
CLIP = 0.02  # predictions are clipped to [CLIP, 1 - CLIP] before they set the selection


def selection(pred: np.ndarray, unasked: np.ndarray, explore: float = EXPLORE) -> np.ndarray:
    """Selection probabilities over items, per sequence: sqrt(f (1 - f)) mixed with uniform.

    Args:
        pred: (B, N) predictions in [0, 1].
        unasked: (B, N) bool, the items that may be drawn (at least one per row that is used).
        explore: Weight of the uniform over the unasked items, in (0, 1].

    Returns:
        (B, N) probabilities, zero on asked items; a row with nothing unasked is all zero.

    """
    if not 0 < explore <= 1:
        raise ValueError(f"explore must be in (0, 1], got {explore}")
    f = np.clip(pred, CLIP, 1 - CLIP)
    spread = np.where(unasked, np.sqrt(f * (1 - f)), 0.0)
    count = unasked.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        active = spread / spread.sum(axis=1, keepdims=True)
        uniform = unasked / count
    q = (1 - explore) * active + explore * uniform
    return np.where(count > 0, np.nan_to_num(q), 0.0)


class ActiveMeanCS:
    """A betting CS for a finite board's mean under predictable, weighted item selection.

    Works on a batch of B independent sequences over one board of N items (replays and tests
    run thousands at once). Each step: `step(pred, q, item, score)` with the predictions and
    selection probabilities fixed before `item` was drawn from `q`, and the score revealed.

    Args:
        n_items: N, the board's items.
        alpha: Error level: the CS covers the board's mean at every step at once with
            probability >= 1 - alpha.
        batch: B (0 or 1: a single sequence).
        grid: Candidate means, sorted, in [0, 1]; default `GRID` evenly spaced.
        planned: The items the run plans to ask: the capital mixes bets tuned to it
            (`harness.stats._bets`); None: the plug-in bets alone. Valid either way.

    """

    def __init__(self, n_items: int, *, alpha: float = 0.05, batch: int = 0,
                 grid: np.ndarray | None = None, planned: int | None = None) -> None:  # fmt: skip
        """Nothing asked yet."""
        if n_items < 1:
            raise ValueError(f"n_items must be positive, got {n_items}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        size = max(batch, 1)
        self.n_items = n_items
        self.alpha = alpha
        self.grid = np.linspace(0.0, 1.0, GRID) if grid is None else np.asarray(grid, float)
        if self.grid.ndim != 1 or self.grid.size < 2 or np.any(np.diff(self.grid) <= 0):
            raise ValueError("grid must be a sorted 1-D sequence of two or more distinct values")
        self.asked = np.zeros((size, n_items), bool)  # (B, N)
        self._known_sum = np.zeros(size)  # (B,) sum of the asked items' scores
        self._count = np.zeros(size, dtype=np.int64)
        self._sum = np.zeros(size)  # (B,) sum of phi
        self._var_sum = np.zeros(size)
        self.bets = bets_for(planned)
        k = len(self.bets.weights)
        self._log_up = np.zeros((size, k, self.grid.size))  # (B, K, G) log K+ of each bet
        self._log_down = np.zeros((size, k, self.grid.size))
        self._below = np.full(size, -1)  # highest grid index rejected from below
        self._above = np.full(size, self.grid.size)  # lowest grid index rejected from above

    @property
    def method(self) -> str:
        """The CS's name, with its bets."""
        return (
            "betting confidence sequence over selection-weighted (Horvitz-Thompson) "
            f"observations with predictable bounds, {self.bets.describe()}, for the board's "
            "own items"
        )

    def observation(self, pred: np.ndarray, q: np.ndarray, item: np.ndarray,
                    score: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """phi_t and its predictable bounds (l_t, u_t), per sequence (see the module docstring)."""
        rows = np.arange(self.asked.shape[0])
        f = np.where(self.asked, 0.0, pred)
        big_f = (self._known_sum + f.sum(axis=1)) / self.n_items  # (B,)
        with np.errstate(divide="ignore", invalid="ignore"):
            weight = np.where(self.asked | (q <= 0), 0.0, 1.0 / (self.n_items * q))  # (B, N)
        low = big_f - (f * weight).max(axis=1)
        high = big_f + ((1 - f) * weight).max(axis=1)
        phi = big_f + (score - f[rows, item]) * weight[rows, item]
        return phi, low, high

    def step(self, pred: np.ndarray, q: np.ndarray, item: np.ndarray, score: np.ndarray,
             mask: np.ndarray | None = None) -> None:  # fmt: skip
        """Observe `score` of `item` (drawn from `q`, with `pred` fixed before the draw).

        Args:
            pred: (B, N) predictions in [0, 1] made before the draw.
            q: (B, N) the selection probabilities the item was drawn from (zero on asked items).
            item: (B,) the drawn item per sequence.
            score: (B,) its score in [0, 1].
            mask: (B,) bool, False for sequences that have stopped (nothing changes for them).

        """
        size = self.asked.shape[0]
        item = np.broadcast_to(np.asarray(item, dtype=np.int64), (size,))
        score = np.broadcast_to(np.asarray(score, dtype=float), (size,))
        active = np.ones(size, bool) if mask is None else np.asarray(mask, bool)
        rows = np.arange(size)
        if np.any(active & self.asked[rows, item]):
            raise ValueError("an item was drawn twice; the selection must leave asked items out")
        if np.any(active & (q[rows, item] <= 0)):
            raise ValueError("an item was drawn that had selection probability 0")
        if not np.all(np.isfinite(score)) or np.any((score < 0) | (score > 1)):
            raise ValueError(f"scores must lie in [0, 1], got {score}")
        phi, low, high = self.observation(np.clip(pred, 0.0, 1.0), q, item, score)
        lam = bet_sizes(self._count, self._var_sum, self.alpha, self.bets)[:, :, None]  # (B,K,1)
        m = self.grid[None, :]
        slack = 8 * np.finfo(float).eps * self.n_items
        impossible_low = m < low[:, None] - slack  # mean below every possible observation
        impossible_high = m > high[:, None] + slack
        with np.errstate(divide="ignore", invalid="ignore"):
            cap_up = np.where(m > low[:, None], TRUNCATION / (m - low[:, None]), np.inf)
            cap_down = np.where(m < high[:, None], TRUNCATION / (high[:, None] - m), np.inf)
        lam_up = np.minimum(lam, cap_up[:, None, :])  # (B, K, G)
        lam_down = np.minimum(lam, cap_down[:, None, :])
        move = (phi[:, None] - m)[:, None, :]  # (B, 1, G)
        with np.errstate(invalid="ignore"):
            up = np.log1p(np.maximum(lam_up * move, -1 + 1e-300))
            down = np.log1p(np.maximum(-lam_down * move, -1 + 1e-300))
        log_up = np.where(impossible_low[:, None, :], np.inf, up)
        log_down = np.where(impossible_high[:, None, :], np.inf, down)
        sel = active[:, None, None]
        self._log_up = np.where(sel, self._log_up + log_up, self._log_up)
        self._log_down = np.where(sel, self._log_down + log_down, self._log_down)
        w = self.bets.log_weights[None, :, None]
        mix_up = np.logaddexp.reduce(w + self._log_up, axis=1)  # (B, G) log sum_k w_k K+_k
        mix_down = np.logaddexp.reduce(w + self._log_down, axis=1)
        bar = math.log(1.0 / self.alpha)
        index = np.arange(self.grid.size)
        below = np.where(math.log(HEDGE) + mix_up >= bar, index, -1).max(axis=1)
        above = np.where(math.log(1 - HEDGE) + mix_down >= bar, index, self.grid.size)
        self._below = np.where(active, np.maximum(self._below, below), self._below)
        self._above = np.where(active, np.minimum(self._above, above.min(axis=1)), self._above)
        mean_now = (0.5 + self._sum + phi) / (self._count + 2)
        self._var_sum = np.where(active, self._var_sum + (phi - mean_now) ** 2, self._var_sum)
        self._sum = np.where(active, self._sum + phi, self._sum)
        self._count = self._count + active
        self._known_sum = np.where(active, self._known_sum + score, self._known_sum)
        self.asked[rows[active], item[active]] = True

    def counts(self) -> np.ndarray:
        """Per sequence, items asked so far."""
        return self._count.copy()

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per sequence, (low, high): the CS, cut to what the unasked items allow."""
        low = np.where(self._below >= 0, self.grid[np.maximum(self._below, 0)], 0.0)
        high = np.where(self._above < self.grid.size,
                        self.grid[np.minimum(self._above, self.grid.size - 1)], 1.0)  # fmt: skip
        unasked = self.n_items - self.asked.sum(axis=1)
        floor = self._known_sum / self.n_items
        ceiling = (self._known_sum + unasked) / self.n_items
        return np.maximum(low, floor), np.minimum(high, ceiling)
