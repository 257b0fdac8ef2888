"""The placeholder dynamics fitted as a censored regression, for entropies clipped at a bound.

Scheduling entropy lies in [0, ln K] (K executors). Where the step map would carry H past a
bound, the observed H(t+1) is the bound itself: such a transition says only that the step went
at least that far. Least squares reads it as an exact value, so a share of clipped transitions
biases every parameter (issue 31: with 65% of transitions at ln 7, b came out -0.001 against a
true 0.05, and the label was confidently wrong). Here the step

    H(t+1)* = H_t + beta_0 + beta_1 H_t + beta_2 c_t + e,   e ~ N(0, sigma^2),
    H(t+1)  = min(max(H(t+1)*, low), high),

is fitted by maximum likelihood with both bounds censoring (a two-limit Tobit model): an
uncensored transition contributes its normal density, one at the ceiling the probability of
reaching it, one at the floor the probability of falling to it. Intervals are Wald intervals
from the cluster-robust (sandwich) covariance, clustered by trajectory, with the G / (G - 1)
correction; H_min's by the delta method.

Notes:
    The fit is not identifiable when nearly every transition is censored or the information
    matrix is singular; `tobit_fit` then says why, and the caller refuses a label. The Wald
    intervals' coverage at the suite's sizes is checked by Monte-Carlo in the tests (slow).

References:
    Tobin, J. (1958). Estimation of relationships for limited dependent variables.
    Econometrica 26(1), 24-36. Rosett, R. N. and Nelson, F. D. (1975). Estimation of the
    two-limit probit regression model. Econometrica 43(1), 141-146.

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_Z95 = 1.959963984540054  # the normal's 97.5% quantile
MAX_CENSORED_SHARE = 0.9  # above this share of censored transitions: not identifiable


@dataclass(frozen=True, slots=True)
class TobitFit:
    """A two-limit Tobit fit of the step map."""

    beta: tuple[float, ...]  # (intercept, coefficient of H_t, coefficient of c_t)
    sigma: float  # the step noise's standard deviation
    params: tuple[float, float, float]  # (a, b, H_min)
    low: tuple[float, float, float]  # 95% Wald interval, lower ends (nan: not estimable)
    high: tuple[float, float, float]  # upper ends
    unidentifiable: str  # why the fit cannot be read ("" when it can)


def _loglik(
    theta: np.ndarray, x: np.ndarray, dh: np.ndarray, up: np.ndarray, down: np.ndarray,
    d_hi: np.ndarray, d_lo: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Per-transition log-likelihood and score (n,) and (n, p + 1); theta = (beta, log sigma)."""
    from scipy.special import log_ndtr

    beta, sigma = theta[:-1], math.exp(theta[-1])
    mu = x @ beta  # (n,)
    ll = np.empty(len(dh))
    dmu = np.empty(len(dh))  # d ll / d mu
    dls = np.empty(len(dh))  # d ll / d log sigma
    mid = ~(up | down)
    r = (dh[mid] - mu[mid]) / sigma
    ll[mid] = -0.5 * r**2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)
    dmu[mid] = r / sigma
    dls[mid] = r**2 - 1
    for mask, sign, bound in ((up, 1.0, d_hi), (down, -1.0, d_lo)):
        u = sign * (mu[mask] - bound[mask]) / sigma
        log_cdf = log_ndtr(u)
        mills = np.exp(-0.5 * u**2 - 0.5 * math.log(2 * math.pi) - log_cdf)  # phi / Phi
        ll[mask] = log_cdf
        dmu[mask] = sign * mills / sigma
        dls[mask] = -mills * u
    score = np.column_stack([x * dmu[:, None], dls])
    return ll, score


