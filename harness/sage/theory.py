"""SAGE (reconstructed): the binormal closed-form AUROC, its simulation, and factor estimates.

The paper's abstract names three factors behind the AUROC of reference-anchored judging:
intrinsic separability, the mean shift that references induce, and the noise reduction from
averaging. Everything here beyond those names is ours: the binormal model, the exact form of
the three factors, the simulation's noise model and the estimators in `estimate_factors`.
Label results "SAGE (reconstructed)" until the paper or its code can be checked.

Model. A judge's direct score is s | correct ~ N(mu1, sigma1^2), s | wrong ~ N(mu0, sigma0^2).
One reference shifts a correct item's score by delta1 and a wrong item's by delta0, keeps the
class variance, and the k references of one item are pairwise correlated with rho. The SAGE
score is the mean of the k anchored scores, so

    AUROC_SAGE = Phi((mu1 - mu0 + delta1 - delta0) / sqrt((sigma1^2 + sigma0^2)(1 + (k-1) rho) / k))

and in probit units z_SAGE = z_dir * [1 + (delta1 - delta0)/(mu1 - mu0)] * sqrt(k/(1 + (k-1) rho)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from harness.stats import auroc

# Elements of per-reference noise drawn at once; bounds memory at about 32 MB per chunk.
_CHUNK = 1 << 22


@dataclass(frozen=True, slots=True)
class SageFactors:
    """The closed form's three probit factors and the AUROCs they imply.

    Attributes:
        z_dir: Intrinsic separability, Phi^-1(AUROC_dir) = (mu1 - mu0) / sqrt(s1^2 + s0^2).
        shift_factor: Reference mean shift, 1 + (delta1 - delta0) / (mu1 - mu0); above 1
            only when delta1 > delta0 (for mu1 > mu0). nan when mu1 == mu0, where z_dir is 0
            and the factorisation does not exist (z_sage and auroc_sage still do).
        averaging_factor: Averaging gain, sqrt(k / (1 + (k - 1) rho)); at most 1/sqrt(rho).
        z_sage: Phi^-1(AUROC_SAGE), the product of the three factors when mu1 != mu0.
        auroc_dir: Predicted AUROC of direct scoring, Phi(z_dir).
        auroc_sage: Predicted AUROC of the SAGE score, Phi(z_sage).

    """

    z_dir: float
    shift_factor: float
    averaging_factor: float
    z_sage: float
    auroc_dir: float
    auroc_sage: float

    def summary(self) -> str:
        """One line, for example `SAGE (reconstructed) closed form: z_dir 0.471 x shift ...`."""
        return (
            f"SAGE (reconstructed) closed form: z_dir {self.z_dir:.3f} x shift "
            f"{self.shift_factor:.3f} x averaging {self.averaging_factor:.3f} = z "
            f"{self.z_sage:.3f}; AUROC direct {self.auroc_dir:.4f} -> SAGE {self.auroc_sage:.4f}"
        )


@dataclass(frozen=True, slots=True)
class SimulatedScores:
    """Scores drawn from the binormal model, correct items first.

    Attributes:
        direct: (n,) direct judge score per item.
        per_ref: (n, k) anchored score per item and reference.
        is_error: (n,) 1 for a wrong annotation, 0 for a correct one.

    """

    direct: np.ndarray
    per_ref: np.ndarray
    is_error: np.ndarray


@dataclass(frozen=True, slots=True)
class FactorEstimates:
    """Model parameters estimated from scored data, the closed form's prediction, and the truth.

    Attributes:
        mu1: Mean direct score of correct items (is_error == 0).
        mu0: Mean direct score of wrong items (is_error == 1).
        sigma1: Standard deviation (ddof 1) of the direct score of correct items.
        sigma0: Standard deviation (ddof 1) of the direct score of wrong items.
        delta1: Mean over correct items of (mean anchored score - direct score).
        delta0: The same over wrong items.
        rho: Pooled within-class intraclass correlation ICC(1) of the per-reference scores,
            unclipped (it can fall below 0 by chance); nan when k == 1.
        k: References per item.
        n_correct: Number of correct items.
        n_error: Number of wrong items.
        factors: The closed form at these estimates, with rho clipped to [0, 1].
        observed_auroc_dir: AUROC(is_error, -direct).
        observed_auroc_sage: AUROC(is_error, -mean anchored score).

    """

    mu1: float
    mu0: float
    sigma1: float
    sigma0: float
    delta1: float
    delta0: float
    rho: float
    k: int
    n_correct: int
    n_error: int
    factors: SageFactors
    observed_auroc_dir: float
    observed_auroc_sage: float

    def summary(self) -> str:
        """A few lines: estimates, factors, predicted vs observed AUROC."""
        f = self.factors
        return "\n".join(
            (
                f"SAGE (reconstructed) factor estimates, k={self.k}, "
                f"n={self.n_correct} correct + {self.n_error} wrong",
                f"  mu1={self.mu1:.4f} mu0={self.mu0:.4f} sigma1={self.sigma1:.4f} "
                f"sigma0={self.sigma0:.4f} delta1={self.delta1:+.4f} delta0={self.delta0:+.4f} "
                f"rho={self.rho:.3f}",
                f"  factors: separability z {f.z_dir:.3f}, shift {f.shift_factor:.3f}, "
                f"averaging {f.averaging_factor:.3f}",
                f"  AUROC direct: predicted {f.auroc_dir:.4f}, observed "
                f"{self.observed_auroc_dir:.4f}",
                f"  AUROC SAGE:   predicted {f.auroc_sage:.4f}, observed "
                f"{self.observed_auroc_sage:.4f}",
            )
        )


def _check_model(sigma1: float, sigma0: float, k: float, rho: float, *means: float) -> None:
    values = (sigma1, sigma0, k, rho, *means)
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"model parameters must be finite, got {values}")
    if sigma1 < 0 or sigma0 < 0 or sigma1 == sigma0 == 0:
        raise ValueError(f"need sigma1, sigma0 >= 0, not both 0; got {sigma1}, {sigma0}")
    if k < 1 or int(k) != k:
        raise ValueError(f"k must be a whole number >= 1, got {k}")
    if not 0 <= rho <= 1:
        raise ValueError(f"rho must be in [0, 1], got {rho}")


def factors(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float = 0.0,
    delta0: float = 0.0,
    k: int = 1,
    rho: float = 0.0,
) -> SageFactors:
    """The three probit factors of the binormal closed form, and the AUROCs they give.

    Args:
        mu1: Mean direct score of correct items.
        mu0: Mean direct score of wrong items.
        sigma1: Standard deviation of the direct score of correct items.
        sigma0: Standard deviation of the direct score of wrong items.
        delta1: Shift one reference adds to a correct item's score.
        delta0: Shift one reference adds to a wrong item's score.
        k: References averaged per item.
        rho: Pairwise correlation of one item's k anchored scores, in [0, 1].

    Returns:
        A `SageFactors`.

    Raises:
        ValueError: For non-finite parameters, negative or all-zero sigmas, k < 1 or
            fractional, or rho outside [0, 1].

    References:
        Di, N. et al. (2026). Detecting errors in AI-generated annotations: when and why
        semantic neighbors help. ICML. (Factor names only; the form is reconstructed.)

    """
    _check_model(sigma1, sigma0, k, rho, mu1, mu0, delta1, delta0)
    scale = math.sqrt(sigma1**2 + sigma0**2)
    gap = mu1 - mu0
    z_dir = gap / scale
    shift = 1.0 + (delta1 - delta0) / gap if gap != 0 else math.nan
    averaging = math.sqrt(k / (1.0 + (k - 1) * rho))
    z_sage = (gap + delta1 - delta0) / scale * averaging
    return SageFactors(
        z_dir,
        shift,
        averaging,
        z_sage,
        float(stats.norm.cdf(z_dir)),
        float(stats.norm.cdf(z_sage)),
    )


def closed_form_auroc(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float = 0.0,
    delta0: float = 0.0,
    k: int = 1,
    rho: float = 0.0,
) -> float:
    """Predicted AUROC of the SAGE score under the binormal model; see `factors` for the args.

    With k = 1 and no shift this is the direct-scoring AUROC, Phi((mu1 - mu0) / sqrt(s1^2 + s0^2)).
    """
    return factors(mu1, mu0, sigma1, sigma0, delta1, delta0, k, rho).auroc_sage


def limit_k_infinity(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float = 0.0,
    delta0: float = 0.0,
    rho: float = 0.0,
) -> float:
    """AUROC as k -> infinity: Phi((mu1 - mu0 + delta1 - delta0) / sqrt((s1^2 + s0^2) rho)).

    Notes:
        Equals Phi(z_dir * shift_factor / sqrt(rho)) when mu1 != mu0. With rho = 0 the noise
        averages away entirely: the limit is 1, 0 or 1/2 as the shifted gap is positive,
        negative or zero.

    """
    _check_model(sigma1, sigma0, 1, rho, mu1, mu0, delta1, delta0)
    gap = mu1 - mu0 + delta1 - delta0
    if rho == 0:
        return 1.0 if gap > 0 else 0.0 if gap < 0 else 0.5
    return float(stats.norm.cdf(gap / math.sqrt((sigma1**2 + sigma0**2) * rho)))


def reference_quality_shift(q: float, delta_good: float, delta_bad: float) -> float:
    """Net mean shift delta1 - delta0 when a fraction q of references is good.

    Args:
        q: Fraction of good references, in [0, 1].
        delta_good: delta1 - delta0 that a good (matched, correct) reference induces, > 0.
        delta_bad: delta1 - delta0 that a bad reference induces, <= 0.

    Returns:
        q * delta_good + (1 - q) * delta_bad, negative when q is small enough.

    """
    if not 0 <= q <= 1:
        raise ValueError(f"q must be in [0, 1], got {q}")
    return q * delta_good + (1 - q) * delta_bad


def _draw_class(
    rng: np.random.Generator,
    n: int,
    mu: float,
    sigma: float,
    delta: float,
    k: int,
    rho: float,
    keep_per_ref: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Direct scores (n,) and anchored scores, (n, k) or their per-item mean (n,)."""
    u = rng.standard_normal(n)  # (n,) the item's own deviation, shared by its references
    rows = max(1, _CHUNK // k)
    parts = []
    for start in range(0, n, rows):
        e = rng.standard_normal((min(rows, n - start), k))  # (rows, k) per-reference noise
        parts.append(e if keep_per_ref else e.mean(axis=1))
    e = np.concatenate(parts)  # (n, k) or (n,)
    shared = math.sqrt(rho) * (u[:, None] if keep_per_ref else u)
    anchored = mu + delta + sigma * (shared + math.sqrt(1.0 - rho) * e)
    return mu + sigma * u, anchored


def _simulate(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float,
    delta0: float,
    k: int,
    rho: float,
    n_per_class: int,
    seed: int,
    keep_per_ref: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _check_model(sigma1, sigma0, k, rho, mu1, mu0, delta1, delta0)
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class}")
    rng = np.random.default_rng(seed)
    d1, a1 = _draw_class(rng, n_per_class, mu1, sigma1, delta1, int(k), rho, keep_per_ref)
    d0, a0 = _draw_class(rng, n_per_class, mu0, sigma0, delta0, int(k), rho, keep_per_ref)
    is_error = np.repeat([0, 1], n_per_class)
    return np.concatenate([d1, d0]), np.concatenate([a1, a0]), is_error


def simulate_scores(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float,
    delta0: float,
    k: int,
    rho: float,
    n_per_class: int,
    seed: int,
) -> SimulatedScores:
    """Draw direct and per-reference anchored scores from the binormal model.

    Each item has its own deviation u ~ N(0, 1); its direct score is mu + sigma * u. Its
    j-th anchored score is mu + delta + sigma * (sqrt(rho) * u + sqrt(1 - rho) * e_j) with
    e_j ~ N(0, 1) independent: a shared component of variance rho * sigma^2 plus an
    independent one of variance (1 - rho) * sigma^2, as in spec section 3. Making the shared
    component the item's direct deviation is our choice; with rho = 1 each reference repeats
    the direct judgment shifted by delta. Only the marginal law of the mean anchored score
    enters the closed form.
    """
    direct, per_ref, is_error = _simulate(
        mu1, mu0, sigma1, sigma0, delta1, delta0, k, rho, n_per_class, seed, True
    )
    return SimulatedScores(direct, per_ref, is_error)


def simulate_auroc(
    mu1: float,
    mu0: float,
    sigma1: float,
    sigma0: float,
    delta1: float,
    delta0: float,
    k: int,
    rho: float,
    n_per_class: int = 200_000,
    seed: int = 0,
) -> float:
    """Monte-Carlo AUROC(is_error, -S) of the SAGE score S under the model of `simulate_scores`.

    Notes:
        The per-reference noise is drawn in chunks and averaged as it goes, so k = 50 at
        200,000 items per class needs about 35 MB. The Monte-Carlo standard error at that
        size is about 0.001.

    """
    _, sage, is_error = _simulate(
        mu1, mu0, sigma1, sigma0, delta1, delta0, k, rho, n_per_class, seed, False
    )
    return auroc(-sage, is_error)


def _pooled_icc(per_ref: np.ndarray, groups: tuple[np.ndarray, ...]) -> float:
    """One-way ICC(1) of the rows of per_ref (n, k), class means removed from the row means."""
    n, k = per_ref.shape
    row_mean = per_ref.mean(axis=1)  # (n,)
    between = sum(float(np.sum((row_mean[g] - row_mean[g].mean()) ** 2)) for g in groups)
    msb = k * between / (n - len(groups))
    msw = float(np.sum((per_ref - row_mean[:, None]) ** 2)) / (n * (k - 1))
    denom = msb + (k - 1) * msw
    return (msb - msw) / denom if denom > 0 else math.nan


def estimate_factors(
    direct_scores: ArrayLike, sage_scores_per_ref: ArrayLike, is_error: ArrayLike
) -> FactorEstimates:
    """Estimate the binormal model from scored data and compare its prediction with the truth.

    Args:
        direct_scores: (n,) the judge's direct score per item; higher means "more likely
            correct".
        sage_scores_per_ref: (n, k) the anchored score of each item under each of its k
            references, on the same scale.
        is_error: (n,) 1 where the annotation is wrong, 0 where it is correct.

    Returns:
        A `FactorEstimates`: mu and sigma per class from the direct scores, delta per class
        as the class mean of (mean anchored - direct), rho as the pooled within-class
        ICC(1) of the anchored scores, the closed form at those estimates, and the observed
        direct and SAGE AUROCs (error score = -score).

    Raises:
        ValueError: For mismatched shapes, non-finite scores, labels that are not 0/1, or
            fewer than two items in a class.

    Notes:
        These estimators are ours (SAGE reconstructed). The closed form assumes each
        reference keeps the direct score's class variance; when the anchored scores are
        much more or less spread out than the direct ones, the prediction drifts from the
        observed SAGE AUROC even with the right means. rho is clipped to [0, 1] for the
        prediction; with k = 1 it is not identified and does not enter.

    """
    direct = np.asarray(direct_scores, dtype=float)
    per_ref = np.asarray(sage_scores_per_ref, dtype=float)
    labels = np.asarray(is_error)
    if direct.ndim != 1 or per_ref.ndim != 2 or labels.shape != direct.shape:
        raise ValueError(
            f"need direct_scores (n,), sage_scores_per_ref (n, k) and is_error (n,), got "
            f"shapes {direct.shape}, {per_ref.shape} and {labels.shape}"
        )
    if per_ref.shape[0] != direct.size or per_ref.shape[1] < 1:
        raise ValueError(
            f"sage_scores_per_ref must have one row per item and k >= 1 columns, got shape "
            f"{per_ref.shape} for {direct.size} items"
        )
    if not (np.all(np.isfinite(direct)) and np.all(np.isfinite(per_ref))):
        raise ValueError("scores must be finite; drop or impute nan and inf first")
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError("is_error must be 0/1 (or booleans)")
    wrong = labels == 1
    right = ~wrong
    n_error, n_correct = int(wrong.sum()), int(right.sum())
    if min(n_error, n_correct) < 2:
        raise ValueError(
            f"need at least two correct and two wrong items, got {n_correct} and {n_error}"
        )
    k = per_ref.shape[1]
    sage = per_ref.mean(axis=1)
    lift = sage - direct
    mu1, mu0 = float(direct[right].mean()), float(direct[wrong].mean())
    sigma1, sigma0 = float(direct[right].std(ddof=1)), float(direct[wrong].std(ddof=1))
    delta1, delta0 = float(lift[right].mean()), float(lift[wrong].mean())
    rho = _pooled_icc(per_ref, (right, wrong)) if k > 1 else math.nan
    rho_used = 0.0 if math.isnan(rho) else min(1.0, max(0.0, rho))
    predicted = factors(mu1, mu0, sigma1, sigma0, delta1, delta0, k, rho_used)
    return FactorEstimates(
        mu1,
        mu0,
        sigma1,
        sigma0,
        delta1,
        delta0,
        rho,
        k,
        n_correct,
        n_error,
        predicted,
        auroc(-direct, labels),
        auroc(-sage, labels),
    )
