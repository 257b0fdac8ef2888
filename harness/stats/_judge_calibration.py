"""Bias-corrected accuracy from an LLM judge: Rogan-Gladen estimate, CI and labelling plan.

A judge's raw "fraction correct" p_hat is biased by its specificity q0 = P(verdict 0 | truly 0)
and sensitivity q1 = P(verdict 1 | truly 1): E[p_hat] = J * theta + (1 - q0), with Youden's
J = q0 + q1 - 1. `rogan_gladen` measures q0 and q1 on a human-labelled calibration set that is
stratified by the true label, inverts the misclassification and reports an adjusted-Wald interval
that covers both the test-set and the calibration noise. `allocate_authors` and
`allocate_optimal` split a labelling budget between the two true classes, and `regime_ratio` says
whether the judge route beats labelling the same items by hand at all.

Provenance (spec `calibrated-judge.md`, section 4):
    From the authors' code (Lee et al.; their repository has no licence, so this is a
    reimplementation from the spec, not a copy): the point estimate, the adjusted-Wald CI
    (`_adjusted_wald`), the allocation rule `allocate_authors` and its pilot protocol.
    Ours, derived here and checked numerically, not the paper's: the refusal guards
    (`CalibrationError`), the delta-method variance behind `Allocation.calibration_variance`,
    the exact split `allocate_optimal` and the regime ratio `regime_ratio`.

References:
    Lee, Zeng, Jeong, Sohn, Lee (2025). How to Correctly Report LLM-as-a-Judge Evaluations.
    arXiv:2511.21140.
    Rogan, W. J., Gladen, B. (1978). Estimating prevalence from the results of a screening
    test. American Journal of Epidemiology 107(1), 71-76.
    Lang, Z., Reiczigel, J. (2014). Confidence limits for prevalence of disease adjusted for
    estimated sensitivity and specificity. Preventive Veterinary Medicine 113(1), 13-22.

"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

_EPS = 1e-6  # the authors' eps: p_hat below it counts as 0, and q1 is capped at 1 - eps
METHOD = "rogan-gladen adjusted-wald"


class CalibrationError(ValueError):
    """The calibration set cannot support a corrected score; the message says what to label."""


@dataclass(frozen=True, slots=True)
class JudgeEstimate:
    """A bias-corrected accuracy with its confidence interval.

    Attributes:
        estimate: Rogan-Gladen estimate of theta = P(truly correct), clipped to [0, 1].
        low: Lower bound of the adjusted-Wald interval, clipped to [0, 1].
        high: Upper bound of the adjusted-Wald interval, clipped to [0, 1].
        confidence: Nominal coverage, 1 - alpha.
        method: Always "rogan-gladen adjusted-wald".
        naive: The uncorrected score p_hat, the share of test items the judge calls correct.
        n: Number of test items (judge verdicts only).
        m0: Calibration items whose human label is 0 (truly incorrect).
        m1: Calibration items whose human label is 1 (truly correct).
        q0: Estimated specificity, the share of the m0 items the judge calls incorrect.
        q1: Estimated sensitivity, the share of the m1 items the judge calls correct.
        youden_j: q0 + q1 - 1; the correction divides by it, so small values mean wide CIs.

    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    naive: float
    n: int
    m0: int
    m1: int
    q0: float
    q1: float
    youden_j: float

    def summary(self) -> str:
        """One line, e.g. `0.167 [0.056, 0.263] (rogan-gladen adjusted-wald, naive 0.400, ...)`."""
        return (
            f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.method}, "
            f"naive {self.naive:.3f}, n={self.n}, m0={self.m0}, m1={self.m1}, "
            f"q0={self.q0:.3f}, q1={self.q1:.3f}, J={self.youden_j:.3f})"
        )


