"""The k-parity part of `harness report`: per-arm statistics and learning-curve plots.

Per arm, over its seeds:
- the share of seeds that generalise (test accuracy >= 0.99 within budget), Wilson interval;
- the median steps to generalise, percentile-bootstrap interval over seeds; a seed that never
  generalises counts as "not reached" (infinite), so the median is "not reached" when half or
  more seeds never get there (ours: censoring rule);
- the final test accuracy, t interval over seeds;
- paired comparisons between arms on the same seeds (final accuracy, and steps with a seed
  that never generalises set to the budget): a paired-bootstrap interval for the difference and
  a sign-flip permutation p-value, Holm-corrected. With a handful of seeds the bootstrap's own
  p-value is far too small (3 seeds allow only 8 sign patterns, so no honest p is below 0.25);
  the permutation test keeps it honest.

Then the paper's two claims in plain words, read off those paired step differences (ours: the
wording and the thresholds, Holm p < 0.05 for "significant"): whether `md-optimal` and
`md-fixed` generalise in fewer steps than unweighted `md-uniform` and `md-uniform-inv-t` lags
all of them; and which way AR against MD came out, with the preset the log ran, since the
paper's setting is the `paper` preset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.stats.intervals import Interval, t_interval, wilson
from harness.stats.multiple import holm
from harness.stats.paired import PairedTest, paired_bootstrap_diff, paired_permutation


@dataclass(frozen=True)
class ArmRow:
    """One arm's statistics over seeds."""

    arm: str  # arm name
    seeds: int  # runs
    generalized: Interval  # share of seeds reaching 0.99, Wilson
    median_steps: float  # median steps to generalise (inf: not reached)
    median_low: float  # bootstrap interval of the median
    median_high: float
    final_acc: Interval  # final test accuracy, t interval


@dataclass(frozen=True)
class ArmPair:
    """Two arms on the same seeds."""

    arm_a: str
    arm_b: str
    acc: PairedTest  # final accuracy a - b
    steps: PairedTest  # steps to generalise a - b (never = budget)
    p_holm_acc: float  # Holm over all pairs
    p_holm_steps: float


@dataclass(frozen=True)
class ParityReport:
    """The k-parity section of a report."""

    task: str  # task label (preset)
    arms: tuple[ArmRow, ...]
    pairs: tuple[ArmPair, ...]
    runs: tuple[dict[str, Any], ...]  # per run: arm, seed, steps, train_acc, test_acc, ...
    claims: tuple[str, ...] = ()  # the paper's claims, which way each came out here


def load_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample run results (arm, seed, curves) from a k-parity log."""
    return [{**r, "seed": int(r["seed"])} for r in load_training_runs(location, ("arm", "seed"))]


def _median_steps(steps: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    median = float(np.median(steps))
    rng = np.random.default_rng(seed)
    draws = np.median(rng.choice(steps, size=(10_000, steps.size), replace=True), axis=1)
    low, high = np.percentile(draws, [2.5, 97.5], method="lower")
    return median, float(low), float(high)


def _paired(a: list[float], b: list[float]) -> PairedTest:
    """Bootstrap interval of mean(a - b) with the sign-flip permutation p-value."""
    interval = paired_bootstrap_diff(a, b)
    p_value = paired_permutation(a, b).p_value
    return replace(interval, p_value=p_value, method="paired bootstrap CI, sign-flip p")


def _clip01(ci: Interval) -> Interval:
    """Accuracies live in [0, 1]; a t interval over 3 seeds can leave it."""
    return replace(ci, low=max(0.0, ci.low), high=min(1.0, ci.high))


def build_parity_report(
    task: str, runs: list[dict[str, Any]], preset: str | None = None
) -> ParityReport:
    """Per-arm rows, Holm-corrected paired comparisons between arms, and the claims' outcome."""
    arms: dict[str, list[dict[str, Any]]] = {}
    for run in sorted(runs, key=lambda r: (r["arm"], r["seed"])):
        arms.setdefault(run["arm"], []).append(run)
    rows = []
    for arm, arm_runs in arms.items():
        hits = [r["steps_to_generalize"] for r in arm_runs]
        steps = np.array([math.inf if h is None else h for h in hits], dtype=float)
        median, low, high = _median_steps(steps)
        rows.append(
            ArmRow(
                arm=arm,
                seeds=len(arm_runs),
                generalized=wilson(sum(h is not None for h in hits), len(hits)),
                median_steps=median,
                median_low=low,
                median_high=high,
                final_acc=_clip01(t_interval([r["final_test_acc"] for r in arm_runs])),
            )
        )
    tests = []
    for a, b in combinations(sorted(arms), 2):
        seeds = sorted({r["seed"] for r in arms[a]} & {r["seed"] for r in arms[b]})
        if len(seeds) < 2:
            continue
        ra = {r["seed"]: r for r in arms[a]}
        rb = {r["seed"]: r for r in arms[b]}

        def steps_or_budget(r: dict[str, Any]) -> float:
            return float(r["steps_to_generalize"] or r["steps"][-1])

        acc = _paired(
            [ra[s]["final_test_acc"] for s in seeds], [rb[s]["final_test_acc"] for s in seeds]
        )
        steps = _paired(
            [steps_or_budget(ra[s]) for s in seeds], [steps_or_budget(rb[s]) for s in seeds]
        )
        tests.append((a, b, acc, steps))
    pairs = []
    if tests:
        p_acc = holm([t[2].p_value for t in tests]).adjusted
        p_steps = holm([t[3].p_value for t in tests]).adjusted
        for (a, b, acc, steps), pa, ps in zip(tests, p_acc, p_steps, strict=True):
            pairs.append(ArmPair(a, b, acc, steps, pa, ps))
    return ParityReport(task, tuple(rows), tuple(pairs), tuple(runs), _claims(pairs, rows, preset))


