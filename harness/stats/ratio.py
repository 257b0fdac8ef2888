"""Cost per correct answer: a ratio of two means over the design's units, with its interval.

Dollars per correct answer is mean(dollars per unit) / mean(correct per unit): total spend over
total correct, the number a budget holder divides. Its interval is the delta method's
(`harness.stats.intervals.ratio_interval`: linearised t, over clusters where the design nests
units), shown only where it covers: from `MIN_UNITS` units (clusters) and `MIN_CORRECT` correct
answers. Below that it is "not estimable", never a narrower interval than the data allow.

Notes:
    Coverage of the delta-method interval in simulation (tests/test_cost_ratio.py; 4000
    draws each, costs lognormal with sigma 0.5, correct answers Bernoulli): at the thresholds,
    n = 30 with p = 0.5 covers about 94-95%; at n = 20 and p = 0.3 (6 correct) it covered only
    90% and at n = 20 and p = 0.8 93%, which is why fewer units or correct answers read "not
    estimable". With heavier-tailed costs (lognormal sigma 1) the interval under-covers at these
    n (about 90% at n = 30, p = 0.8), as a t interval for a skewed mean does; docs/cost.md says so.

References:
    Cochran, W. G. (1977). Sampling Techniques, 3rd ed., ch. 6 (the ratio estimator). Wiley.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.stats.design import Design
from harness.stats.intervals import Interval, ratio_interval

MIN_UNITS = 30  # units (or clusters) below which the interval under-covers (see Notes)
MIN_CORRECT = 15  # correct answers (the denominator's total) below which it under-covers


def ratio_of_means(
    design: Design,
    numerator: Sequence[float],
    denominator: Sequence[float],
    clusters: Sequence[Any] | None = None,
) -> Interval:
    """mean(numerator) / mean(denominator) over units, with the delta method's 95% interval.

    Args:
        design: The suite's design (its unit names what n counts).
        numerator: One value per unit (dollars spent on the unit), all finite and >= 0.
        denominator: One value per unit on the same units (its share of correct epochs).
        clusters: One cluster label per unit, where the design nests units.

    Returns:
        An `Interval`; its lower end is clipped at 0 (a cost is not negative), which the method
        says. nan when no unit is correct; bounds nan ("not estimable") below `MIN_UNITS` units
        (clusters) or `MIN_CORRECT` correct answers.

    """
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    nested = clusters is not None and design.cluster is not None
    ci = ratio_interval(num, den, clusters=list(clusters) if nested and clusters else None)
    n = int(num.size)
    if den.sum() <= 0:
        return Interval(math.nan, math.nan, math.nan, 0.95, "not estimable (no correct answer)", n)
    k = len(set(clusters)) if nested and clusters is not None else n
    if k < MIN_UNITS or den.sum() < MIN_CORRECT:
        why = (f"not estimable below {MIN_UNITS} {design.unit}s or {MIN_CORRECT} correct "
               f"answers; {k} and {den.sum():g} here")  # fmt: skip
        return Interval(ci.estimate, math.nan, math.nan, 0.95, why, n)
    if ci.low < 0 and bool(np.all(num >= 0)):
        return dataclasses.replace(ci, low=0.0, method=f"{ci.method}, clipped at 0")
    return ci
