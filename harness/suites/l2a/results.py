"""The L2A section of `harness report`: each arm with intervals over seeds, and the spec's checks.

For each `l2a-recall` log, one row per arm (full, swa, and l2a at each λ′):
- recall accuracy, mean over seeds with a t interval;
- the routed fraction (share of token-layer pairs with d_t = 1), mean with a t interval, and the
  routing at query positions per layer;
- the query CE, and CE − full-global's on the same seeds: the "loss against full-global", from
  the comparison engine (`harness.stats._compare`, the suite's design: unit seed, one Holm family
  of every arm against full-global). Below 20 seeds that is the exact sign-flip interval over
  the per-seed differences, which exists from 6 seeds on (the preset runs 2; below 6 the table
  says "not estimable at n = 2" rather than print an interval that covers less than it
  claims), and the exact sign-flip p, Holm-corrected;
- the runs that errored, counted per arm. Every score here is continuous (a share of recalled
  keys, a CE), so an errored run is left out of the means and the pairs, and counted;
- accuracy after pruning the layers that route under the run's threshold, and the KV-cache bytes
  saved against a dense model.
Then the checks of specs/l2a.md §5: check 5 (SWA ≤ 10%, full ≥ 95%, L2A within 5 points of full
while routing ≤ 30%, query positions routed ≥ 80% in some layer) and check 4 (the routed fraction
falls monotonically in λ′ > 0), each a line saying pass or FAIL with the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.sections import pyplot
from harness.stats import Interval, estimate, pair_family
from harness.suites.catalog import suite_of_task

# unit: seed; CE unbounded; every arm against full
DESIGN = suite_of_task(f"{__package__}.task:l2a_recall").design
SHARES = replace(DESIGN, score="bounded", bounds=(0.0, 1.0), direction="higher")  # in [0, 1]


@dataclass(frozen=True)
class L2AArm:
    """One (variant, λ′) over its seeds."""

    variant: str
    lam: float
    seeds: int  # runs, errored ones included
    accuracy: Interval  # recall accuracy, t interval over the seeds that finished, clipped
    routed: Interval  # share of (token, layer) pairs routed to global attention
    query_routed: tuple[float, ...]  # per layer, mean over seeds: routing at query positions
    ce: Interval  # query CE
    ce_vs_full: Interval  # CE − full-global's, paired by seed, the engine's (n 0: no pair)
    accuracy_pruned: float  # mean accuracy after pruning
    pruned_layers: float  # mean number of layers pruned
    kv_saved: float  # mean share of a dense model's KV bytes saved (negative: more held)
    ce_p_holm: float = math.nan  # Holm p of CE − full over the arms; nan: not tested
    errors: int = 0  # runs that errored (left out of every mean, counted here)

    @property
    def name(self) -> str:
        """The arm's label."""
        return f"l2a λ′={self.lam:g}" if self.variant == "l2a" else self.variant


@dataclass(frozen=True)
class RoutingCurve:
    """One L2A run's routed fraction (training batches) over its steps."""

    arm: str
    seed: int
    steps: tuple[int, ...]
    routed: tuple[float, ...]


@dataclass(frozen=True)
class L2AReport:
    """One l2a-recall log's arms and checks."""

    label: str
    arms: tuple[L2AArm, ...]
    checks: tuple[str, ...]
    curves: tuple[RoutingCurve, ...] = ()