ALPHA = 0.05  # Holm-adjusted p below this reads "significant"
MD_ARMS = ("md-optimal", "md-fixed", "md-uniform", "md-uniform-inv-t")


def _steps_diff(pairs: list[ArmPair], a: str, b: str) -> tuple[float, float, float, float] | None:
    """Steps a - b (estimate, low, high) and its Holm p, whichever way the pair was stored."""
    for p in pairs:
        if (p.arm_a, p.arm_b) == (a, b):
            return p.steps.estimate, p.steps.low, p.steps.high, p.p_holm_steps
        if (p.arm_a, p.arm_b) == (b, a):  # 0.0 - x: no "-0" for a zero difference
            return 0.0 - p.steps.estimate, 0.0 - p.steps.high, 0.0 - p.steps.low, p.p_holm_steps
    return None


def _diff_text(a: str, b: str, diff: tuple[float, float, float, float]) -> str:
    est, low, high, p = diff
    return f"{a} − {b} {est:+.0f} [{low:+.0f}, {high:+.0f}] steps, Holm p {p:.2g}"


def _verdict(diffs: list[tuple[float, float, float, float]], claimed: int) -> str:
    """How the differences compare with the claimed sign (-1: fewer steps, +1: more)."""
    signs = [int(np.sign(d[0])) for d in diffs]
    agree, against = signs.count(claimed), signs.count(-claimed)
    level = len(signs) - agree - against
    if agree == len(signs):
        way = "same direction as the paper"
    elif against == len(signs):
        way = "reversed"
    else:
        parts = [("same direction as the paper", agree), ("reversed", against), ("level", level)]
        way = ", ".join(f"{name} in {n} of {len(signs)}" for name, n in parts if n)
    significant = sum(d[3] < ALPHA for d in diffs)
    return f"{way}; " + (
        "not significant" if significant == 0 else f"significant in {significant} of {len(diffs)}"
    )


