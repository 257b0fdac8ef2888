"""How many items it takes to tell two accuracies apart, and what difference n items can detect.

Both functions solve the same normal-approximation power equation, one for n and one for the
difference, so each inverts the other. Two designs are covered: both models scored on the
same n items (paired, McNemar's test) and two models on separate sets of n items each
(independent, the two-proportion z-test).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Literal

from scipy import stats


@dataclass(frozen=True, slots=True)
class PowerAnalysis:
    """A sample size and the difference in accuracy it detects, for a two-sided test.

    Attributes:
        n: Items per model: the n given to `min_detectable_difference`, or `n_exact`
            rounded up to whole items by `sample_size_for_difference`.
        n_exact: The real-valued n that solves the power equation for `delta`.
        delta: The difference of accuracies detected with probability `power`; nan when no
            difference in range can be (see `min_detectable_difference`).
        p: Accuracy at which the variance is computed (independent design); nan for the
            paired design, where `paired_discordance` takes its place.
        alpha: Two-sided significance level.
        power: Probability of rejecting when the true difference is `delta`.
        paired_discordance: Share of items the two models disagree on (paired design); None
            for the independent design.
        design: "paired" or "independent".
        solved_for: "n" or "delta", whichever the function computed.

    """

    n: float
    n_exact: float
    delta: float
    p: float
    alpha: float
    power: float
    paired_discordance: float | None
    design: Literal["paired", "independent"]
    solved_for: Literal["n", "delta"]

    def _test(self) -> str:
        if self.design == "paired":
            return f"paired McNemar, discordance={self.paired_discordance:.3g}"
        return f"independent two-proportion z-test, p={self.p:.3g}"

    def summary(self, *, fmt: Literal["text", "html"] = "text") -> str:
        """Render as one line of text or as a one-row HTML table.

        For example `n=393 items per model detect a difference of 0.100 (independent
        two-proportion z-test, p=0.5, alpha=0.05, power=0.8)`.
        """
        n = str(self.n) if isinstance(self.n, int) else f"{self.n:.6g}"
        if fmt == "text":
            return (
                f"n={n} items per model detect a difference of {self.delta:.3f} "
                f"({self._test()}, alpha={self.alpha:g}, power={self.power:g})"
            )
        if fmt == "html":
            cells = (
                n,
                f"{self.delta:.3f}",
                html.escape(self._test()),
                f"{self.alpha:g}",
                f"{self.power:g}",
            )
            head = "".join(f"<th>{h}</th>" for h in ("n", "delta", "test", "alpha", "power"))
            body = "".join(f"<td>{c}</td>" for c in cells)
            return f"<table><tr>{head}</tr><tr>{body}</tr></table>"
        raise ValueError(f"fmt must be one of 'text', 'html', got {fmt!r}")


def _quantiles(p: float, alpha: float, power: float, psi: float | None) -> tuple[float, float]:
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0.5 <= power < 1:
        raise ValueError(f"power must be in [0.5, 1), got {power}")
    if psi is not None and not 0 < psi <= 1:
        raise ValueError(f"paired_discordance must be in (0, 1], got {psi}")
    return float(stats.norm.ppf(1 - alpha / 2)), float(stats.norm.ppf(power))


def _within(delta: float, limit: float) -> float:
    """Delta, or nan past the largest possible difference; rounding error is let through."""
    if delta > limit * (1 + 1e-12):
        return math.nan
    return min(delta, limit)


def min_detectable_difference(
    n: float,
    *,
    p: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    paired_discordance: float | None = None,
) -> PowerAnalysis:
    """The smallest difference of accuracies that n items per model detect with given power.

    Args:
        n: Items per model (for the paired design, the number of shared items).
        p: Accuracy of both models, at which the variance is computed; 0.5 gives the
            largest variance and so a conservative answer. Ignored for the paired design.
        alpha: Two-sided significance level.
        power: Probability of detection, in [0.5, 1).
        paired_discordance: For the paired design, psi, the expected share of items on which
            the two models disagree (one right, one wrong); None for independent samples.

    Returns:
        A `PowerAnalysis` with `solved_for="delta"`.

    Notes:
        Independent: delta = (z_{1-alpha/2} + z_power) * sqrt(2 * p * (1 - p) / n), the
        two-proportion z-test with the variance at p for both models.

        Paired: McNemar's test in Connor's normal approximation, whose statistic has
        variance psi / n under the null and (psi - delta**2) / n under the alternative, so
        sqrt(n) * delta = z_a * sqrt(psi) + z_b * sqrt(psi - delta**2). Solving this
        quadratic gives delta = sqrt(psi) * (sqrt(n) * z_a + z_b * sqrt(n - z_a**2 +
        z_b**2)) / (n + z_b**2), the root that satisfies the unsquared equation when
        n >= z_a**2. A difference cannot exceed psi (all disagreements favouring one model),
        nor 1 in the independent design; when the solution does, or n < z_a**2, no
        difference is detectable with that power and delta is nan.

    References:
        Connor, R. J. (1987). Sample size for testing differences in proportions for the
        paired-sample design. Biometrics 43(1), 207-211.
        Fleiss, J. L., Levin, B. and Paik, M. C. (2003). Statistical Methods for Rates and
        Proportions, 3rd ed., ch. 4. Wiley.

    """
    z_a, z_b = _quantiles(p, alpha, power, paired_discordance)
    if not n > 0:
        raise ValueError(f"n must be positive, got {n}")
    psi = paired_discordance
    if psi is None:
        delta = _within((z_a + z_b) * math.sqrt(2 * p * (1 - p) / n), 1.0)
        return PowerAnalysis(n, n, delta, p, alpha, power, None, "independent", "delta")
    if n < z_a * z_a:
        delta = math.nan
    else:
        delta = math.sqrt(psi) * (math.sqrt(n) * z_a + z_b * math.sqrt(n - z_a**2 + z_b**2))
        delta = _within(delta / (n + z_b**2), psi)
    return PowerAnalysis(n, n, delta, math.nan, alpha, power, psi, "paired", "delta")


def sample_size_for_difference(
    delta: float,
    *,
    p: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    paired_discordance: float | None = None,
) -> PowerAnalysis:
    """Items per model needed to detect a difference of accuracies delta with given power.

    Args:
        delta: Difference of accuracies to detect, in (0, 1]; at most `paired_discordance`
            for the paired design.
        p: Accuracy of both models, at which the variance is computed; 0.5 gives the
            largest variance and so a conservative answer. Ignored for the paired design.
        alpha: Two-sided significance level.
        power: Probability of detection, in [0.5, 1).
        paired_discordance: For the paired design, psi, the expected share of items on which
            the two models disagree; None for independent samples.

    Returns:
        A `PowerAnalysis` with `solved_for="n"`; `n` is `n_exact` rounded up.

    Notes:
        Independent: n = (z_{1-alpha/2} + z_power)**2 * 2 * p * (1 - p) / delta**2 per model,
        which is `statsmodels.stats.power.NormalIndPower` with effect size
        delta / sqrt(p * (1 - p)), apart from the far rejection tail that statsmodels also
        counts (under 1e-5 of power at the defaults).

        Paired (Connor 1987): n = (z_a * sqrt(psi) + z_b * sqrt(psi - delta**2))**2 /
        delta**2. The same delta needs far fewer items paired than independent when the
        models agree on most items: psi is then well below 2 * p * (1 - p).

        `min_detectable_difference(n_exact)` returns `delta` (to rounding) and
        `min_detectable_difference(n)` a difference no larger than `delta`.

    References:
        Connor, R. J. (1987). Sample size for testing differences in proportions for the
        paired-sample design. Biometrics 43(1), 207-211.
        Fleiss, J. L., Levin, B. and Paik, M. C. (2003). Statistical Methods for Rates and
        Proportions, 3rd ed., ch. 4. Wiley.

    """
    z_a, z_b = _quantiles(p, alpha, power, paired_discordance)
    psi = paired_discordance
    limit = 1.0 if psi is None else psi
    if not 0 < delta <= limit:
        what = "1" if psi is None else f"paired_discordance={psi}"
        raise ValueError(f"delta must be in (0, {what}], got {delta}")
    if psi is None:
        n_exact = (z_a + z_b) ** 2 * 2 * p * (1 - p) / delta**2
        design, p_out = "independent", p
    else:
        n_exact = (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - delta**2)) ** 2 / delta**2
        design, p_out = "paired", math.nan
    # Round up, but not past a whole number that rounding error put a hair above it.
    n = math.ceil(n_exact * (1 - 1e-12))
    return PowerAnalysis(n, n_exact, delta, p_out, alpha, power, psi, design, "n")
