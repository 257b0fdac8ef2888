"""Prediction-powered inference (PPI and PPI++) for a mean.

A judge or model predicts Ŷ on N unlabelled items and on n labelled ones; the labelled
items also carry the true Y. PPI averages the predictions and corrects them with the mean
labelled residual Y − Ŷ. PPI++ shrinks the predictions by a data-tuned λ ∈ [0, 1], so it
never does much worse than the classical mean of the n labels.

Both assume that the labelled items are an iid sample from the distribution that the
unlabelled items come from. Under prior shift, or when the predictor behaves differently on
the unlabelled items, both are biased (see `specs/calibrated-judge.md` §2).

Every function returns a `PPIEstimate`, a frozen result that names its method and λ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered point estimate of a mean with a two-sided Wald interval.

    Attributes:
        estimate: The point estimate θ̂ = mean_N(λ·Ŷ_unlabelled) + mean_n(Y − λ·Ŷ_labelled).
        low: Lower bound of the interval, not clipped to the range of Y.
        high: Upper bound of the interval, not clipped to the range of Y.
        confidence: Nominal coverage 1 − α, for example 0.95.
        method: "ppi" (λ = 1) or "ppi++" (λ tuned from the data, or given).
        lam: The λ that multiplied the predictions: 1.0 for "ppi".
        n: Number of labelled items (with both Y and Ŷ).
        N: Number of unlabelled items (with Ŷ only).

    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: Literal["ppi", "ppi++"]
    lam: float
    n: int
    N: int

    def summary(self) -> str:
        """One line of text, for example `0.680 [0.659, 0.701] (ppi, lam=1.00, n=2000, N=20000)`."""
        return (
            f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] "
            f"({self.method}, lam={self.lam:.2f}, n={self.n}, N={self.N})"
        )


def ppi_mean(
    y_labelled: ArrayLike,
    yhat_labelled: ArrayLike,
    yhat_unlabelled: ArrayLike,
    *,
    alpha: float = 0.05,
) -> PPIEstimate:
    """Classic prediction-powered estimate and interval for a mean (λ = 1).

    θ̂ = mean(Ŷ_unl) + mean(Y − Ŷ_lab), and the interval is
    θ̂ ± z·sqrt(Var(Ŷ_unl)/N + Var(Y − Ŷ_lab)/n) with z = Φ⁻¹(1 − α/2).

    Args:
        y_labelled: True values Y of the n labelled items (binary or real), 1-D.
        yhat_labelled: Predictions Ŷ for the same n items, in the same order.
        yhat_unlabelled: Predictions Ŷ for the N unlabelled items, 1-D.
        alpha: Error level; the interval targets coverage 1 − α. Must be in (0, 1).

    Returns:
        A `PPIEstimate` with method "ppi" and lam 1.0.

    Raises:
        ValueError: If an input is not 1-D, n or N is below 2, the labelled arrays differ in
            length, a value is nan or infinite, or α is outside (0, 1).

    Notes:
        The variances are population variances (ddof = 0), as in ppi_py's `ppi_mean_ci`,
        which this matches with `lam=1`. The interval is a Wald interval: it covers at the
        nominal rate only when the labelled items are an iid sample from the unlabelled
        items' distribution and n is large enough for the CLT. Under prior shift (the
        labelled prevalence θ_c differs from the test prevalence θ_t, the judge's
        sensitivity q1 and specificity q0 unchanged) a binary judge gives
        E[θ̂] = θ_c + J·(θ_t − θ_c) with J = q0 + q1 − 1; if the judge's q1 drops to q1' on
        the unlabelled items only, E[θ̂] = θ_t·(1 + q1' − q1) when θ_c = θ_t. The bounds are
        not clipped, so for a proportion they can leave [0, 1].

    References:
        Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., and Zrnic, T. (2023).
        Prediction-powered inference. Science 382(6671), 669-674. arXiv:2301.09633.

    """
    y, yhat, yhat_unl = _validate(y_labelled, yhat_labelled, yhat_unlabelled, alpha)
    return _estimate(y, yhat, yhat_unl, 1.0, alpha, "ppi")


def ppi_plus_plus_mean(
    y_labelled: ArrayLike,
    yhat_labelled: ArrayLike,
    yhat_unlabelled: ArrayLike,
    *,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIEstimate:
    """Power-tuned prediction-powered (PPI++) estimate and interval for a mean.

    θ̂ = mean(λ·Ŷ_unl) + mean(Y − λ·Ŷ_lab), and the interval is
    θ̂ ± z·sqrt(Var(λ·Ŷ_unl)/N + Var(Y − λ·Ŷ_lab)/n) with z = Φ⁻¹(1 − α/2). By default
    λ̂ = Cov(Y, Ŷ_lab) / ((1 + n/N)·Var(Ŷ)), with Var(Ŷ) taken over the labelled and
    unlabelled predictions pooled, clipped to [0, 1]. λ = 0 is the classical mean of the
    labels; λ = 1 is `ppi_mean`.

    Args:
        y_labelled: True values Y of the n labelled items (binary or real), 1-D.
        yhat_labelled: Predictions Ŷ for the same n items, in the same order.
        yhat_unlabelled: Predictions Ŷ for the N unlabelled items, 1-D.
        alpha: Error level; the interval targets coverage 1 − α. Must be in (0, 1).
        lam: A fixed λ (any finite real, used as given, without clipping), or None to tune
            it from the data as above.

    Returns:
        A `PPIEstimate` with method "ppi++" and the λ used.

    Raises:
        ValueError: As for `ppi_mean`, and if `lam` is given but not finite.

    Notes:
        Conventions follow ppi_py 0.2.3 (`ppi_mean_pointestimate` and `ppi_mean_ci` with
        their default tuning), which the tests match to 1e-8; the spec does not fix them:
        Cov(Y, Ŷ) in λ̂ has ddof = 0, the pooled Var(Ŷ) in λ̂ has ddof = 1, and the two
        variances in the interval have ddof = 0. If the pooled predictions are constant,
        λ̂ is 0/0 (ppi_py returns nan); here λ̂ = 0, and the estimate and interval are
        the same for every λ in that case. With λ̂ tuned on the same data the interval is
        still a plug-in Wald interval, valid as n → ∞. A fixed λ keeps θ̂ exactly unbiased
        under iid sampling; the tuned λ̂ adds an O(1/n) bias. The shift caveats of
        `ppi_mean` apply here too, with the bias scaled by λ.

    References:
        Angelopoulos, A. N., Duchi, J. C., and Zrnic, T. (2023). PPI++: Efficient
        prediction-powered inference. arXiv:2311.01453.

    """
    y, yhat, yhat_unl = _validate(y_labelled, yhat_labelled, yhat_unlabelled, alpha)
    if lam is None:
        lam = _tuned_lambda(y, yhat, yhat_unl)
    elif not math.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None, got {lam}")
    return _estimate(y, yhat, yhat_unl, float(lam), alpha, "ppi++")


def _tuned_lambda(
    y: NDArray[np.float64], yhat: NDArray[np.float64], yhat_unl: NDArray[np.float64]
) -> float:
    """λ̂ = Cov(Y, Ŷ) / ((1 + n/N)·Var(pooled Ŷ)), clipped to [0, 1]; 0 if Ŷ is constant."""
    n, big_n = y.size, yhat_unl.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))  # ddof = 0, as ppi_py
    var_pooled = float(np.var(np.concatenate([yhat, yhat_unl]), ddof=1))  # ddof = 1, as ppi_py
    if var_pooled == 0.0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var_pooled), 0.0, 1.0))


def _estimate(
    y: NDArray[np.float64],
    yhat: NDArray[np.float64],
    yhat_unl: NDArray[np.float64],
    lam: float,
    alpha: float,
    method: Literal["ppi", "ppi++"],
) -> PPIEstimate:
    n, big_n = y.size, yhat_unl.size
    rectifier = y - lam * yhat
    estimate = float(lam * yhat_unl.mean() + rectifier.mean())
    se = math.sqrt(float(np.var(lam * yhat_unl)) / big_n + float(np.var(rectifier)) / n)
    half = float(stats.norm.ppf(1 - alpha / 2)) * se
    return PPIEstimate(estimate, estimate - half, estimate + half, 1 - alpha, method, lam, n, big_n)


def _validate(
    y_labelled: ArrayLike, yhat_labelled: ArrayLike, yhat_unlabelled: ArrayLike, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    arrays = []
    for name, values in (
        ("y_labelled", y_labelled),
        ("yhat_labelled", yhat_labelled),
        ("yhat_unlabelled", yhat_unlabelled),
    ):
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be numeric: {err}") from err
        if array.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
        if array.size < 2:
            raise ValueError(f"{name} needs at least 2 values for a variance, got {array.size}")
        if not np.all(np.isfinite(array)):
            bad = int(np.count_nonzero(~np.isfinite(array)))
            raise ValueError(f"{name} has {bad} nan or infinite value(s); drop or impute them")
        arrays.append(array)
    y, yhat, yhat_unl = arrays
    if y.size != yhat.size:
        raise ValueError(
            "y_labelled and yhat_labelled must pair up item by item, "
            f"got lengths {y.size} and {yhat.size}"
        )
    return y, yhat, yhat_unl