def _claims(pairs: list[ArmPair], rows: list[ArmRow], preset: str | None) -> tuple[str, ...]:
    """The paper's two claims, which way each came out on this log's arms."""
    shares = {r.arm: f"{round(r.generalized.estimate * r.seeds)}/{r.seeds}" for r in rows}

    def generalised(arms: list[str]) -> str:
        return "generalised on " + ", ".join(f"{a} {shares[a]}" for a in arms if a in shares)

    def compare(a: str, others: tuple[str, ...]) -> list[tuple[str, Any]]:
        found = [(b, _steps_diff(pairs, a, b)) for b in others]
        return [(b, d) for b, d in found if d is not None]

    claims = []
    window = [(a, _steps_diff(pairs, a, "md-uniform")) for a in ("md-optimal", "md-fixed")]
    window = [(a, d) for a, d in window if d is not None]
    if window:
        diffs = "; ".join(_diff_text(a, "md-uniform", d) for a, d in window)
        claims.append(
            "Schedule claim (paper: the window and the fixed rate generalise in fewer steps "
            f"than unweighted U[0, 1]): {diffs}: {_verdict([d for _, d in window], -1)} "
            f"({generalised([a for a, _ in window] + ['md-uniform'])})."
        )
    lags = compare("md-uniform-inv-t", MD_ARMS[:3])
    if lags:
        diffs = "; ".join(_diff_text("md-uniform-inv-t", b, d) for b, d in lags)
        claims.append(
            "1/t weighting (paper: U[0, 1] weighted by 1/t lags the other schedules): "
            f"{diffs}: {_verdict([d for _, d in lags], +1)} "
            f"({generalised(['md-uniform-inv-t'] + [a for a, _ in lags])})."
        )
    ar = compare("ar", MD_ARMS)
    if ar:
        diffs = "; ".join(_diff_text("ar", b, d) for b, d in ar)
        verdict = _verdict([d for _, d in ar], +1)
        if verdict.startswith("reversed"):
            verdict = "AR took fewer steps on average than every MD arm, the reverse of the " + (
                "paper's claim" + verdict.removeprefix("reversed")
            )
        setting = (
            "this log is the paper's setting"
            if preset == "paper"
            else f"this log is preset '{preset or 'unknown'}', and the paper's setting is the "
            "'paper' preset, n=20 and k=6"
        )
        claims.append(
            "AR against MD (paper: MD learns without AR's long plateau, so in fewer steps): "
            f"{diffs}: {verdict} ({generalised(['ar'] + [a for a, _ in ar])}; {setting})."
        )
    return tuple(claims)


def plot_curves(report: ParityReport, stem: Path) -> list[str]:
    """Learning curves, one panel per arm, one colour per seed; test solid, train dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [r.arm for r in report.arms]
    cols = min(3, len(arms))
    rows = math.ceil(len(arms) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, arm in zip(axes.flat, arms, strict=False):
        for i, run in enumerate(r for r in report.runs if r["arm"] == arm):
            colour = f"C{i % 10}"
            ax.plot(run["steps"], run["test_acc"], color=colour, label=f"seed {run['seed']} test")
            ax.plot(run["steps"], run["train_acc"], color=colour, linestyle="--", alpha=0.6)
        ax.set_title(arm)
        ax.set_ylim(0.4, 1.02)
        ax.axhline(0.99, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlabel("step")
        ax.set_ylabel("accuracy (test solid, train dashed)")
    for ax in list(axes.flat)[len(arms) :]:
        ax.axis("off")
    fig.suptitle(f"k-parity learning curves: {report.task}")
    fig.tight_layout()
    paths = [str(stem.parent / f"{stem.name}.png"), str(stem.parent / f"{stem.name}.svg")]
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths


def _fmt_steps(value: float) -> str:
    return "not reached" if math.isinf(value) else f"{value:.0f}"


def parity_tables(report: ParityReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) for the arms table and the pairs table."""
    arms = [
        [r.arm, str(r.seeds),
         f"{r.generalized.estimate:.2f} [{r.generalized.low:.2f}, {r.generalized.high:.2f}]",
         f"{_fmt_steps(r.median_steps)} [{_fmt_steps(r.median_low)}, {_fmt_steps(r.median_high)}]",
         f"{r.final_acc.estimate:.3f} [{r.final_acc.low:.3f}, {r.final_acc.high:.3f}]"]
        for r in report.arms
    ]  # fmt: skip
    pairs = [
        [p.arm_a, p.arm_b,
         f"{p.acc.estimate:+.3f} [{p.acc.low:+.3f}, {p.acc.high:+.3f}]", f"{p.p_holm_acc:.3g}",
         f"{p.steps.estimate:+.0f} [{p.steps.low:+.0f}, {p.steps.high:+.0f}]",
         f"{p.p_holm_steps:.3g}"]
        for p in report.pairs
    ]  # fmt: skip
    return [
        (
            f"k-parity {report.task}: per arm over seeds (95% intervals)",
            ["arm", "seeds", "generalised (share)", "median steps to 0.99", "final test accuracy"],
            arms,
        ),
        (
            f"k-parity {report.task}: arms paired by seed (bootstrap CI, sign-flip permutation "
            "p, Holm over pairs; a seed that never generalises counts as the full budget)",
            ["arm a", "arm b", "final acc a - b", "p (Holm)", "steps a - b", "p (Holm)"],
            pairs,
        ),
    ]
