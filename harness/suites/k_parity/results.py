"""The k-parity part of `harness report`: per-arm statistics and learning-curve plots.

Per arm, over its seeds (3 or 4 in the presets):
- the seeds whose run errored: counted, and counted as not generalised (an error counts as
  wrong), so they enter the share, the median (as "not reached") and the steps pairs (as the
  budget); the final accuracy, a continuous score, leaves them out and the table counts them;
- the share of seeds that generalise (test accuracy >= 0.99 within budget), Wilson interval;
- the median steps to generalise, with the order-statistic interval for a median: exact for any
  distribution, at the level it attains (99.2% at 8 seeds, 96.9% at 6), and "not estimable"
  below 6 seeds, where no pair of order statistics covers 95%. A seed that never generalises
  counts as "not reached" (infinite), so the median is "not reached" when half or more seeds
  never get there (ours: censoring rule);
- the final test accuracy, t interval over seeds;
- paired comparisons between arms on the same seeds (final accuracy, and steps with a seed
  that never generalises set to the budget), from the comparison engine
  (`harness.stats._compare`, the suite's design: unit seed), one Holm family per metric. Below
  20 seeds that is the exact sign-flip interval for the mean difference and the exact sign-flip
  p-value (all 2**n flips); the interval inverts the same test, so they agree. 3 seeds allow
  only 8 sign patterns, so no p is below 0.25 and no 95% interval exists: the table says "not
  estimable at n = 3" rather than print the [min, max] a bootstrap gives, which covers about
  75%.

Then the paper's two claims in plain words, read off those paired step differences (ours: the
wording and the thresholds; "significant": Holm p <= alpha, `harness.stats._design.rejects`,
at the design's alpha 0.05): whether `md-optimal` and
`md-fixed` generalise in fewer steps than unweighted `md-uniform` and `md-uniform-inv-t` lags
all of them; and which way AR against MD came out, with the preset the log ran, since the
paper's setting is the `paper` preset.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import load_training_runs
from harness.sections import pyplot, save_figure
from harness.stats import (
    POSITIVE,
    Interval,
    PairedTest,
    estimate,
    median_interval,
    pair_family,
    rejects,
)
from harness.suites.catalog import suite_of_task

# unit: seed; final accuracy is bounded in [0, 1]
DESIGN = suite_of_task(f"{__package__}.task:k_parity").design
STEPS = dataclasses.replace(DESIGN, score="unbounded", bounds=POSITIVE, direction="lower")
SHARE = dataclasses.replace(DESIGN, score="binary")  # generalised or not, per seed


@dataclass(frozen=True)
class ArmRow:
    """One arm's statistics over seeds."""

    arm: str  # arm name
    seeds: int  # runs, errored ones included
    generalized: Interval  # share of seeds reaching 0.99 (errored: not), Wilson
    median_steps: float  # median steps to generalise (inf: not reached)
    median_low: float  # order-statistic interval of the median; nan: not estimable
    median_high: float
    final_acc: Interval  # final test accuracy over the finished runs, t interval clipped
    median: Interval  # the median's interval, with its method and attained level
    errors: int = 0  # runs that errored (counted as not generalised)


@dataclass(frozen=True)
class ArmPair:
    """Two arms on the same seeds."""

    arm_a: str
    arm_b: str
    acc: PairedTest | None  # final accuracy a - b (engine; nan interval: not estimable)
    steps: PairedTest | None  # steps to generalise a - b (never, or errored = budget), likewise
    p_holm_acc: float  # Holm over the log's pairs; nan: not tested
    p_holm_steps: float


@dataclass(frozen=True)
class ParityReport:
    """The k-parity section of a report."""

    task: str  # task label (preset)
    arms: tuple[ArmRow, ...]
    pairs: tuple[ArmPair, ...]
    runs: tuple[dict[str, Any], ...]  # per run: arm, seed, steps, ...; or arm, seed, error
    claims: tuple[str, ...] = ()  # the paper's claims, which way each came out here


def load_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample run results (arm, seed, curves) from a k-parity log."""
    return [{**r, "seed": int(r["seed"])} for r in load_training_runs(location, ("arm", "seed"))]


def _steps(run: dict[str, Any], budget: float) -> float:
    """Steps to generalise; a run that never did, or errored, counts as the budget."""
    if "error" in run:
        return budget
    return float(run["steps_to_generalize"] or run["steps"][-1])


def build_parity_report(
    task: str, runs: list[dict[str, Any]], preset: str | None = None
) -> ParityReport:
    """Per-arm rows, Holm-corrected paired comparisons between arms, and the claims' outcome."""
    arms: dict[str, list[dict[str, Any]]] = {}
    for run in sorted(runs, key=lambda r: (r["arm"], r["seed"])):
        arms.setdefault(run["arm"], []).append(run)
    finished = [r for r in runs if "error" not in r]
    budget = max((float(r["steps"][-1]) for r in finished), default=math.nan)
    rows = []
    for arm, arm_runs in arms.items():
        hits = [None if "error" in r else r["steps_to_generalize"] for r in arm_runs]
        steps = np.array([math.inf if h is None else h for h in hits], dtype=float)
        median = median_interval(steps)
        done = [r["final_test_acc"] for r in arm_runs if "error" not in r]
        rows.append(
            ArmRow(
                arm=arm,
                seeds=len(arm_runs),
                generalized=estimate(SHARE, [float(h is not None) for h in hits]),
                median_steps=median.estimate,
                median_low=median.low,
                median_high=median.high,
                final_acc=estimate(DESIGN, done),
                median=median,
                errors=len(arm_runs) - len(done),
            )
        )
    names = list(combinations(sorted(arms), 2))
    acc = {a: {str(r["seed"]): r["final_test_acc"] for r in rs if "error" not in r}
           for a, rs in arms.items()}  # fmt: skip
    steps_by = {a: {str(r["seed"]): _steps(r, budget) for r in rs} for a, rs in arms.items()}
    p_acc = pair_family(DESIGN, [(a, b, acc[a], acc[b]) for a, b in names])
    p_steps = pair_family(STEPS, [(a, b, steps_by[a], steps_by[b]) for a, b in names])
    pairs = [
        ArmPair(a, b, pa.test, ps.test, pa.p_holm, ps.p_holm)
        for (a, b), pa, ps in zip(names, p_acc, p_steps, strict=True)
        if pa.test is not None or ps.test is not None
    ]
    return ParityReport(task, tuple(rows), tuple(pairs), tuple(runs), _claims(pairs, rows, preset))


