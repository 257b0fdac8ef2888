"""The paper's claims, and the spec's acceptance checks, read off one log's comparisons.

Each claim is one line: the differences against clip (or BandKL against its relaxed form) with
their intervals and Holm p, and which way they came out: "same direction as the paper",
"reversed", or how many of each; "significant" means Holm p <= the design's alpha
(`harness.stats._design.rejects`). The wording and grouping are ours.

Bandit (specs/bandpo.md §5.2): BandKL's mean iterations to p_best > 0.5 at most 0.7x clip's
(a run that never got there counts as the budget), and a lower clip fraction than clip.
RLVR (§5.3, not a hard gate): the band rules beat clip on mean@n and pass@k, keep a higher
token entropy, clip fewer tokens of old probability below 0.2; relaxing the band hurts; the
start policy's success rate lies in 10-30%.
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats import PairEstimate, pair_family, rejects
from harness.suites.bandpo.arms import BASELINE
from harness.suites.bandpo.log_numbers import BandReport, comparison

BANDKL = ("bandkl-0.05", "bandkl")  # the authors' setting, by either name


def steps_text(value: float) -> str:
    """Iterations; "not reached" for an infinite median (half the seeds never got there)."""
    if math.isnan(value):
        return "–"
    return "not reached" if math.isinf(value) else f"{value:g}"


def _p(p: float) -> str:
    return "not tested" if math.isnan(p) else f"{p:.2g}"


def diff_text(p: PairEstimate, spec: str = "+.3g") -> str:
    """`a − b +0.12 [+0.05, +0.20] (96.9%), Holm p 0.03`, or why there is no interval."""
    t = p.test
    if t is None:
        return f"{p.arm_a} − {p.arm_b}: {p.note or 'not tested'}"
    ci = (f"[{format(t.low, spec)}, {format(t.high, spec)}] ({100 * t.confidence:.1f}%)"
          if not math.isnan(t.low) else f"(no 95% interval at n = {t.n})")  # fmt: skip
    return f"{p.arm_a} − {p.arm_b} {format(t.estimate, spec)} {ci}, Holm p {_p(p.p_holm)}"


def verdict(pairs: list[PairEstimate], claimed: int, alpha: float) -> str:
    """Which way the differences came out against the claimed sign (+1: a above b)."""
    tested = [p for p in pairs if p.test is not None]
    if not tested:
        return "not tested (fewer than two shared seeds)"
    signs = [int(np.sign(p.test.estimate)) for p in tested if p.test is not None]
    agree, against = signs.count(claimed), signs.count(-claimed)
    if agree == len(signs):
        way = "same direction as the paper"
    elif against == len(signs):
        way = "reversed"
    else:
        parts = [("same direction as the paper", agree), ("reversed", against),
                 ("level", len(signs) - agree - against)]  # fmt: skip
        way = ", ".join(f"{name} in {n} of {len(signs)}" for name, n in parts if n)
    sig = [p for p in tested if rejects(p.p_holm, alpha)]
    agree_sig = sum(int(np.sign(p.test.estimate)) == claimed for p in sig if p.test is not None)
    if not sig:
        return f"{way}; not significant"
    return f"{way}; significant in {len(sig)} of {len(tested)} ({agree_sig} in the claimed way)"


def _pairs(report: BandReport, key: str, arms: list[str]) -> list[PairEstimate]:
    comp = comparison(report, key)
    if comp is None:
        return []
    found = [comp.pair(a, BASELINE) for a in arms]
    return [p for p in found if p is not None]


def _arm_mean(report: BandReport, key: str, arm: str) -> float:
    comp = comparison(report, key)
    est = comp.arm(arm) if comp is not None else None
    return est.interval.estimate if est is not None else math.nan


def claims_of(report: BandReport) -> tuple[str, ...]:
    """The claims' lines for this log."""
    arms = [a.arm for a in report.arms]
    if report.experiment == "bandit":
        return _bandit(report, arms)
    return _rlvr(report, arms)


