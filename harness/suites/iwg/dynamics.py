"""Scheduling-entropy dynamics: a PLACEHOLDER MODEL (OURS), NOT THE PAPER'S EQUATION.

The paper (arXiv 2606.01351, §2) models H(t) with a mean-field equation that was not read; the
authors' code does not implement it. Until it is, this module fits the spec's placeholder
(spec §2.4):

    dH/dt = -a (H - H_min) + b c(t),

with c(t) the orchestrator's cumulative context load, discretised per step as

    ΔH_t = H_{t+1} - H_t = -a H_t + b c_t + a H_min,

fitted by least squares (scipy) on every transition of every trajectory of one orchestrator.
a is the focusing force, b the diffusion force per unit of context, H_min the floor.

Intervals are percentile bootstraps over trajectories (instances are the clusters: each
resample draws whole trajectories), computed from per-trajectory normal equations so a resample
costs one small solve. Below `MIN_CLUSTERS` trajectories a percentile bootstrap under-covers,
and the interval is "not estimable". Coverage at the sizes the report prints is checked by
Monte-Carlo in the tests.

Entropy lies in [0, ln K] (K = 7 executors). A transition that lands on a bound is clipped, not
measured, and least squares reads it as exact (issue 31: 65% at the ceiling gave b = -0.001
against a true 0.05, labelled "robust" with intervals that excluded the truth). So when any
transition lands on a bound, the fit is the censored (two-limit Tobit) regression of
`censored.py`, with Wald intervals clustered by trajectory; the note and a warning give the
share clipped (an H that never moves is read by least squares, as before). A censored fit
that is not identifiable (nearly all transitions clipped, a
singular information matrix) gets no label ("unclassified", with the reason). A trajectory
holding a value that is not a number is a usage error that names it.

Issue 40: a parameter the data do not identify (collinear columns of (1, H_t, c_t): a context
load equal to the entropy, a constant load; or an interval that excludes its own estimate or is
not finite) has no estimate and no interval, only the reason, and without b's interval there is
no label. H_min, an entropy floor, keeps to [0, ln K] (`identify.py`).

The model sits behind `DynamicsModel`: the paper's equation replaces it by a class with the
same `fit` and `predict`, without touching the report.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harness.errors import HarnessUsageError
from harness.suites.iwg.identify import (
    NOT_IDENTIFIABLE,
    collinear_text,
    estimable,
    in_range,
    stable,
    unidentified,
)
from harness.suites.iwg.schema import EXECUTORS

logger = logging.getLogger(__name__)

H_CEILING = math.log(len(EXECUTORS))  # the largest scheduling entropy: every executor alike
PLACEHOLDER_LABEL = "placeholder model (ours), not the paper's equation"
MIN_CLUSTERS = 20  # below this many trajectories, no percentile-bootstrap interval
ROBUSTNESS_RULE = (
    "oscillating: the 95% interval of the diffusion force b lies above 0 (entropy grows with "
    "context load); robust: the interval reaches 0 or below; unclassified: no interval "
    f"(fewer than {MIN_CLUSTERS} trajectories with a transition). A rule of ours, on the "
    "placeholder model, not the paper's"
)


@dataclass(frozen=True)
class Series:
    """One trajectory's entropy and context load per step."""

    id: str  # instance id (the bootstrap's cluster)
    entropy: tuple[float, ...]  # H(t), t = 0..T-1
    context: tuple[float, ...]  # c(t), same length


@dataclass(frozen=True)
class ParamEstimate:
    """One fitted parameter with its interval."""

    name: str  # a, b or H_min
    estimate: float  # point estimate (nan: not identifiable)
    low: float  # lower end of the 95% interval (nan: not estimable)
    high: float  # upper end
    method: str  # how the interval was made, or why there is none


@dataclass(frozen=True)
class DynamicsFit:
    """A dynamics model fitted to one orchestrator's trajectories."""

    model: str  # the model's name and its label
    params: tuple[ParamEstimate, ...]  # in the model's order
    n_trajectories: int  # trajectories with at least one transition (clusters)
    n_transitions: int  # (H_t, c_t, ΔH_t) rows fitted
    r2: float  # share of the variance of ΔH explained (nan when ΔH is constant)
    rmse: float  # root mean squared residual of ΔH
    note: str  # what could not be estimated and why ("" when all could)
    label: str  # robust, oscillating or unclassified (`ROBUSTNESS_RULE`)

    def param(self, name: str) -> ParamEstimate:
        """The parameter called `name`."""
        return next(p for p in self.params if p.name == name)