ALPHA = DESIGN.alpha  # Holm-adjusted p at or below this reads "significant"
MD_ARMS = ("md-optimal", "md-fixed", "md-uniform", "md-uniform-inv-t")


Diff = tuple[float, float, float, float, int]  # estimate, low, high, Holm p, seeds


def _steps_diff(pairs: list[ArmPair], a: str, b: str) -> Diff | None:
    """Steps a - b (estimate, low, high), its Holm p and n, whichever way the pair was stored."""
    for p in pairs:
        s = p.steps
        if s is None:
            continue
        if (p.arm_a, p.arm_b) == (a, b):
            return s.estimate, s.low, s.high, p.p_holm_steps, s.n
        if (p.arm_a, p.arm_b) == (b, a):  # 0.0 - x: no "-0" for a zero difference
            return 0.0 - s.estimate, 0.0 - s.high, 0.0 - s.low, p.p_holm_steps, s.n
    return None


def _p_text(p: float, spec: str = ".2g") -> str:
    return "not tested" if math.isnan(p) else format(p, spec)


def _diff_text(a: str, b: str, diff: Diff) -> str:
    est, low, high, p, n = diff
    ci = f"[{low:+.0f}, {high:+.0f}]" if not math.isnan(low) else f"(no 95% interval at n = {n})"
    return f"{a} − {b} {est:+.0f} {ci} steps, Holm p {_p_text(p)}"


def _verdict(diffs: list[Diff], claimed: int) -> str:
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
    significant = sum(rejects(d[3], ALPHA) for d in diffs)  # nan (not tested) never is
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
    plt = pyplot()
    arms = [r.arm for r in report.arms]
    cols = min(3, len(arms))
    rows = math.ceil(len(arms) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, arm in zip(axes.flat, arms, strict=False):
        for i, run in enumerate(r for r in report.runs if r["arm"] == arm and "error" not in r):
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
    return save_figure(fig, stem)


def _fmt_steps(value: float) -> str:
    return "not reached" if math.isinf(value) else f"{value:.0f}"


def _median_text(ci: Interval) -> str:
    """`450 [400, 600] (order statistics, 99.2%, conservative)`, or why there is no interval."""
    if not ci.estimable:
        return f"{_fmt_steps(ci.estimate)} (not estimable at n = {ci.n})"
    bounds = f"[{_fmt_steps(ci.low)}, {_fmt_steps(ci.high)}]"
    return f"{_fmt_steps(ci.estimate)} {bounds} ({ci.method})"


def _diff_cell(t: PairedTest | None, spec: str) -> str:
    """The difference with its exact sign-flip interval and attained level, or "not estimable"."""
    if t is None:
        return "not tested (fewer than two shared seeds)"
    ci = Interval(t.estimate, t.low, t.high, t.confidence, t.method, t.n)
    if not ci.estimable:
        return ci.text(spec)
    return f"{ci.text(spec)} ({100 * t.confidence:.1f}%)"


def parity_tables(report: ParityReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) for the arms table and the pairs table."""
    arms = [
        [r.arm, str(r.seeds), str(r.errors), r.generalized.text(".2f"), _median_text(r.median),
         r.final_acc.text(".3f")]
        for r in report.arms
    ]  # fmt: skip
    pairs = [
        [p.arm_a, p.arm_b, _diff_cell(p.acc, "+.3f"), _p_text(p.p_holm_acc, ".3g"),
         _diff_cell(p.steps, "+.0f"), _p_text(p.p_holm_steps, ".3g")]
        for p in report.pairs
    ]  # fmt: skip
    return [
        (
            f"k-parity {report.task}: per arm over seeds (generalised: Wilson 95%; median: "
            "order-statistic interval, exact, at the level it attains, not estimable below 6 "
            "seeds; final accuracy: t 95%, clipped to [0, 1], over the runs that finished; an "
            "errored run counts as not generalised)",
            ["arm", "seeds", "errored", "generalised (share, Wilson)",
             "median steps to 0.99 (order stats)", "final test accuracy (t)"],
            arms,
        ),
        (
            f"k-parity {report.task}: arms paired by seed (exact sign-flip interval for the mean "
            "difference at the level it attains, not estimable below 6 seeds; exact sign-flip "
            "p over all 2^n flips (from 20 seeds: paired bootstrap), Holm over pairs; a seed "
            "that never generalises, or errored, counts as the full budget)",
            ["arm a", "arm b", "final acc a - b (sign-flip)", "p (Holm)",
             "steps a - b (sign-flip)", "p (Holm)"],
            pairs,
        ),
    ]  # fmt: skip