def load_l2a_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample runs of an l2a-recall log."""
    runs = load_training_runs(location, ("variant", "lam", "seed"))
    return [{**r, "lam": float(r["lam"]), "seed": int(r["seed"])} for r in runs]


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _ce_pairs(groups: dict[tuple[str, float], list[dict]]) -> dict[tuple[str, float], Any]:
    """CE − full-global's per arm on shared seeds: the engine's family, by arm key."""
    ce = {key: {str(r["seed"]): r["ce"] for r in rs} for key, rs in groups.items()}
    full = ce.get(("full", 0.0))
    if full is None:
        return {}
    keys = [k for k in groups if k != ("full", 0.0)]
    family = pair_family(DESIGN, [(str(k), "full", ce[k], full) for k in keys])
    return dict(zip(keys, family, strict=True))


def build_l2a_report(label: str, runs: list[dict[str, Any]]) -> L2AReport:
    """Arms with intervals over seeds, and the checks of specs/l2a.md §5."""
    order = {"full": 0, "swa": 1, "l2a": 2}
    groups: dict[tuple[str, float], list[dict]] = {}
    everything: dict[tuple[str, float], list[dict]] = {}
    for r in sorted(runs, key=lambda r: (order.get(r["variant"], 3), r["lam"], r["seed"])):
        everything.setdefault((r["variant"], r["lam"]), []).append(r)
        groups.setdefault((r["variant"], r["lam"]), [])
        if "error" not in r:
            groups[(r["variant"], r["lam"])].append(r)
    pairs = _ce_pairs(groups)
    arms = []
    for (variant, lam), rs in groups.items():
        pair = pairs.get((variant, lam))
        t = pair.test if pair is not None else None
        ce_vs_full = (
            Interval(t.estimate, t.low, t.high, t.confidence, t.method, t.n)
            if t is not None
            else Interval(math.nan, math.nan, math.nan, 0.95, "no pair with full-global", 0)
        )
        query = [r["query_routed_per_layer"] for r in rs]
        arms.append(L2AArm(
            variant=variant, lam=lam, seeds=len(everything[(variant, lam)]),
            accuracy=estimate(SHARES, [r["accuracy"] for r in rs]),
            routed=estimate(SHARES, [r["routed"] for r in rs]),
            query_routed=tuple(np.mean(query, axis=0)) if query else (),
            ce=estimate(DESIGN, [r["ce"] for r in rs]),
            ce_vs_full=ce_vs_full,
            accuracy_pruned=_mean([r["accuracy_pruned"] for r in rs]),
            pruned_layers=_mean([len(r["pruned_layers"]) for r in rs]),
            kv_saved=_mean([r["kv_saved"] for r in rs]),
            ce_p_holm=pair.p_holm if pair is not None else math.nan,
            errors=len(everything[(variant, lam)]) - len(rs),
        ))  # fmt: skip
    curves = tuple(
        RoutingCurve(arm.name, r["seed"], tuple(r["curve"]["step"]), tuple(r["curve"]["routed"]))
        for arm, rs in zip(arms, groups.values(), strict=True)
        if arm.variant == "l2a"
        for r in rs
        if "curve" in r
    )
    return L2AReport(label, tuple(arms), tuple(_checks(arms)), curves)


def _checks(arms: list[L2AArm]) -> list[str]:
    by = {(a.variant, a.lam): a for a in arms}
    swa, full = by.get(("swa", 0.0)), by.get(("full", 0.0))
    l2a = sorted((a for a in arms if a.variant == "l2a"), key=lambda a: a.lam)
    out = []

    def verdict(ok: bool) -> str:
        return "pass" if ok else "FAIL"

    if swa:
        acc = swa.accuracy.estimate
        out.append(f"check 5: SWA-only accuracy ≤ 10%: {verdict(acc <= 0.10)} ({100 * acc:.1f}%)")
    if full:
        acc = full.accuracy.estimate
        out.append(f"check 5: full-global accuracy ≥ 95%: {verdict(acc >= 0.95)} "
                   f"({100 * acc:.1f}%)")  # fmt: skip
    for a in l2a:
        gap = (full.accuracy.estimate - a.accuracy.estimate) if full else math.nan
        ok = (gap <= 0.05 if full else False) and a.routed.estimate <= 0.30
        gap_text = f"{100 * gap:+.1f} points below full" if full else "no full-global run"
        out.append(
            f"check 5: {a.name} within 5 points of full-global while routing ≤ 30%: "
            f"{verdict(ok)} ({100 * a.accuracy.estimate:.1f}%, {gap_text}, "
            f"{100 * a.routed.estimate:.1f}% routed)"
        )
        best = max(a.query_routed) if a.query_routed else 0.0
        layers = " / ".join(f"{100 * q:.0f}%" for q in a.query_routed)
        out.append(f"check 5: {a.name} query positions routed ≥ 80% in some layer: "
                   f"{verdict(best >= 0.80)} (per layer {layers})")  # fmt: skip
    positive = [a for a in l2a if a.lam > 0]
    if len(positive) >= 2:
        fractions = [a.routed.estimate for a in positive]
        ok = all(b <= a for a, b in zip(fractions, fractions[1:], strict=False))
        seq = " → ".join(f"{100 * f:.1f}%" for f in fractions)
        lams = ", ".join(f"{a.lam:g}" for a in positive)
        out.append(f"check 4: routed fraction falls monotonically in λ′ ({lams}): "
                   f"{verdict(ok)} ({seq})")  # fmt: skip
    return out


def _ci(i: Interval, scale: float = 1.0, digits: int = 1) -> str:
    """`12.3 [10.1, 14.5]`, `12.3 (not estimable at n = 2)`, or "–" without an estimate."""
    if i.n == 0:
        return "–"
    return i.text(f".{digits}f", scale=scale)


def _paired_ci(i: Interval) -> str:
    """The interval of CE − full with the level it attains (sign-flip: 96.9% at 6 seeds)."""
    if i.n == 0 or not i.estimable:
        return _ci(i, digits=3)
    return f"{_ci(i, digits=3)} ({100 * i.confidence:.1f}%)"


def _p_text(p: float) -> str:
    return "not tested" if math.isnan(p) else f"{p:.3g}"


def l2a_tables(report: L2AReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Caption, header and rows of the arm table."""
    rows = []
    for a in report.arms:
        routed = _ci(a.routed, 100) if a.variant == "l2a" else f"{100 * a.routed.estimate:.0f}"
        query = " / ".join(f"{100 * q:.0f}" for q in a.query_routed) if a.variant == "l2a" else "–"
        p = "–" if a.ce_vs_full.n == 0 else _p_text(a.ce_p_holm)
        rows.append([a.name, str(a.seeds), str(a.errors), _ci(a.accuracy, 100), routed, query,
                     _ci(a.ce, digits=3), _paired_ci(a.ce_vs_full), p,
                     f"{100 * a.accuracy_pruned:.1f} ({a.pruned_layers:g} pruned)",
                     f"{100 * a.kv_saved:+.0f}%"])  # fmt: skip
    return [(
        f"L2A, {report.label}: recall accuracy (%) and routed fraction (% of token-layer pairs) "
        "per arm, mean over seeds with 95% t intervals (shares clipped to [0, 100]); query CE "
        "(t) and its difference from full-global on the same seeds (exact sign-flip interval at "
        "the level it attains, not estimable below 6 seeds, and its p, Holm over the arms); "
        "accuracy after pruning and KV-cache bytes saved against a dense model; an errored run "
        "is left out of every mean and counted",
        ["arm", "seeds", "errored", "accuracy % (t)", "routed % (t)", "query routed % per layer",
         "query CE (t)", "CE − full (sign-flip)", "p (Holm)", "accuracy pruned %", "KV saved"],
        rows,
    )]  # fmt: skip


