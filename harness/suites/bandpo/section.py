"""bandpo's report section: per-arm tables, each arm against clip, the claims, the curves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from harness.sections import (
    Figure,
    Table,
    pyplot,
    runs_section,
    save_figure,
    section_view,
)
from harness.stats import Interval, PairEstimate
from harness.suites.bandpo.claims import steps_text
from harness.suites.bandpo.log_numbers import BandReport
from harness.suites.bandpo.results import build_report, load_runs

CLAIMS = (
    "The paper's claims and the spec's checks, which way each came out here (differences "
    "against clip on the same seeds, the engine's interval at the level it attains, Holm over "
    "the arms of one metric)"
)
BANDIT_GROUPS = (("iterations", "clip", "p_end"),)
RLVR_GROUPS = (
    ("mean", "pass4", "pass16", "best32", "best64"),
    ("entropy", "entropy_avg", "clip"),
    ("bin0", "bin1", "bin2", "bin3", "bin4"),
)


def _cell(ci: Interval | None, spec: str) -> str:
    return "–" if ci is None else ci.text(spec)


def _median(ci: Interval | None) -> str:
    """`7 [5, 9] (order statistics, 95.9%)`, with "not reached" for an infinite bound."""
    if ci is None:
        return "–"
    if not ci.estimable:
        return f"{steps_text(ci.estimate)} (not estimable at n = {ci.n})"
    return f"{steps_text(ci.estimate)} [{steps_text(ci.low)}, {steps_text(ci.high)}] ({ci.method})"


def _spec(key: str) -> str:
    return {"iterations": ".1f", "p_end": ".3f", "entropy": ".3f", "entropy_avg": ".3f"}.get(
        key, ".4f" if key.startswith(("bin", "clip")) else ".3f"
    )


def _pair_cell(p: PairEstimate, spec: str) -> str:
    t = p.test
    if t is None:
        return p.note or "not tested"
    ci = Interval(t.estimate, t.low, t.high, t.confidence, t.method, t.n)
    return (
        f"{ci.text('+' + spec)} ({100 * t.confidence:.1f}%)"
        if ci.estimable
        else ci.text("+" + spec)
    )


def _p(p: float) -> str:
    return "not tested" if math.isnan(p) else f"{p:.3g}"


def tables(report: BandReport) -> list[Table]:
    """The arm tables (one per group of metrics) and the pairs against clip."""
    groups = BANDIT_GROUPS if report.experiment == "bandit" else RLVR_GROUPS
    by_key = {m.key: (m, c) for m, c in zip(report.metrics, report.comparisons, strict=True)}
    out: list[Table] = []
    for group in groups:
        keys = [k for k in group if k in by_key]
        head = ["arm", "seeds", "errored"] + [by_key[k][0].label for k in keys]
        rows = []
        for arm in report.arms:
            cells = [arm.arm, str(arm.seeds), str(arm.errors)]
            for k in keys:
                est = by_key[k][1].arm(arm.arm)
                cells.append(_cell(est.interval if est else None, _spec(k)))
            if report.experiment == "bandit":
                cells += [_median(arm.median), _cell(arm.reached, ".2f")]
            rows.append(cells)
        if report.experiment == "bandit":
            head += ["median iterations (order statistics)", "reached p_best > 0.5 (Wilson)"]
        out.append((
            f"bandpo {report.experiment}, {report.label}: per clip rule, mean over the seeds that "
            "finished (95% t interval, clipped to [0, 1] for shares; an errored run is left out "
            "and counted; medians: order-statistic interval at the level it attains)",
            head, rows,
        ))  # fmt: skip
    pair_rows = []
    for metric, comp in zip(report.metrics, report.comparisons, strict=True):
        for p in comp.pairs:
            pair_rows.append([metric.label, p.arm_a, _pair_cell(p, _spec(metric.key)), _p(p.p),
                              _p(p.p_holm)])  # fmt: skip
    out.append((
        f"bandpo {report.experiment}, {report.label}: each rule − clip on the same seeds (exact "
        "sign-flip interval at the level it attains, none below 6 seeds; exact sign-flip p over "
        "all 2^n flips; from 20 seeds a paired bootstrap; Holm over the rules of one metric)",
        ["metric", "rule", "rule − clip", "p", "p (Holm)"], pair_rows,
    ))  # fmt: skip
    return out


def plot(report: BandReport, stem: Path) -> list[str]:
    """Bandit: p_best and clip fraction per iteration; RLVR: entropy and success over training.

    One line per rule, the mean over seeds, shaded between the 25th and 75th percentiles.
    """
    plt = pyplot()
    if report.experiment == "bandit":
        panels = (("p_best", "p_best (mean over seeds)"),
                  ("clip_fractions", "clip fraction per iteration"))  # fmt: skip
    else:
        panels = (("entropy", "token entropy of the sampler (nats)"),
                  ("eval_mean", "success rate on the evaluation set"))  # fmt: skip
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (key, title) in zip(axes, panels, strict=True):
        for i, arm in enumerate(a.arm for a in report.arms):
            curves = [r[key] for r in report.runs if r["arm"] == arm]
            if not curves:
                continue
            width = min(len(c) for c in curves)
            data = np.array([c[:width] for c in curves])  # (seeds, T)
            x = (report.runs[0]["eval_iterations"][:width] if key == "eval_mean"
                 else np.arange(1, width + 1))  # fmt: skip
            colour = f"C{i % 10}"
            ax.plot(x, data.mean(0), color=colour, label=arm, lw=1.2)
            low, high = np.percentile(data, [25, 75], axis=0)
            ax.fill_between(x, low, high, color=colour, alpha=0.12)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("iteration")
        if report.experiment == "bandit":
            ax.set_xlim(0, 60)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"bandpo {report.experiment}: {report.label}\nmean over seeds, shaded: "
                 "25th-75th percentile", fontsize=9)  # fmt: skip
    fig.tight_layout()
    return save_figure(fig, stem)


def _alt(report: BandReport) -> str:
    what = ("bandit: p_best and clip fraction per iteration" if report.experiment == "bandit"
            else "toy RLVR: token entropy and success rate over training")  # fmt: skip
    return what + ", one line per clip rule"


view = section_view(
    heading=lambda report: report.label,
    tables=tables,
    notes_caption=CLAIMS,
    notes=lambda report: report.claims,
    figures=[Figure(_alt, plot)],
)
SECTION = runs_section("BandPO clip rules", "bandpo", load_runs, build_report, view)
