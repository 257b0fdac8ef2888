"""Agreement among several raters who sort the same subjects into nominal categories."""

from __future__ import annotations

import math
from collections.abc import Sequence


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa for a subjects x categories table of rating counts.

    Args:
        table: Row i counts how many raters put subject i in each category; every row must sum
            to the same number of raters, at least 2.

    Returns:
        kappa = (P - Pe) / (1 - Pe), where P is the mean share of agreeing rater pairs per
        subject and Pe the agreement expected from the category shares. nan when Pe = 1 (every
        rating falls in one category, so chance agreement is already perfect).

    Notes:
        Matches `statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")`.

    References:
        Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
        Psychological Bulletin 76(5), 378-382.

    """
    rows = [[int(c) for c in row] for row in table]
    if not rows:
        raise ValueError("fleiss_kappa needs at least one subject")
    raters = sum(rows[0])
    if raters < 2 or any(sum(row) != raters for row in rows):
        raise ValueError(f"every row must count the same number (>= 2) of raters: {rows}")
    if any(c < 0 for row in rows for c in row) or len({len(row) for row in rows}) != 1:
        raise ValueError("counts must be non-negative and every row the same length")
    n_subjects = len(rows)
    p_subject = [
        (sum(c * c for c in row) - raters) / (raters * (raters - 1)) for row in rows
    ]  # per subject
    shares = [sum(col) / (n_subjects * raters) for col in zip(*rows, strict=True)]
    p_bar = math.fsum(p_subject) / n_subjects
    p_e = math.fsum(s * s for s in shares)
    if math.isclose(p_e, 1.0):
        return math.nan
    return (p_bar - p_e) / (1 - p_e)
