"""Cost per correct answer: a ratio of two means over the design's units, with its interval.

Dollars per correct answer is mean(dollars per unit) / mean(correct per unit): total spend over
total correct, the number a budget holder divides. Its 95% interval is Fieller's: the set of R
for which the delta method's pivot (mean(x) - R mean(y)) / se, on n - 1 degrees of freedom, is
not rejected. It is the delta method inverted rather than linearised at the estimate, so it is
asymmetric where the denominator is uncertain. Where the design nests units, it runs over the
clusters' totals (k - 1 degrees of freedom). It is shown from `MIN_UNITS` units (clusters) and
`MIN_CORRECT` correct answers, and where the set is a bounded interval; otherwise "not
estimable", never a narrower interval than the data allow.

Notes:
    Why not the linearised delta interval (`harness.stats._intervals.ratio_interval`): in
    simulation (costs lognormal with sigma 0.5, dearer when correct; answers Bernoulli; 3000
    draws with 10 or more correct), it covered 89% at n = 20, p = 0.5 and 84% at n = 30,
    p = 0.3, where Fieller's covered 95.6% and 95.5%; both cover 95% from about 60 units.
    Coverage at the printed n is tested in tests/test_cost_frontier.py. With heavier-tailed
    costs (lognormal sigma 1) and many correct answers every interval tried under-covers (about
    91% at n = 30, p = 0.8; 92.5% at n = 100), as a t interval for a skewed mean does;
    docs/cost.md says so.

References:
    Fieller, E. C. (1954). Some problems in interval estimation. JRSS B 16(2), 175-185.
    Cochran, W. G. (1977). Sampling Techniques, 3rd ed., ch. 6 (the ratio estimator). Wiley.

"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.stats._design import Design
from harness.stats._intervals import Interval

MIN_UNITS = 20  # units (or clusters) below which no interval is shown (the engine's FEW)
MIN_CORRECT = 10  # correct answers (the denominator's total) below which none is shown


def fieller(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Fieller's interval for mean(x) / mean(y); (nan, nan) where the set is unbounded.

    Solves (mx - R my)**2 <= q (sxx - 2 R sxy + R**2 syy) with q = t**2 / n for R: a bounded
    interval when my**2 > q syy (the denominator's mean is clearly away from 0).
    """
    from scipy import stats

    n = x.size
    mx, my = float(x.mean()), float(y.mean())
    cov = np.cov(np.stack([x, y]), ddof=1)  # (2, 2)
    q = float(stats.t.ppf(1 - (1 - confidence) / 2, n - 1)) ** 2 / n
    a = my * my - q * cov[1, 1]
    b = -2 * (mx * my - q * cov[0, 1])
    c = mx * mx - q * cov[0, 0]
    disc = b * b - 4 * a * c
    if a <= 0 or disc < 0:
        return math.nan, math.nan
    root = math.sqrt(disc)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def _too_few(design: Design, x: np.ndarray, den: np.ndarray) -> str:
    """Which threshold was missed, with the count: `not estimable: 3 correct answers, ...`."""
    reasons = []
    if x.size < MIN_UNITS:
        what = f"{design.cluster} clusters" if x.size < den.size else f"{design.unit}s"
        reasons.append(f"{x.size} {what}, fewer than {MIN_UNITS}")
    if den.sum() < MIN_CORRECT:
        reasons.append(f"{den.sum():g} correct answers, fewer than {MIN_CORRECT}")
    return "not estimable: " + "; ".join(reasons)


def ratio_of_means(
    design: Design,
    numerator: Sequence[float],
    denominator: Sequence[float],
    clusters: Sequence[Any] | None = None,
) -> Interval:
    """mean(numerator) / mean(denominator) over units, with Fieller's 95% interval.

    Args:
        design: The suite's design (its unit names what n counts).
        numerator: One value per unit (dollars spent on the unit), all finite and >= 0.
        denominator: One value per unit on the same units (its share of correct epochs).
        clusters: One cluster label per unit, where the design nests units.

    Returns:
        An `Interval` whose `n` counts units. nan when no unit is correct; bounds nan ("not
        estimable") below `MIN_UNITS` units (clusters) or `MIN_CORRECT` correct answers, or
        where Fieller's set is unbounded. The lower end is clipped at 0 for costs, and says so.

    """
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError(f"need one value per unit in each, got {num.shape} and {den.shape}")
    n = int(num.size)
    if n == 0 or den.sum() <= 0:
        return Interval(math.nan, math.nan, math.nan, 0.95, "not estimable (no correct answer)", n)
    estimate = float(num.sum() / den.sum())
    method = "fieller (delta-method pivot inverted), t"
    x, y = num, den
    if clusters is not None and design.cluster is not None and len(set(clusters)) < n:
        labels = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]
        x, y = np.bincount(labels, weights=num), np.bincount(labels, weights=den)  # (k,)
        method += f", over {x.size} {design.cluster} totals"
    k = int(x.size)
    if k < MIN_UNITS or den.sum() < MIN_CORRECT:
        return Interval(estimate, math.nan, math.nan, 0.95, _too_few(design, x, den), n)
    low, high = fieller(x, y)
    if math.isnan(low):
        return Interval(estimate, math.nan, math.nan, 0.95,
                        "not estimable (Fieller's set is unbounded)", n)  # fmt: skip
    if low < 0 and bool(np.all(num >= 0)):
        low, method = 0.0, f"{method}, clipped at 0"
    return Interval(estimate, low, high, 0.95, method, n)