class DynamicsModel(Protocol):
    """What the report needs from an entropy-dynamics model."""

    name: str  # short name for tables
    label: str  # what it is ("placeholder model (ours), ...")

    def fit(self, series: Sequence[Series], *, n_boot: int = 2000, seed: int = 0) -> DynamicsFit:
        """Fit to trajectories, with intervals clustered by trajectory."""
        ...

    def predict(self, fit: DynamicsFit, h0: float, context: Sequence[float]) -> np.ndarray:
        """H(t) from H(0) = h0 under the fitted parameters and a context load c(t)."""
        ...


def _rows(series: Sequence[Series]) -> list[np.ndarray]:
    """Per trajectory, its transitions as rows (1, H_t, c_t, ΔH_t)."""
    out = []
    for s in series:
        if len(s.entropy) != len(s.context):
            raise ValueError(
                f"trajectory {s.id}: {len(s.entropy)} entropies, {len(s.context)} loads"
            )
        h = np.asarray(s.entropy, dtype=float)
        c = np.asarray(s.context, dtype=float)
        bad = np.flatnonzero(~(np.isfinite(h) & np.isfinite(c)))
        if len(bad):
            raise HarnessUsageError(
                f"trajectory {s.id}: the entropy or context load at step {int(bad[0])} is not "
                "a number; re-run that sample or leave its log out"
            )
        if len(h) >= 2:
            out.append(np.column_stack([np.ones(len(h) - 1), h[:-1], c[:-1], np.diff(h)]))
    return out