def _bandit(report: BandReport, arms: list[str]) -> tuple[str, ...]:
    alpha = report.comparisons[0].design.alpha if report.comparisons else 0.05
    lr = report.settings.get("lr", "?")
    kl = next((a for a in BANDKL if a in arms), None)
    out = []
    if kl and BASELINE in arms:
        ours, base = _arm_mean(report, "iterations", kl), _arm_mean(report, "iterations", BASELINE)
        ratio = ours / base if base else math.nan
        never = {a.arm: a.seeds - a.errors - round(a.reached.estimate * a.seeds)
                 for a in report.arms if a.reached is not None}  # fmt: skip
        med = {a.arm: a.median.estimate for a in report.arms if a.median is not None}
        (it,) = _pairs(report, "iterations", [kl]) or [None]
        pair = f"; {diff_text(it, '+.1f')}" if it is not None else ""
        ok = "met" if ratio <= 0.7 else "NOT met"
        medians = " vs ".join(steps_text(med.get(a, math.nan)) for a in (kl, BASELINE))
        out.append(
            f"Spec §5.2 at lr {lr}: {kl} mean iterations to p_best > 0.5 ≤ 0.7× clip's: {ok} "
            f"({ours:.1f} vs {base:.1f}, ratio {ratio:.2f}; medians {medians}; seeds that "
            f"never reached it: {never.get(kl, 0)} vs {never.get(BASELINE, 0)}, counted as the "
            f"budget{pair})."
        )
        (cf,) = _pairs(report, "clip", [kl]) or [None]
        if cf is not None:
            lower = cf.test is not None and cf.test.estimate < 0
            out.append(
                f"Spec §5.2: {kl} clips less than clip: {'met' if lower else 'NOT met'} "
                f"({diff_text(cf, '+.4f')}: {verdict([cf], -1, alpha)})."
            )
    bands = [a for a in arms if a.startswith("band") and "relax" not in a]
    pairs = _pairs(report, "iterations", bands)
    if pairs:
        out.append(
            "Band rules reach p_best > 0.5 in fewer iterations than clip (paper: the band lets "
            "a tail action grow faster): "
            + "; ".join(diff_text(p, "+.1f") for p in pairs)
            + f": {verdict(pairs, -1, alpha)}."
        )
    return tuple(out)


def _rlvr(report: BandReport, arms: list[str]) -> tuple[str, ...]:
    alpha = report.comparisons[0].design.alpha if report.comparisons else 0.05
    bands = [a for a in arms if a.startswith("band") and "relax" not in a]
    out = []
    passes = [m.key for m in report.metrics if m.key.startswith("pass")]
    for key, label, claimed, what in (
        ("mean", report.metrics[0].label, +1, "BandPO beats GRPO (clip) on mean@k"),
        (passes[-1] if passes else "", "largest pass@k", +1, "BandPO beats clip on pass@k"),
        ("entropy", "final token entropy", +1, "the band slows entropy collapse"),
        ("bin0", "clip fraction for old p < 0.2", -1, "the band clips fewer tail tokens"),
    ):
        pairs = _pairs(report, key, bands)
        if pairs:
            spec = "+.4f" if key.startswith("bin") else "+.3f"
            out.append(f"{label} (paper: {what}): " + "; ".join(diff_text(p, spec) for p in pairs)
                       + f": {verdict(pairs, claimed, alpha)}.")  # fmt: skip
    kl = next((a for a in BANDKL if a in arms), None)
    if kl and "bandkl-relax" in arms:
        comp = comparison(report, "mean")
        if comp is not None:
            scores = {a: {} for a in (kl, "bandkl-relax")}
            for r in report.runs:
                if r["arm"] in scores:
                    scores[r["arm"]][str(r["seed"])] = float(r["final_mean"])
            (p,) = pair_family(comp.design, [("bandkl-relax", kl, scores["bandkl-relax"],
                                              scores[kl])])  # fmt: skip
            out.append(f"{report.metrics[0].label}, relaxed band (paper: relaxing the band "
                       f"hurts): {diff_text(p, '+.3f')} (a family of its own): "
                       f"{verdict([p], -1, alpha)}.")  # fmt: skip
    starts = [float(r["start_mean"]) for r in report.runs]
    if starts:
        inside = sum(0.10 <= s <= 0.30 for s in starts)
        out.append(f"Start success rate (spec §5.3: 10-30%): {min(starts):.3f} to "
                   f"{max(starts):.3f} over {len(starts)} runs, {inside} inside.")  # fmt: skip
    return tuple(out)
