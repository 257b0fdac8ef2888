"""Mask-ratio schedules and the masked-diffusion (MD) loss for the k-parity suite.

On k-parity (spec `k-parity.md`), a mask pattern is *signal* when exactly one position of
S' = S ∪ {y} (k + 1 positions) is masked: that position is then fixed by the others. This module
holds the signal probability for a fixed mask rate t, its average over a window U[t0, t1], the
window U[0, t1] that maximises that average, the `MaskSchedule` that draws t per sequence, and
the MD loss that uses it.

Provenance, honestly stated:
    - The formula P_S(t) = (k+1)·t·(1−t)^k, its window average, and the stationary condition
      for the optimal window were derived by us (spec §2 and §4), not read from the paper. The
      k = 6 root, 0.2459, agrees with the paper's reported U[0, 0.246] only through a secondhand
      summary.
    - The loss is the standard MDLM form, (1/t)·Σ masked CE, known to us from a secondhand
      summary of the paper.
    - Normalising by sequence length is our choice (spec §2 step 4).

References:
    J. Huang, B. Mirzasoleiman. Tuning the Implicit Regularizer of Masked Diffusion Language
    Models: Enhancing Generalization via Insights from k-Parity. arXiv 2601.22450, ICML 2026.

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
from scipy.optimize import brentq

if TYPE_CHECKING:
    import torch

ScheduleKind = Literal["uniform", "window", "fixed", "optimal"]
Weighting = Literal["none", "inv_t"]

VALID_KINDS: tuple[str, ...] = get_args(ScheduleKind)
VALID_WEIGHTINGS: tuple[str, ...] = get_args(Weighting)

# Smallest t used in the 1/t weight: t = 0 can be drawn from U[0, t1], and 1/t would be inf.
MIN_T_FOR_WEIGHT = 1e-6


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def signal_probability(t: float | np.ndarray, k: int) -> float | np.ndarray:
    """Probability that a mask drawn at rate t masks exactly one of the k + 1 positions of S'.

    P_S(t) = (k+1)·t·(1−t)^k, maximised at t = 1/(k+1).

    Args:
        t: Mask rate in [0, 1], a float or an array of them.
        k: Parity order |S|, an integer >= 1.

    Returns:
        A float for a scalar `t`, otherwise an array of the same shape.

    Raises:
        ValueError: If k < 1 or any t lies outside [0, 1].

    """
    _check_k(k)
    arr = np.asarray(t, dtype=float)
    if np.any((arr < 0) | (arr > 1)) or np.any(np.isnan(arr)):
        raise ValueError(f"t must lie in [0, 1], got {t!r}")
    out = (k + 1) * arr * (1 - arr) ** k
    return float(out) if out.ndim == 0 else out


def _signal_integral(t: float, k: int) -> float:
    """F(t) = (k+1)·∫₀^t s(1−s)^k ds, in the closed form of spec §2."""
    return (k + 1) * ((1 - (1 - t) ** (k + 1)) / (k + 1) - (1 - (1 - t) ** (k + 2)) / (k + 2))


def window_signal(t0: float, t1: float, k: int) -> float:
    """Signal probability averaged over t ~ U[t0, t1].

    P̄_S = (F(t1) − F(t0)) / (t1 − t0), with F(t) = (k+1)·∫₀^t s(1−s)^k ds.

    Args:
        t0: Lower end of the window.
        t1: Upper end of the window, with 0 <= t0 <= t1 <= 1.
        k: Parity order |S|, an integer >= 1.

    Returns:
        The window average; P_S(t0) when the window has zero width.

    Notes:
        For U[0, 1] this is exactly 1/(k+2). Derived here (spec §4), not taken from the paper.

    Raises:
        ValueError: If k < 1 or the window is not 0 <= t0 <= t1 <= 1.

    """
    _check_k(k)
    if not 0 <= t0 <= t1 <= 1:
        raise ValueError(f"need 0 <= t0 <= t1 <= 1, got t0={t0}, t1={t1}")
    if t0 == t1:
        return float(signal_probability(t0, k))
    return (_signal_integral(t1, k) - _signal_integral(t0, k)) / (t1 - t0)


def _stationary(u: float, k: int) -> float:
    """Left side of the stationary condition of spec §2, in u = 1 − t1."""
    return (
        (k + 1) * (k + 2) * u**k
        - (k + 2) * (2 * k + 1) * u ** (k + 1)
        + (k + 1) ** 2 * u ** (k + 2)
        - 1
    )


def optimal_t1(k: int) -> float:
    """The t1 that maximises the window-averaged signal P̄_S over windows U[0, t1].

    Solves (k+1)(k+2)·u^k − (k+2)(2k+1)·u^(k+1) + (k+1)²·u^(k+2) − 1 = 0 for u = 1 − t1
    with `scipy.optimize.brentq`, and returns t1 = 1 − u.

    Args:
        k: Parity order |S|, an integer >= 1.

    Returns:
        The optimal t1, for example 0.4156 at k = 3 and 0.2459 at k = 6.

    Notes:
        The polynomial is (k+1)(k+2)·[t1²(1−t1)^k − ∫₀^t1 t(1−t)^k dt], so u = 1 (t1 = 0) is a
        double root that brentq must avoid. The bracket [0, k/(k+1)] does so: the polynomial is
        −1 at u = 0 and positive at u = k/(k+1) (t1 = 1/(k+1), where P_S peaks and so exceeds
        its own average over [0, t1]); past that point it decreases monotonically in t1, so the
        root in the bracket is the only one in (0, 1). Derived here (spec §4).

    Raises:
        ValueError: If k < 1.

    """
    _check_k(k)
    k = int(k)
    u = brentq(_stationary, 0.0, k / (k + 1), args=(k,), xtol=1e-15, rtol=1e-15)
    return 1.0 - float(u)


@dataclass(frozen=True, slots=True)
class MaskSchedule:
    """How the mask rate t is drawn for each training sequence, and how the loss is weighted.

    Build one with `make_schedule`; the constructor checks the fields but computes nothing.

    Attributes:
        kind: "uniform" (U[0, 1]), "window" (U[a, b]), "fixed" (the constant t) or
            "optimal" (U[0, optimal_t1(k)]).
        t0: Lower end of the range of t.
        t1: Upper end of the range of t; equal to t0 for "fixed".
        weighting: "inv_t" weights each sequence's loss by 1/t (the MDLM form); "none" by 1.

    """

    kind: ScheduleKind
    t0: float
    t1: float
    weighting: Weighting

    def __post_init__(self) -> None:
        if self.kind not in VALID_KINDS:
            raise ValueError(f"unknown schedule kind {self.kind!r}; valid kinds: {VALID_KINDS}")
        if self.weighting not in VALID_WEIGHTINGS:
            raise ValueError(
                f"unknown weighting {self.weighting!r}; valid weightings: {VALID_WEIGHTINGS}"
            )
        if self.kind == "fixed":
            if not (0 < self.t0 <= 1 and self.t0 == self.t1):
                raise ValueError(
                    f"a fixed schedule needs 0 < t0 == t1 <= 1, got t0={self.t0}, t1={self.t1}"
                )
        elif not 0 <= self.t0 < self.t1 <= 1:
            raise ValueError(
                f"a {self.kind} schedule needs 0 <= t0 < t1 <= 1, got t0={self.t0}, t1={self.t1}"
            )

    def sample_t(self, batch: int, generator: torch.Generator) -> torch.Tensor:
        """Draw one mask rate per sequence.

        Args:
            batch: Number of sequences B.
            generator: Source of randomness; its device is the device of the result.

        Returns:
            A float32 tensor of shape (B,): U[t0, t1) draws, or the constant for "fixed",
            which draws nothing from the generator.

        """
        import torch

        if batch < 0:
            raise ValueError(f"batch must be >= 0, got {batch}")
        if self.kind == "fixed":
            return torch.full((batch,), self.t0, device=generator.device)
        u = torch.rand(batch, generator=generator, device=generator.device)  # (B,)
        return self.t0 + (self.t1 - self.t0) * u

    def loss_weight(self, t: torch.Tensor) -> torch.Tensor:
        """Per-sequence loss weight: 1/t for "inv_t", ones for "none".

        Notes:
            For "inv_t", t is clamped to at least `MIN_T_FOR_WEIGHT` (1e-6) first, so a draw of
            exactly t = 0 gets the finite weight 1e6 instead of inf. Such a draw masks nothing,
            so its loss is zero either way.

        """
        import torch

        if self.weighting == "none":
            return torch.ones_like(t)
        return 1.0 / t.clamp_min(MIN_T_FOR_WEIGHT)

    def describe(self) -> str:
        """One line, for example `optimal U[0, 0.4156], unweighted`."""
        if self.kind == "fixed":
            rng = f"t={self.t0:.4g}"
        else:
            rng = f"U[{self.t0:.4g}, {self.t1:.4g}]"
        weight = "unweighted" if self.weighting == "none" else "weighted by 1/t"
        return f"{self.kind} {rng}, {weight}"


def make_schedule(
    kind: ScheduleKind,
    *,
    k: int,
    a: float | None = None,
    b: float | None = None,
    t: float | None = None,
    weighting: Weighting = "none",
) -> MaskSchedule:
    """Build a `MaskSchedule` from its kind and the options that kind takes.

    Args:
        kind: One of "uniform", "window", "fixed", "optimal".
        k: Parity order |S|, an integer >= 1; sets the window of "optimal".
        a: Lower end of the window, only for "window".
        b: Upper end of the window, only for "window"; needs 0 <= a < b <= 1.
        t: The constant mask rate, only for "fixed"; needs 0 < t <= 1.
        weighting: "none" or "inv_t".

    Returns:
        The schedule: uniform is U[0, 1], window U[a, b], fixed the constant t, optimal
        U[0, optimal_t1(k)].

    Raises:
        ValueError: For an unknown kind or weighting (the message lists the valid ones), a
            missing or out-of-range option, or an option the kind does not take.

    """
    _check_k(k)
    if kind not in VALID_KINDS:
        raise ValueError(f"unknown schedule kind {kind!r}; valid kinds: {VALID_KINDS}")
    if weighting not in VALID_WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r}; valid weightings: {VALID_WEIGHTINGS}")
    given = {name for name, v in (("a", a), ("b", b), ("t", t)) if v is not None}
    takes = {"window": {"a", "b"}, "fixed": {"t"}}.get(kind, set())
    if given - takes:
        raise ValueError(f"schedule kind {kind!r} does not take {sorted(given - takes)}")
    if kind == "window":
        if a is None or b is None or not 0 <= a < b <= 1:
            raise ValueError(f"a window schedule needs 0 <= a < b <= 1, got a={a}, b={b}")
        return MaskSchedule("window", float(a), float(b), weighting)
    if kind == "fixed":
        if t is None or not 0 < t <= 1:
            raise ValueError(f"a fixed schedule needs 0 < t <= 1, got t={t}")
        return MaskSchedule("fixed", float(t), float(t), weighting)
    if kind == "optimal":
        return MaskSchedule("optimal", 0.0, optimal_t1(k), weighting)
    return MaskSchedule("uniform", 0.0, 1.0, weighting)


def draw_mask(t: torch.Tensor, length: int, generator: torch.Generator) -> torch.Tensor:
    """Mask each position of each sequence independently, with probability t[b] for row b.

    Args:
        t: Mask rates, shape (B,), each in [0, 1].
        length: Sequence length T (n + 1 on k-parity: the bits and y are all maskable).
        generator: Source of randomness; must be on the same device as `t`.

    Returns:
        A bool tensor of shape (B, T), True where masked. A row may be all False; keep it (see
        `md_loss`).

    """
    import torch

    if t.ndim != 1:
        raise ValueError(f"t must have shape (B,), got {tuple(t.shape)}")
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    u = torch.rand(t.shape[0], length, generator=generator, device=t.device)  # (B, T)
    return u < t[:, None]  # (B, T)


def md_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    masked: torch.Tensor,
    t: torch.Tensor,
    schedule: MaskSchedule,
) -> torch.Tensor:
    """Masked-diffusion loss for a batch, as a scalar.

    Per sequence b: w(t[b])·Σ_{i masked} CE(logits[b, i], targets[b, i]) / T, where w is
    `schedule.loss_weight` (1/t or 1); then the mean over the B sequences.

    Args:
        logits: Shape (B, T, V); V = 2 for the binary values of k-parity.
        targets: Shape (B, T), the clean token at each position (integers in [0, V)).
        masked: Shape (B, T), bool, True where the input was masked.
        t: Shape (B,), the mask rate each sequence was drawn at.
        schedule: Supplies the per-sequence weight.

    Notes:
        A sequence with no masked position contributes exactly zero and still counts in the
        batch mean. It is not resampled, so the distribution of t stays exactly the schedule's
        (spec §5.1). The (1/t)·Σ masked CE form is the standard MDLM loss, known to us from a
        secondhand summary; dividing by T is our choice (spec §2 step 4).

    """
    import torch
    import torch.nn.functional as F

    if logits.ndim != 3 or logits.shape[:2] != targets.shape or masked.shape != targets.shape:
        raise ValueError(
            "need logits (B, T, V), targets and masked (B, T); got "
            f"{tuple(logits.shape)}, {tuple(targets.shape)}, {tuple(masked.shape)}"
        )
    if masked.dtype != torch.bool:
        raise ValueError(f"masked must be a bool tensor, got {masked.dtype}")
    batch, length = targets.shape
    if t.shape != (batch,):
        raise ValueError(f"t must have shape ({batch},), got {tuple(t.shape)}")
    ce = F.cross_entropy(
        logits.reshape(batch * length, -1), targets.reshape(-1).long(), reduction="none"
    ).view(batch, length)  # (B, T)
    # where, not multiply: an unmasked position's CE (even inf) must not leak in as 0·inf.
    per_seq = torch.where(masked, ce, torch.zeros_like(ce)).sum(dim=1)  # (B,)
    weight = schedule.loss_weight(t.to(ce.dtype))  # (B,)
    return (weight * per_seq / length).mean()