def _to_params(beta: np.ndarray, with_h: bool) -> np.ndarray:
    """(a, b, H_min) from the coefficients (intercept, H, c), or (intercept, c) without H."""
    if not with_h:
        nan = np.full_like(beta[..., 1], np.nan)
        return np.stack([nan, beta[..., 1], nan], axis=-1)
    a = -beta[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        h_min = np.where(a != 0, beta[..., 0] / a, np.nan)
    return np.stack([a, beta[..., 2], h_min], axis=-1)


def _percentiles(params: np.ndarray, q: float) -> np.ndarray:
    """Per column, the q-th percentile of the finite draws (nan where there are none)."""
    out = np.full(params.shape[1], np.nan)
    for j in range(params.shape[1]):
        finite = params[np.isfinite(params[:, j]), j]
        if len(finite):
            out[j] = np.percentile(finite, q)
    return out


def _unidentified(x: np.ndarray, with_h: bool) -> dict[str, str]:
    """Per parameter not identified by the design matrix x, why (none when x has full rank).

    x's columns are (1, H_t, c_t), or (1, c_t) when H is constant (a and H_min are then left
    out already). a is the coefficient of H, b that of c, H_min the intercept over a.
    """
    out = {} if with_h else {"a": "H(t) is constant", "H_min": "H(t) is constant"}
    ok = estimable(x)
    if ok.all():
        return out
    names = ("1", "H(t)", "c(t)") if with_h else ("1", "c(t)")
    why = collinear_text(x, names)
    if with_h and not ok[1]:
        out["a"] = why
    if not ok[-1]:
        out["b"] = why
    if with_h and not (ok[0] and ok[1]):
        out["H_min"] = why
    return out


def _screened(
    params: tuple[ParamEstimate, ...], why: dict[str, str], bounds: tuple[float, float]
) -> tuple[ParamEstimate, ...]:
    """Each parameter, or one "not identifiable" line; H_min kept in the entropy's range.

    See `harness.suites.iwg.identify`.
    """
    out = []
    for p in params:
        p = unidentified(p, why[p.name]) if p.name in why else stable(p)
        out.append(in_range(p, *bounds) if p.name == "H_min" else p)
    return tuple(out)


def _rounding(rows: np.ndarray) -> float:
    """The sum of squares rounding alone gives the steps ΔH = H(t+1) - H(t).

    Below it ΔH is constant and R² is not defined (a few ulps of H per step, every step).
    """
    scale = float(np.abs(rows[:, 1]).max() + np.abs(rows[:, 3]).max())
    return len(rows) * (8 * np.finfo(float).eps * scale) ** 2


def _reasons(params: tuple[ParamEstimate, ...]) -> list[str]:
    """The distinct "not identifiable: ..." lines of the parameters, naming them."""
    by_reason: dict[str, list[str]] = {}
    for p in params:
        if p.method.startswith(NOT_IDENTIFIABLE):
            by_reason.setdefault(p.method, []).append(p.name)
    cut = len(NOT_IDENTIFIABLE) + 2  # "not identifiable: "
    return [f"{NOT_IDENTIFIABLE} ({', '.join(names)}): {why[cut:]}"
            for why, names in by_reason.items()]  # fmt: skip


def _label(params: tuple[ParamEstimate, ...]) -> str:
    """`ROBUSTNESS_RULE` on b's interval; unclassified without one."""
    b = next(p for p in params if p.name == "b")
    if math.isnan(b.low):
        return "unclassified"
    return "oscillating" if b.low > 0 else "robust"


class PlaceholderMeanField:
    """dH/dt = -a (H - H_min) + b c(t): placeholder model (ours), not the paper's equation."""

    name = "placeholder mean-field"
    label = PLACEHOLDER_LABEL
    names = ("a", "b", "H_min")

    def fit(
        self,
        series: Sequence[Series],
        *,
        n_boot: int = 2000,
        seed: int = 0,
        bounds: tuple[float, float] = (0.0, H_CEILING),
    ) -> DynamicsFit:
        """Least squares, percentile bootstrap over trajectories; censored where clipped.

        Where a transition lands on one of `bounds`, the fit is the censored one of
        `censored.py`, with Wald intervals clustered by trajectory.

        Raises:
            HarnessUsageError: A trajectory holds a value that is not a number.

        """
        from scipy.linalg import lstsq

        per = _rows(series)
        model = f"{self.name}: {self.label}"
        if not per or sum(len(r) for r in per) < 3:
            nan = [
                ParamEstimate(n, math.nan, math.nan, math.nan, "not estimable") for n in self.names
            ]
            note = "fewer than 3 transitions (trajectories of one step or none): nothing to fit"
            return DynamicsFit(
                model,
                tuple(nan),
                len(per),
                sum(len(r) for r in per),
                math.nan,
                math.nan,
                note,
                "unclassified",
            )
        rows = np.vstack(per)
        nxt = rows[:, 1] + rows[:, 3]
        at_top, at_floor = nxt >= bounds[1] - 1e-9, nxt <= bounds[0] + 1e-9
        # an H that never moves (one executor a round: always 0) is read by least squares as
        # before: its steps are all 0, and censoring would add nothing to that
        moves = bool(np.ptp(np.concatenate([rows[:, 1], nxt])) > 0)
        if moves and (at_top.any() or at_floor.any()):
            return self._censored(per, bounds, int(at_top.sum()), int(at_floor.sum()), model)
        y = rows[:, 3]
        with_h = bool(np.ptp(rows[:, 1]) > 0)
        cols = [0, 1, 2] if with_h else [0, 2]
        why = _unidentified(rows[:, cols], with_h)
        beta, *_ = lstsq(rows[:, cols], y)
        estimate = _to_params(beta, with_h)
        resid = y - rows[:, cols] @ beta
        ss = float(np.sum((y - y.mean()) ** 2))
        r2 = 1 - float(np.sum(resid**2)) / ss if ss > _rounding(rows) else math.nan
        rmse = float(np.sqrt(np.mean(resid**2)))
        if len(per) < MIN_CLUSTERS:
            low = high = np.full(3, np.nan)
            method = f"not estimable (fewer than {MIN_CLUSTERS} trajectories)"
        elif len(why) == len(self.names):  # nothing to bootstrap
            low = high = np.full(3, np.nan)
            method = NOT_IDENTIFIABLE
        else:
            low, high = self._bootstrap(per, cols, with_h, n_boot, seed)
            method = f"percentile bootstrap over {len(per)} trajectories (clustered), B={n_boot}"
        params = _screened(
            tuple(
                ParamEstimate(name, float(estimate[i]), float(low[i]), float(high[i]), method)
                for i, name in enumerate(self.names)
            ),
            why,
            bounds,
        )
        note = "; ".join(_reasons(params))
        return DynamicsFit(model, params, len(per), len(rows), r2, rmse, note, _label(params))

    def _censored(
        self, per: list[np.ndarray], bounds: tuple[float, float], top: int, floor: int, model: str
    ) -> DynamicsFit:
        """The fit when `top` transitions land on the ceiling and `floor` on the floor."""
        from harness.suites.iwg.censored import tobit_fit

        rows = np.vstack(per)
        n = len(rows)
        share = (top + floor) / n
        clipped = (
            f"{share:.1%} of transitions are clipped at the entropy bounds ({top} at the ceiling "
            f"{bounds[1]:.3f}, {floor} at the floor {bounds[0]:g}): fitted as censored (Tobit)"
        )
        logger.warning("iwg dynamics: %s", clipped)
        got = tobit_fit(per, bounds[0], bounds[1], MIN_CLUSTERS)
        if got.unidentifiable:
            method = f"not estimable ({got.unidentifiable})"
        elif len(per) < MIN_CLUSTERS:
            method = f"not estimable (fewer than {MIN_CLUSTERS} trajectories)"
        else:
            method = f"Wald, censored (Tobit) fit, clustered over {len(per)} trajectories"
        params = tuple(
            ParamEstimate(name, got.params[i], got.low[i], got.high[i], method)
            for i, name in enumerate(self.names)
        )
        why = dict.fromkeys(self.names, got.unidentifiable) if got.unidentifiable else {}
        params = _screened(params, why, bounds)
        notes = [clipped, *_reasons(params)]
        label = _label(params)
        # R^2 and RMSE of the latent step's mean against the observed steps, for comparison
        mu = rows[:, :3] @ np.asarray(got.beta)
        resid = rows[:, 3] - mu
        ss = float(np.sum((rows[:, 3] - rows[:, 3].mean()) ** 2))
        r2 = 1 - float(np.sum(resid**2)) / ss if ss > 0 else math.nan
        rmse = float(np.sqrt(np.mean(resid**2)))
        return DynamicsFit(model, params, len(per), n, r2, rmse, "; ".join(notes), label)

    @staticmethod
    def _bootstrap(
        per: list[np.ndarray], cols: list[int], with_h: bool, n_boot: int, seed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        x = [r[:, cols] for r in per]
        xtx = np.stack([xi.T @ xi for xi in x])  # (n, p, p)
        xty = np.stack([xi.T @ r[:, 3] for xi, r in zip(x, per, strict=True)])  # (n, p)
        n = len(per)
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(n, np.full(n, 1 / n), size=n_boot).astype(float)  # (B, n)
        a_b = np.einsum("bn,npq->bpq", counts, xtx)  # (B, p, p)
        v_b = np.einsum("bn,np->bp", counts, xty)  # (B, p)
        beta = np.einsum("bpq,bq->bp", np.linalg.pinv(a_b), v_b)  # (B, p)
        params = _to_params(beta, with_h)  # (B, 3)
        return _percentiles(params, 2.5), _percentiles(params, 97.5)

    def predict(self, fit: DynamicsFit, h0: float, context: Sequence[float]) -> np.ndarray:
        """Iterate the fitted step map from h0 (a taken as 0 where it is not identifiable)."""
        a = fit.param("a").estimate
        b = fit.param("b").estimate
        h_min = fit.param("H_min").estimate
        pull = 0.0 if math.isnan(a) else a
        floor = 0.0 if math.isnan(h_min) else h_min
        out = [h0]
        for c in list(context)[:-1]:
            out.append(out[-1] - pull * (out[-1] - floor) + (0.0 if math.isnan(b) else b) * c)
        return np.array(out)


def simulate(
    *,
    a: float = 0.3,
    b: float = 0.02,
    h_min: float = 0.2,
    n_traj: int = 200,
    steps: int | tuple[int, int] = 20,
    noise: float = 0.05,
    h_max: float = math.log(7),
    seed: int = 0,
) -> list[Series]:
    """Trajectories of the placeholder model (spec §3's recovery check).

    c grows by U(0.5, 1.5) per step from 0; H(0) ~ U(0, h_max); each step adds N(0, noise^2) and
    H is clipped to [0, h_max]. `steps` is a length, or a (low, high) range drawn per trajectory.
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_traj):
        length = steps if isinstance(steps, int) else int(rng.integers(steps[0], steps[1] + 1))
        c = np.concatenate([[0.0], np.cumsum(rng.uniform(0.5, 1.5, length - 1))])
        h = np.empty(length)
        h[0] = rng.uniform(0, h_max)
        for t in range(length - 1):
            step = -a * (h[t] - h_min) + b * c[t] + rng.normal(0, noise)
            h[t + 1] = min(max(h[t] + step, 0.0), h_max)
        out.append(Series(f"sim-{i}", tuple(h), tuple(c)))
    return out