@dataclass(frozen=True, slots=True)
class Allocation:
    """A split of a calibration budget m = m0 + m1 between the two true classes.

    Attributes:
        m0: Items to label among the truly incorrect (they estimate q0).
        m1: Items to label among the truly correct (they estimate q1).
        rule: "authors" (the paper's kappa rule) or "optimal" (exact delta-method optimum).
        theta: Prevalence the variance is evaluated at; for "authors", the Rogan-Gladen
            estimate from p_hat and the q's the rule used (nan if those have J <= 0).
        calibration_variance: Predicted calibration part of Var(theta_hat),
            (a / m0 + b / m1) / J**2 with a = (1-theta)**2 q0(1-q0), b = theta**2 q1(1-q1);
            inf when a class with a positive term gets no items, nan when J <= 0.

    """

    m0: int
    m1: int
    rule: Literal["authors", "optimal"]
    theta: float
    calibration_variance: float

    def summary(self) -> str:
        """One line, e.g. `m0=144, m1=56 (authors rule; calibration variance 0.00123 ...)`."""
        return (
            f"m0={self.m0}, m1={self.m1} ({self.rule} rule; calibration variance "
            f"{self.calibration_variance:.3g} at theta={self.theta:.3f})"
        )


@dataclass(frozen=True, slots=True)
class RegimeVerdict:
    """Whether labelling m items and using the judge beats labelling m items by hand.

    Attributes:
        ratio: R, the judge route's variance over the human-only variance theta(1-theta)/m,
            with the optimal calibration split; inf when the judge is no better than chance.
        recommendation: "use the judge" when ratio < 1, else "label by hand".
        theta: The prevalence R is evaluated at.
        q0: Judge specificity.
        q1: Judge sensitivity.
        n: Test-set size, or None for the n -> infinity limit.
        m: Labelling budget, or None for the n -> infinity limit (R does not depend on it there).

    """

    ratio: float
    recommendation: Literal["use the judge", "label by hand"]
    theta: float
    q0: float
    q1: float
    n: int | None
    m: int | None

    def summary(self) -> str:
        """One line, e.g. `R = 0.67: use the judge (theta=0.300, q0=0.900, q1=0.900, n=inf)`."""
        size = "n=inf" if self.n is None else f"n={self.n}, m={self.m}"
        return (
            f"R = {self.ratio:.2f}: {self.recommendation} "
            f"(theta={self.theta:.3f}, q0={self.q0:.3f}, q1={self.q1:.3f}, {size})"
        )


