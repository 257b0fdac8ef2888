"""Which parameters of the placeholder dynamics fit the data identify, and where H_min may lie.

A least-squares coefficient is identified when its unit vector lies in the row space of the
design matrix (1, H_t, c_t); with collinear columns (a context load that equals the entropy, a
constant load) the minimum-norm solution splits the effect between them arbitrarily, and a
ratio such as H_min = intercept / a can come out at 1e15 with a bootstrap interval that
excludes it (issue 40). Such a parameter is "not identifiable" and is printed as one line,
never as numbers. So is one whose interval excludes its own estimate or is not finite: the fit
is then unstable, whatever the rank says.

H_min is an entropy floor: it lies in [0, ln K]. Its interval is intersected with that range
(the true value lies in it, so the intersection covers exactly as often as the interval), and
an estimate outside the range is moved to the nearest end of the intersection, which the
method names. An interval that misses the range altogether says that no floor in the range
fits: not identifiable.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from harness.suites.iwg.dynamics import ParamEstimate

NOT_IDENTIFIABLE = "not identifiable"


def estimable(x: np.ndarray) -> np.ndarray:
    """Per column of the design matrix x (n, p), whether its coefficient is identified.

    The columns are scaled to unit norm first, so that the rank does not depend on units; the
    rank tolerance is numpy's (largest singular value x max(n, p) x machine epsilon).
    """
    norms = np.linalg.norm(x, axis=0)
    scaled = x / np.where(norms > 0, norms, 1.0)
    _, s, vt = np.linalg.svd(scaled, full_matrices=False)
    tol = (s.max() if s.size else 0.0) * max(x.shape) * np.finfo(float).eps
    basis = vt[s > tol]  # (r, p): the row space
    # e_j lies in the row space exactly when its projection keeps unit length: P_jj = 1
    return np.abs((basis**2).sum(axis=0) - 1.0) <= 1e-8


def collinear_text(x: np.ndarray, names: Sequence[str]) -> str:
    """Which columns of x are collinear and the rank, e.g. "H(t) and c(t) are collinear ...".

    names: one per column, "1" for the intercept (a column collinear with it is "constant").
    """
    norms = np.linalg.norm(x, axis=0)
    scaled = x / np.where(norms > 0, norms, 1.0)
    _, s, vt = np.linalg.svd(scaled, full_matrices=False)
    tol = (s.max() if s.size else 0.0) * max(x.shape) * np.finfo(float).eps
    rank = int((s > tol).sum())
    null = vt[rank:]  # (p - r, p): the combinations the data cannot see
    involved = [n for j, n in enumerate(names) if np.abs(null[:, j]).max(initial=0.0) > 1e-8]
    rest = [n for n in involved if n != "1"]
    what = f"{rest[0]} is constant" if involved == ["1", *rest] and len(rest) == 1 else (
        f"{' and '.join(rest)} are collinear")  # fmt: skip
    return f"{what} (the design matrix ({', '.join(names)}) has rank {rank} of {x.shape[1]})"


def unidentified(p: ParamEstimate, why: str) -> ParamEstimate:
    """The parameter as one line: no estimate, no interval, the reason."""
    return dataclasses.replace(
        p, estimate=math.nan, low=math.nan, high=math.nan, method=f"{NOT_IDENTIFIABLE}: {why}"
    )


def stable(p: ParamEstimate) -> ParamEstimate:
    """The parameter, or "not identifiable" when its interval is infinite or excludes it."""
    if math.isnan(p.estimate) or (math.isnan(p.low) and math.isnan(p.high)):
        return p
    if not (math.isfinite(p.estimate) and math.isfinite(p.low) and math.isfinite(p.high)):
        return unidentified(p, f"{p.name}'s estimate or interval is not finite")
    if not p.low <= p.estimate <= p.high:
        return unidentified(
            p,
            f"{p.name}'s interval [{p.low:.4g}, {p.high:.4g}] excludes its estimate "
            f"{p.estimate:.4g}: the fit is unstable",
        )
    return p


def in_range(p: ParamEstimate, low: float, high: float) -> ParamEstimate:
    """An entropy parameter kept in [low, high]: its interval intersected, its estimate moved.

    Without an interval an estimate outside the range is not identifiable (nothing says how
    far off it may be); with one that misses the range, neither.
    """
    if math.isnan(p.estimate):
        return p
    where = f"the entropy's range [{low:g}, {high:.3f}]"
    if math.isnan(p.low):
        if low <= p.estimate <= high:
            return p
        return unidentified(p, f"the fitted {p.name} {p.estimate:.4g} lies outside {where}")
    lo, hi = max(low, p.low), min(high, p.high)
    if lo > hi:
        return unidentified(
            p, f"{p.name}'s interval [{p.low:.4g}, {p.high:.4g}] lies outside {where}"
        )
    if (lo, hi) == (p.low, p.high):
        return p
    estimate = min(max(p.estimate, lo), hi)
    moved = f"; the fit gave {p.estimate:.4g}" if estimate != p.estimate else ""
    method = f"{p.method}, intersected with {where}{moved}"
    return dataclasses.replace(p, estimate=estimate, low=lo, high=hi, method=method)