def plot_l2a(report: L2AReport, path: Path) -> str:
    """Accuracy and routed fraction per arm with 95% intervals, and routing over training."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.8))
    names = [a.name for a in report.arms]
    for ax, field, title in ((axes[0], "accuracy", "recall accuracy (%)"),
                             (axes[1], "routed", "routed fraction (%)")):  # fmt: skip
        for x, a in enumerate(report.arms):
            s: Interval = getattr(a, field)
            err = None
            if s.n > 1 and not math.isnan(s.low):
                err = [[100 * (s.estimate - s.low)], [100 * (s.high - s.estimate)]]
            ax.errorbar([x], [100 * s.estimate], yerr=err, fmt="o", capsize=4, color="C0")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_ylim(-5, 105)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    arms = sorted({c.arm for c in report.curves})
    for c in report.curves:
        colour = f"C{arms.index(c.arm) % 10}"
        label = c.arm if c.seed == min(d.seed for d in report.curves if d.arm == c.arm) else None
        axes[2].plot(c.steps, [100 * r for r in c.routed], color=colour, label=label, alpha=0.8)
    axes[2].set_xlabel("training step")
    axes[2].set_ylim(-5, 105)
    axes[2].set_title("routed in training (%), a line per seed")
    axes[2].grid(alpha=0.3)
    if report.curves:
        axes[2].legend(fontsize=7)
    fig.suptitle(f"L2A recall: {report.label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
