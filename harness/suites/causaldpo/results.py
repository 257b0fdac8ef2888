"""The causaldpo part of `harness report`: arms per split over seeds, each arm against DPO.

For one log, per split (IID validation, IID test, OOD test, OOD-H′) and metric (NDCG@10, HR@10,
Pop@1, ORRatio@10), from the comparison engine (`harness.stats._compare`, the suite's design:
unit seed, scores in [0, 1], Pop@1 and ORRatio lower-is-better, each arm against DPO, one Holm
family per split and metric):
- each arm's mean over the seeds that finished, with its t interval clipped to [0, 1]; an
  errored run is left out and counted;
- each arm against DPO on the same seeds: below 20 seeds the exact sign-flip p (two-sided) and
  the interval that inverts it (none below 6 seeds), from 20 a paired bootstrap.
The claims (`harness.suites.causaldpo.claims`) read these comparisons.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.sections import pyplot
from harness.stats import Comparison, compare
from harness.suites.catalog import suite_of_task
from harness.suites.causaldpo.claims import claims_of

SPLITS = (("val", "IID val"), ("iid", "IID"), ("ood", "OOD"), ("ood_h2", "OOD-H′"))
KINDS = (("ndcg10", "NDCG@10"), ("hr10", "HR@10"), ("pop1", "Pop@1"), ("orr10", "ORRatio@10"))
BASELINE = "dpo"


def design() -> Any:
    """The suite's design, read from the catalog."""
    return suite_of_task(f"{__package__}.task:causaldpo").design


@dataclass(frozen=True)
class ArmRuns:
    """One arm's seeds."""

    arm: str
    seeds: int  # runs, errored ones included
    errors: int  # runs that errored (left out of every mean and pair)


@dataclass(frozen=True)
class CausalReport:
    """One causaldpo log's numbers."""

    label: str  # task and log file
    arms: tuple[ArmRuns, ...]  # in the task's order
    comparisons: tuple[tuple[str, Comparison], ...]  # ("ood_ndcg10", comparison), ...
    ari: tuple[tuple[int, float], ...]  # (seed, ARI of the SFT model's clusters)
    selected: str | None  # the weighted CausalDPO arm with the best mean IID-val NDCG@10
    claims: tuple[str, ...]  # one line per acceptance check
    runs: tuple[dict[str, Any], ...]  # the finished runs (for the plots and per-seed values)

    def comparison(self, key: str) -> Comparison | None:
        """The comparison of `split_kind`, for example "ood_ndcg10"."""
        return dict(self.comparisons).get(key)

    def per_seed(self, arm: str, key: str) -> dict[int, float]:
        """One arm's value of `key` on each seed that finished."""
        return {int(r["seed"]): float(r[key]) for r in self.runs if r["arm"] == arm}


def load_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample runs of a causaldpo log; an errored one has `error`."""
    runs = load_training_runs(location, ("arm", "seed"))
    return [{**r, "seed": int(r["seed"])} for r in runs]


def arm_order(arm: str) -> tuple[int, float, str]:
    """Sort key: SFT, DPO, S-DPO, code-faithful, weighted by λ, oracle, IRMv1, then the rest."""
    fixed = {"sft": 0, "dpo": 1, "sdpo": 2, "causaldpo-code": 3, "causaldpo-oracle": 5,
             "irm-oracle": 6}  # fmt: skip
    if arm in fixed:
        return fixed[arm], 0.0, arm
    if arm.startswith("causaldpo-w"):
        try:
            return 4, float(arm.removeprefix("causaldpo-w")), arm
        except ValueError:
            pass
    return 7, 0.0, arm


def _select(runs: list[dict[str, Any]]) -> str | None:
    """The weighted arm whose mean IID-validation NDCG@10 is highest (never OOD)."""
    means: dict[str, list[float]] = {}
    for r in runs:
        if r["arm"].startswith("causaldpo-w"):
            means.setdefault(r["arm"], []).append(float(r["val_ndcg10"]))
    if not means:
        return None
    return max(sorted(means), key=lambda a: float(np.mean(means[a])))


def build_report(label: str, runs: list[dict[str, Any]]) -> CausalReport:
    """Arms, comparisons against DPO and the claims of one log's runs."""
    base = design()
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(runs, key=lambda r: (arm_order(r["arm"]), r["seed"])):
        by_arm.setdefault(r["arm"], []).append(r)
    done = [r for r in runs if "error" not in r]
    arms = tuple(ArmRuns(a, len(rs), sum("error" in r for r in rs)) for a, rs in by_arm.items())
    pairs = base.pairs(list(by_arm))
    comparisons = []
    for split, _ in SPLITS:
        for kind, label_kind in KINDS:
            key = f"{split}_{kind}"
            scores: dict[str, dict[str, float]] = {a: {} for a in by_arm}
            for r in done:
                scores[r["arm"]][str(r["seed"])] = float(r[key])
            comp = compare(base.metric(kind), scores, pairs=pairs, metric=f"{split} {label_kind}")
            comparisons.append((key, comp))
    ari = tuple((int(r["seed"]), float(r["ari"])) for r in done if r["arm"] == "sft")
    partial = CausalReport(label, arms, tuple(comparisons), tuple(sorted(ari)), _select(done),
                           (), tuple(done))  # fmt: skip
    return dataclasses.replace(partial, claims=claims_of(partial))


def plot_iid_ood(report: CausalReport, path: Path) -> str:
    """IID against OOD NDCG@10 per arm, and OOD Pop@1 against OOD NDCG@10 (means, 95% t)."""
    plt = pyplot()
    panels = (
        ("iid_ndcg10", "ood_ndcg10", "IID NDCG@10", "OOD NDCG@10 (exposure removed)"),
        ("ood_pop1", "ood_ndcg10", "OOD Pop@1 (top-1 in the hot set)", "OOD NDCG@10"),
    )
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.4))
    colours = plt.get_cmap("tab10")
    for ax, (kx, ky, lx, ly) in zip(axes, panels, strict=True):
        cx, cy = report.comparison(kx), report.comparison(ky)
        if cx is None or cy is None:
            continue
        for i, arm in enumerate(a.arm for a in report.arms):
            ex, ey = cx.arm(arm), cy.arm(arm)
            if ex is None or ey is None or ex.interval.n == 0:
                continue
            sx, sy = report.per_seed(arm, kx), report.per_seed(arm, ky)
            seeds = sorted(set(sx) & set(sy))
            colour = colours(i % 10)
            ax.scatter([sx[s] for s in seeds], [sy[s] for s in seeds], s=8, alpha=0.35,
                       color=colour)  # fmt: skip
            x, y = ex.interval, ey.interval

            def err(v: Any) -> Any:
                return [[v.estimate - v.low], [v.high - v.estimate]] if v.estimable else None

            ax.errorbar([x.estimate], [y.estimate], xerr=err(x), yerr=err(y), fmt="o",
                        capsize=3, color=colour, label=arm)  # fmt: skip
        ax.xaxis.set_major_locator(plt.MaxNLocator(5))
        ax.set_xlabel(lx)
        ax.set_ylabel(ly)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")
    n = max((a.seeds - a.errors for a in report.arms), default=0)
    fig.suptitle(f"CausalDPO (reconstructed), {n} seeds: arm means with 95% t intervals "
                 "(small dots: seeds)", fontsize=9)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def metric_text(value: float) -> str:
    """A metric value, or a dash."""
    return "–" if math.isnan(value) else f"{value:.4f}"