def _adjusted_wald(
    p_hat: ArrayLike,
    n: ArrayLike,
    q0_hat: ArrayLike,
    q1_hat: ArrayLike,
    m0: ArrayLike,
    m1: ArrayLike,
    z: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Adjusted-Wald bounds, elementwise over broadcast arrays: (low, high, smoothed J).

    No validation and no guards: where the smoothed J is <= 0 the bounds are nan, and the public
    functions raise before that can happen. Vectorised so a Monte-Carlo study needs no loop.
    """
    p_hat, n, q0_hat, q1_hat, m0, m1 = (
        np.asarray(x, dtype=np.float64) for x in (p_hat, n, q0_hat, q1_hat, m0, m1)
    )
    z2 = z * z
    n_t = n + z2
    p_t = (n * p_hat + z2 / 2) / n_t
    m0_t, m1_t = m0 + 2, m1 + 2
    q0_t = (m0 * q0_hat + 1) / m0_t
    q1_t = (m1 * q1_hat + 1) / m1_t
    j_t = q0_t + q1_t - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        theta_t = (p_t + q0_t - 1) / j_t  # plug-in, not clipped
        v0 = q0_t * (1 - q0_t) / m0_t
        v1 = q1_t * (1 - q1_t) / m1_t
        shift = 2 * z2 * (theta_t * v1 - (1 - theta_t) * v0)  # not divided by J (authors' code)
        se = np.sqrt(p_t * (1 - p_t) / n_t + (1 - theta_t) ** 2 * v0 + theta_t**2 * v1) / j_t
        centre = theta_t + shift
        ok = j_t > 0
        low = np.where(ok, np.clip(centre - z * se, 0.0, 1.0), np.nan)
        high = np.where(ok, np.clip(centre + z * se, 0.0, 1.0), np.nan)
    return low, high, j_t


def rogan_gladen(
    p_hat: float,
    n: int,
    q0_hat: float,
    q1_hat: float,
    m0: int,
    m1: int,
    *,
    alpha: float = 0.05,
) -> JudgeEstimate:
    """Rogan-Gladen corrected accuracy with the adjusted-Wald interval of Lee et al.

    The estimate is clip((p_hat + q0_hat - 1) / (q0_hat + q1_hat - 1), 0, 1). The interval
    smooths p_hat with z**2/2 pseudo-successes out of z**2 and each q_hat with 1 out of 2, plugs
    the smoothed rates in without clipping, shifts the centre by
    2 z**2 [theta q1(1-q1)/m1 - (1-theta) q0(1-q0)/m0] (smoothed quantities), and adds
    z * SE from the delta method, then clips to [0, 1].

    Args:
        p_hat: Share of the n test items the judge calls correct.
        n: Number of test items.
        q0_hat: Share of the m0 truly-incorrect calibration items the judge calls incorrect.
        q1_hat: Share of the m1 truly-correct calibration items the judge calls correct.
        m0: Calibration items with human label 0.
        m1: Calibration items with human label 1.
        alpha: One minus the nominal coverage.

    Returns:
        A `JudgeEstimate`.

    Raises:
        CalibrationError: m0 = 0 or m1 = 0, or the judge is no better than chance
            (q0_hat + q1_hat - 1 <= 0, raw or smoothed): no corrected score exists.
        ValueError: A proportion outside [0, 1], a negative count, n < 1, or alpha outside (0, 1).

    Notes:
        Coverage is close to nominal in simulation (0.950-0.954 at n=1000, m0=m1=250, q0=0.7,
        q1=0.9, theta in [0.05, 0.95]); at theta = 0 or 1 the clipping makes it conservative
        (about 0.97). The estimate need not lie inside the interval's centre: the interval is
        built from the smoothed rates. The interval is only as good as the assumption that
        q0 and q1 are the same on the test set as on the calibration set; under a shift in the
        judge's behaviour it can miss badly, while a shift in prevalence alone is harmless.

    References:
        Lee et al. (2025), arXiv:2511.21140, and its code `UW-Madison-Lee-Lab/LLM-judge-reporting`.
        Rogan & Gladen (1978); Lang & Reiczigel (2014).

    """
    for name, value in (("p_hat", p_hat), ("q0_hat", q0_hat), ("q1_hat", q1_hat)):
        _check_proportion(name, value)
    n = _check_count("n", n, minimum=1)
    m0 = _check_count("m0", m0, minimum=0)
    m1 = _check_count("m1", m1, minimum=0)
    z = _z(alpha)
    _guard_counts(m0, m1)
    low, high, j_t = _adjusted_wald(p_hat, n, q0_hat, q1_hat, m0, m1, z)
    j = q0_hat + q1_hat - 1
    if j <= 0 or j_t <= 0:
        raise CalibrationError(
            f"judge is no better than chance on the calibration set (q0+q1-1 = {j:.4g}, "
            f"smoothed {float(j_t):.4g}; need > 0); the corrected score is undefined: "
            "label by hand"
        )
    estimate = min(1.0, max(0.0, (p_hat + q0_hat - 1) / j))
    return JudgeEstimate(
        estimate=float(estimate),
        low=float(low),
        high=float(high),
        confidence=1 - alpha,
        method=METHOD,
        naive=float(p_hat),
        n=n,
        m0=m0,
        m1=m1,
        q0=float(q0_hat),
        q1=float(q1_hat),
        youden_j=float(j),
    )


def rogan_gladen_from_labels(
    test_judge: ArrayLike,
    calib_human: ArrayLike,
    calib_judge: ArrayLike,
    *,
    alpha: float = 0.05,
) -> JudgeEstimate:
    """`rogan_gladen` from raw 0/1 verdicts: test-set judge verdicts and a labelled calibration set.

    Args:
        test_judge: The judge's verdicts (1 = correct) on the test items.
        calib_human: Human labels of the calibration items (1 = truly correct).
        calib_judge: The judge's verdicts on the same calibration items, in the same order.
        alpha: One minus the nominal coverage.

    Returns:
        A `JudgeEstimate` with p_hat = mean(test_judge), q0_hat, q1_hat, m0 and m1 counted from
        the calibration arrays.

    Raises:
        CalibrationError: See `rogan_gladen`.
        ValueError: Empty test set, values other than 0/1, or calibration arrays of different
            lengths.

    Notes:
        If the calibration items are the test items themselves, the estimate equals the
        calibration set's empirical accuracy exactly (unless clipped); this is an identity of
        the estimator, not a check that the judge generalises.

    """
    test = _binary("test_judge", test_judge)
    human = _binary("calib_human", calib_human)
    judge = _binary("calib_judge", calib_judge)
    if test.size == 0:
        raise ValueError("test_judge is empty; need at least one test verdict")
    if human.shape != judge.shape:
        raise ValueError(
            f"calib_human and calib_judge must have the same length, got {human.size} "
            f"and {judge.size}"
        )
    m1 = int(human.sum())
    m0 = human.size - m1
    agree_pos = int(np.dot(human, judge))  # judge 1 where human 1
    agree_neg = m0 - (int(judge.sum()) - agree_pos)  # judge 0 where human 0
    q0_hat = agree_neg / m0 if m0 else 0.0  # m0 = 0 raises in rogan_gladen
    q1_hat = agree_pos / m1 if m1 else 0.0
    return rogan_gladen(float(test.mean()), test.size, q0_hat, q1_hat, m0, m1, alpha=alpha)


def ci_length(
    p_hat: float, n: int, q0: float, q1: float, m0: int, m1: int, *, alpha: float = 0.05
) -> float:
    """Length of the `rogan_gladen` interval (after clipping) for these inputs."""
    est = rogan_gladen(p_hat, n, q0, q1, m0, m1, alpha=alpha)
    return est.high - est.low


def allocate_authors(
    m: int,
    p_hat: float,
    q0: float,
    q1: float,
    *,
    m_pilot: int = 0,
    q0_pilot: float | None = None,
    q1_pilot: float | None = None,
) -> Allocation:
    """The authors' split of a calibration budget m between the two true classes.

    m1 = round(m / (1 + (1/p_hat - 1) sqrt(kappa))), clamped to [m_pilot, m - m_pilot], and
    m0 = m - m1. Without a pilot kappa = (1 - q0) / (1 - min(q1, 1 - 1e-6)); with one,
    kappa = (m_pilot (1 - q0_pilot) + 1) / (m_pilot (1 - q1_pilot) + 1), i.e. add-one smoothed
    error counts. If p_hat < 1e-6 the whole non-pilot budget goes to m1, as in the authors' code.

    Args:
        m: Total budget, pilot included.
        p_hat: Share of test items the judge calls correct (stands in for theta).
        q0: Specificity guess; also the pilot estimate when q0_pilot is None.
        q1: Sensitivity guess; also the pilot estimate when q1_pilot is None.
        m_pilot: Items per class already labelled in a pilot (0: no pilot).
        q0_pilot: Specificity measured on the pilot's m_pilot truly-incorrect items.
        q1_pilot: Sensitivity measured on the pilot's m_pilot truly-correct items.

    Returns:
        An `Allocation` with rule "authors".

    Raises:
        ValueError: Bad proportions or counts, m < 2 m_pilot, or pilot rates without a pilot.

    Notes:
        Pilot protocol: label m_pilot items per class, estimate q0 and q1 on them, allocate,
        label the rest, and pool the pilot items into the final q_hat's. The rule is the
        q0, q1 -> 1 limit of `allocate_optimal` with p_hat in place of theta. Rounding is half
        to even (Python's `round`), which the authors' code also does. The p_hat < 1e-6 branch
        is kept for fidelity although the variance argument would favour m0 there.

    """
    m = _check_count("m", m, minimum=1)
    m_pilot = _check_count("m_pilot", m_pilot, minimum=0)
    if 2 * m_pilot > m:
        raise ValueError(f"budget m={m} is smaller than the pilot's 2 * m_pilot={2 * m_pilot}")
    if m_pilot == 0 and (q0_pilot is not None or q1_pilot is not None):
        raise ValueError("q0_pilot/q1_pilot given but m_pilot=0; pass m_pilot > 0 or drop them")
    q0_rule = q0 if q0_pilot is None else q0_pilot
    q1_rule = q1 if q1_pilot is None else q1_pilot
    names = ("p_hat", "q0", "q1", "q0_pilot", "q1_pilot")
    for name, value in zip(names, (p_hat, q0, q1, q0_rule, q1_rule), strict=True):
        _check_proportion(name, value)
    if p_hat < _EPS:
        m1 = m - m_pilot
    else:
        if m_pilot > 0:
            kappa = (m_pilot * (1 - q0_rule) + 1) / (m_pilot * (1 - q1_rule) + 1)
        else:
            kappa = (1 - q0_rule) / (1 - min(q1_rule, 1 - _EPS))
        share = m / (1 + (1 / p_hat - 1) * math.sqrt(kappa))
        m1 = max(m_pilot, round(min(m - m_pilot, share)))
    j = q0_rule + q1_rule - 1
    theta = min(1.0, max(0.0, (p_hat + q0_rule - 1) / j)) if j > 0 else math.nan
    variance = _calibration_variance(theta, q0_rule, q1_rule, m - m1, m1)
    return Allocation(m - m1, m1, "authors", theta, variance)


def allocate_optimal(m: int, theta: float, q0: float, q1: float) -> Allocation:
    """The split of m that minimises the delta-method calibration variance (ours).

    Minimises a/m0 + b/m1 with a = (1-theta)**2 q0(1-q0) and b = theta**2 q1(1-q1); the
    continuous optimum is m0/m1 = sqrt(a/b), with variance (sqrt(a) + sqrt(b))**2 / (m J**2).
    Of the two integers next to it, the one with the smaller variance is returned, and each
    class keeps at least one item so that `rogan_gladen` can run.

    Args:
        m: Total budget, at least 2.
        theta: Prevalence of truly-correct items (a guess or an estimate).
        q0: Judge specificity.
        q1: Judge sensitivity.

    Returns:
        An `Allocation` with rule "optimal".

    Raises:
        CalibrationError: q0 + q1 - 1 <= 0; no split helps a judge that is no better than chance.
        ValueError: Bad proportions, or m < 2.

    Notes:
        Derived here, not in the paper. For theta = 1/6, q0 = 0.7, q1 = 0.9 the ratio is 7.64,
        (177, 23) of m = 200, against the authors' (144, 56).

    """
    m = _check_count("m", m, minimum=2)
    for name, value in (("theta", theta), ("q0", q0), ("q1", q1)):
        _check_proportion(name, value)
    if q0 + q1 - 1 <= 0:
        raise CalibrationError(
            f"judge is no better than chance (q0+q1-1 = {q0 + q1 - 1:.4g} <= 0); no "
            "calibration split can fix that: label by hand"
        )
    ra = (1 - theta) * math.sqrt(q0 * (1 - q0))
    rb = theta * math.sqrt(q1 * (1 - q1))
    best = m / 2 if ra + rb == 0 else m * ra / (ra + rb)
    candidates = sorted({min(m - 1, max(1, c)) for c in (math.floor(best), math.ceil(best))})
    m0 = min(candidates, key=lambda k: _calibration_variance(theta, q0, q1, k, m - k))
    return Allocation(
        m0, m - m0, "optimal", theta, _calibration_variance(theta, q0, q1, m0, m - m0)
    )


def regime_ratio(
    theta: float, q0: float, q1: float, *, n: int | None = None, m: int | None = None
) -> RegimeVerdict:
    """Ratio R of the judge route's variance to human-only labelling's, and a recommendation.

    With n -> infinity and the optimal split of m labels,
    R = [(1-theta) sqrt(q0(1-q0)) + theta sqrt(q1(1-q1))]**2 / (J**2 theta(1-theta)),
    which does not depend on m. With a finite test set, m p(1-p) / (n J**2 theta(1-theta)) is
    added, p = J theta + 1 - q0 being the judge's expected positive rate.

    Args:
        theta: Prevalence of truly-correct items, strictly between 0 and 1.
        q0: Judge specificity.
        q1: Judge sensitivity.
        n: Test-set size; give it together with m, or neither.
        m: Labelling budget, used only with n.

    Returns:
        A `RegimeVerdict`: "use the judge" when R < 1, else "label by hand".

    Raises:
        ValueError: theta not in (0, 1), bad q's, or only one of n and m.

    Notes:
        Derived here; the paper's own regime theorem was not read. A judge no better than
        chance (J <= 0) gets R = inf. R compares asymptotic variances and ignores the judge's
        bias under a shift in q0 or q1 between calibration and test data.

    """
    if not 0 < theta < 1:
        raise ValueError(
            f"theta must be in (0, 1) (human-only variance is 0 otherwise), got {theta}"
        )
    for name, value in (("q0", q0), ("q1", q1)):
        _check_proportion(name, value)
    if (n is None) != (m is None):
        raise ValueError("give both n and m for a finite test set, or neither for n -> infinity")
    if n is not None:
        n = _check_count("n", n, minimum=1)
        m = _check_count("m", m, minimum=1)
    j = q0 + q1 - 1
    if j <= 0:
        ratio = math.inf
    else:
        human = theta * (1 - theta)
        root = (1 - theta) * math.sqrt(q0 * (1 - q0)) + theta * math.sqrt(q1 * (1 - q1))
        ratio = root**2 / (j * j * human)
        if n is not None:
            p = j * theta + 1 - q0
            ratio += m * p * (1 - p) / (n * j * j * human)
    verdict = "use the judge" if ratio < 1 else "label by hand"
    return RegimeVerdict(ratio, verdict, theta, q0, q1, n, m)


def _calibration_variance(theta: float, q0: float, q1: float, m0: int, m1: int) -> float:
    j = q0 + q1 - 1
    if j <= 0 or math.isnan(theta):
        return math.nan
    a = (1 - theta) ** 2 * q0 * (1 - q0)
    b = theta**2 * q1 * (1 - q1)
    t0 = a / m0 if m0 else (math.inf if a > 0 else 0.0)
    t1 = b / m1 if m1 else (math.inf if b > 0 else 0.0)
    return (t0 + t1) / (j * j)


def _guard_counts(m0: int, m1: int) -> None:
    if m0 == 0:
        raise CalibrationError(
            "no human-labelled items with label 0 (m0 = 0), so the judge's specificity is "
            "unknown; label some truly-incorrect items"
        )
    if m1 == 0:
        raise CalibrationError(
            "no human-labelled items with label 1 (m1 = 0), so the judge's sensitivity is "
            "unknown; label some truly-correct items"
        )


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return NormalDist().inv_cdf(1 - alpha / 2)


def _check_proportion(name: str, value: float) -> None:
    if not 0 <= value <= 1:  # also rejects nan
        raise ValueError(f"{name} must be a proportion in [0, 1], got {value}")


def _check_count(name: str, value: int, *, minimum: int) -> int:
    try:
        count = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer count, got {value!r}") from None
    if count < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {count}")
    return count


def _binary(name: str, values: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    bad = (arr != 0) & (arr != 1)  # 10x faster than np.isin on 10**6 items
    if bad.any():
        raise ValueError(f"{name} must hold only 0/1 verdicts, got e.g. {arr[bad][:3].tolist()}")
    return arr.astype(np.int64, copy=False)