def tobit_fit(
    rows: list[np.ndarray], low: float, high: float, min_clusters: int, tol: float = 1e-9
) -> TobitFit:
    """Fit the censored step map to per-trajectory rows (1, H_t, c_t, dH) with bounds [low, high].

    Intervals are not estimable (nan) with fewer than `min_clusters` trajectories.
    """
    from scipy.optimize import minimize

    data = np.vstack(rows)
    cluster = np.concatenate([np.full(len(r), i) for i, r in enumerate(rows)])
    x, h, dh = data[:, :3], data[:, 1], data[:, 3]
    nxt = h + dh
    up, down = nxt >= high - tol, nxt <= low + tol
    d_hi, d_lo = high - h, low - h
    censored = float(np.mean(up | down))
    start_beta = np.linalg.lstsq(x, dh, rcond=None)[0]
    resid = dh - x @ start_beta
    start = np.append(start_beta, math.log(max(float(np.std(resid)), 1e-3)))

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        ll, score = _loglik(theta, x, dh, up, down, d_hi, d_lo)
        return -float(ll.sum()), -score.sum(axis=0)

    done = minimize(objective, start, jac=True, method="BFGS", options={"gtol": 1e-8})
    theta = done.x
    beta = theta[:3]
    a, b = -beta[1], beta[2]
    h_min = beta[0] / a if a != 0 else math.nan
    params = (float(a), float(b), float(h_min))
    nan3 = (math.nan, math.nan, math.nan)
    why = ""
    if censored > MAX_CENSORED_SHARE:
        why = f"{censored:.0%} of transitions are censored (more than {MAX_CENSORED_SHARE:.0%})"
    elif not np.all(np.isfinite(theta)):
        why = "the censored fit did not converge"
    hessian = _hessian(theta, x, dh, up, down, d_hi, d_lo)
    try:
        inverse = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        inverse = None
    if not why and (inverse is None or np.linalg.cond(hessian) > 1e12):
        why = "the censored fit's information matrix is singular"
    groups = len(rows)
    if why or inverse is None or groups < min_clusters:
        return TobitFit(tuple(map(float, beta)), math.exp(theta[-1]), params, nan3, nan3, why)
    _, score = _loglik(theta, x, dh, up, down, d_hi, d_lo)
    per = np.zeros((groups, score.shape[1]))
    np.add.at(per, cluster, score)
    meat = per.T @ per * groups / (groups - 1)
    cov = inverse @ meat @ inverse
    # gradients of (a, b, H_min) with respect to (beta_0, beta_1, beta_2)
    d_hmin = (1 / a, beta[0] / a**2) if a else (math.nan, math.nan)
    grads = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [*d_hmin, 0.0]])
    var = np.einsum("ij,jk,ik->i", grads, cov[:3, :3], grads)
    se = np.sqrt(np.where(var >= 0, var, np.nan))
    lows = tuple(float(p - _Z95 * s) for p, s in zip(params, se, strict=True))
    highs = tuple(float(p + _Z95 * s) for p, s in zip(params, se, strict=True))
    if not all(math.isfinite(v) for v in (*lows[:2], *highs[:2])):
        why = "the censored fit's intervals are not finite"
    return TobitFit(tuple(map(float, beta)), math.exp(theta[-1]), params, lows, highs, why)  # type: ignore[arg-type]


def _hessian(
    theta: np.ndarray, x: np.ndarray, dh: np.ndarray, up: np.ndarray, down: np.ndarray,
    d_hi: np.ndarray, d_lo: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The negative log-likelihood's Hessian, by central differences of the analytic score."""
    p = len(theta)
    out = np.empty((p, p))
    for j in range(p):
        step = 1e-5 * max(1.0, abs(theta[j]))
        plus, minus = theta.copy(), theta.copy()
        plus[j] += step
        minus[j] -= step
        g_plus = _loglik(plus, x, dh, up, down, d_hi, d_lo)[1].sum(axis=0)
        g_minus = _loglik(minus, x, dh, up, down, d_hi, d_lo)[1].sum(axis=0)
        out[:, j] = -(g_plus - g_minus) / (2 * step)
    return (out + out.T) / 2
