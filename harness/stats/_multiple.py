"""Adjusting p-values when many comparisons are made at once (Holm, Benjamini-Hochberg).

Comparing a model against several others, or on several suites, gives several p-values; at
least one of twenty true nulls falls below 0.05 more often than not. `holm` controls the
chance of any false rejection, `benjamini_hochberg` the expected share of false rejections.

A nan p-value means "not tested" (no data, or a test that could not be run): it is left out of
the family, so it neither counts towards m nor gets an adjusted value, and its adjusted
p-value is nan and its hypothesis is not rejected. Reading nan as 0 would make an untested
hypothesis the most significant one.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

_METHODS = ("holm", "bh")


@dataclass(frozen=True, slots=True)
class Adjusted:
    """P-values adjusted for multiple comparisons, in the order they were given.

    Attributes:
        pvalues: The p-values as given; nan marks a hypothesis that was not tested.
        adjusted: Adjusted p-values, one per input, in the input order; reject a hypothesis
            at level alpha when its adjusted p-value is at most alpha. nan where the input
            was nan ("not tested"): those are left out of the correction.
        reject: Whether each hypothesis is rejected at `alpha`, in the input order; False
            where it was not tested.
        method: "holm" or "bh".
        alpha: The family-wise error rate (holm) or false discovery rate (bh) controlled.

    """

    pvalues: tuple[float, ...]
    adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    method: str
    alpha: float

    def summary(self, *, fmt: Literal["text", "html"] = "text") -> str:
        """Render as text, a header line and one line per p-value, or as an HTML table.

        A p-value that was not tested (nan) reads "not tested", never a number.
        """
        rows = [
            ("not tested", "not tested", "not tested")
            if np.isnan(p)
            else (f"{p:.4g}", f"{q:.4g}", "reject" if r else "keep")
            for p, q, r in zip(self.pvalues, self.adjusted, self.reject, strict=True)
        ]
        tested = int(np.count_nonzero(~np.isnan(np.asarray(self.pvalues, dtype=float))))
        head = f"{self.method}, alpha={self.alpha:g}: {sum(self.reject)} of {tested} rejected"
        if tested < len(self.pvalues):
            head += f" ({len(self.pvalues) - tested} not tested)"
        if fmt == "text":
            lines = [f"p={p} adjusted={q} {r}" for p, q, r in rows]
            return "\n".join([head, *lines])
        if fmt == "html":
            body = "".join(f"<tr><td>{p}</td><td>{q}</td><td>{r}</td></tr>" for p, q, r in rows)
            return (
                f"<table><caption>{html.escape(head)}</caption>"
                f"<tr><th>p</th><th>adjusted</th><th>decision</th></tr>{body}</table>"
            )
        raise ValueError(f"fmt must be one of 'text', 'html', got {fmt!r}")


def _validate(pvalues: ArrayLike, alpha: float) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be one-dimensional, got shape {p.shape}")
    tested = p[~np.isnan(p)]
    if not np.all((tested >= 0) & (tested <= 1)):
        raise ValueError("pvalues must lie in [0, 1] (nan marks a hypothesis not tested)")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return p


def _result(p: np.ndarray, method: Literal["holm", "bh"], alpha: float) -> Adjusted:
    """Adjust the tested (non-nan) p-values among themselves; nan stays nan and is kept."""
    tested = np.flatnonzero(~np.isnan(p))
    q = p[tested]
    m = q.size
    order = np.argsort(q, kind="stable")
    if method == "holm":
        scaled = (m - np.arange(m)) * q[order]
        adjusted_sorted = np.maximum.accumulate(scaled)
    else:
        scaled = m / np.arange(1, m + 1) * q[order]
        adjusted_sorted = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.full(p.size, np.nan)
    among = np.empty(m)
    among[order] = np.minimum(adjusted_sorted, 1.0)
    adjusted[tested] = among
    return Adjusted(
        pvalues=tuple(float(v) for v in p),
        adjusted=tuple(float(v) for v in adjusted),
        reject=tuple(bool(v <= alpha) for v in adjusted),  # nan <= alpha is False
        method=method,
        alpha=alpha,
    )


def holm(pvalues: ArrayLike, *, alpha: float = 0.05) -> Adjusted:
    """Holm's step-down adjustment, controlling the family-wise error rate.

    With the m p-values sorted, p_(1) <= ... <= p_(m), the adjusted p-value of p_(i) is
    max over j <= i of min(1, (m - j + 1) * p_(j)).

    Notes:
        Valid under any dependence between the tests, and uniformly more powerful than
        Bonferroni. Matches `statsmodels.stats.multitest.multipletests(method="holm")`.
        Tied p-values get the same adjusted value. An empty input gives empty tuples. nan
        p-values are not tested: m counts only the others, and their adjusted value is nan.

    References:
        Holm, S. (1979). A simple sequentially rejective multiple test procedure.
        Scandinavian Journal of Statistics 6(2), 65-70.

    """
    return _result(_validate(pvalues, alpha), "holm", alpha)


def benjamini_hochberg(pvalues: ArrayLike, *, alpha: float = 0.05) -> Adjusted:
    """Benjamini-Hochberg step-up adjustment, controlling the false discovery rate.

    With the m p-values sorted, p_(1) <= ... <= p_(m), the adjusted p-value of p_(i) is
    min over j >= i of min(1, m / j * p_(j)).

    Notes:
        Controls the false discovery rate at alpha for independent tests and for tests with
        positive regression dependence (PRDS; Benjamini and Yekutieli 2001); under arbitrary
        dependence it is not guaranteed (their variant divides alpha by sum(1/j)). Matches
        `statsmodels.stats.multitest.multipletests(method="fdr_bh")`. Tied p-values get the
        same adjusted value. An empty input gives empty tuples. nan p-values are not tested:
        m counts only the others, and their adjusted value is nan.

    References:
        Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery rate: a
        practical and powerful approach to multiple testing. JRSS B 57(1), 289-300.
        Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in
        multiple testing under dependency. Annals of Statistics 29(4), 1165-1188.

    """
    return _result(_validate(pvalues, alpha), "bh", alpha)


def adjust(pvalues: ArrayLike, *, method: Literal["holm", "bh"], alpha: float = 0.05) -> Adjusted:
    """Adjust p-values by `holm` or `benjamini_hochberg` ("bh"), chosen by name.

    Raises:
        ValueError: For a method other than "holm" or "bh".

    """
    if method == "holm":
        return holm(pvalues, alpha=alpha)
    if method == "bh":
        return benjamini_hochberg(pvalues, alpha=alpha)
    raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
