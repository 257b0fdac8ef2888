"""The spec's acceptance checks (specs/causaldpo.md §5), each one line read off the comparisons.

1. Exact units: the library's §3 unit vectors (recomputed here).
2. Premise: DPO − SFT on OOD is negative for NDCG@10 and positive for Pop@1. The spec asks for a
   one-sided paired Wilcoxon p < 0.01; the suite never writes its own test, so the gate uses
   the engine's paired test (below 20 seeds the exact two-sided sign-flip p, which is twice the
   one-sided p in the claimed direction: a stricter gate).
3. Claimed direction: each CausalDPO arm − DPO on OOD NDCG@10 (the paper expects it positive);
   reported with its interval and p, the λ chosen on IID validation marked. The gate is only
   that it runs.
4. IID non-inferiority: each CausalDPO arm's IID NDCG@10 ≥ DPO's − 0.02, read as the lower end
   of the engine's paired interval of arm − DPO; below 6 seeds there is none, and it says so.
5. Clustering sanity: the ARI of the SFT model's hard clusters against the true environments;
   expected ≥ 0.3 (the spec's guess, not tuned).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.stats import PairEstimate
from harness.suites.causaldpo.units import unit_checks

if TYPE_CHECKING:
    from harness.suites.causaldpo.results import CausalReport

PREMISE_P = 0.01  # the spec's gate
MARGIN = 0.02  # the non-inferiority margin on IID NDCG@10


def _p(p: float) -> str:
    return "not tested" if math.isnan(p) else f"{p:.3g}"


def diff_text(p: PairEstimate | None, spec: str = "+.4f") -> str:
    """`+0.012 [+0.004, +0.020] (97.9%), p 0.004, Holm p 0.02`, or why there is none."""
    if p is None:
        return "not run"
    t = p.test
    if t is None:
        return p.note or "not tested (fewer than two shared seeds)"
    ci = (
        f"[{format(t.low, spec)}, {format(t.high, spec)}] ({100 * t.confidence:.1f}%)"
        if not math.isnan(t.low)
        else f"(no 95% interval at n = {t.n})"
    )
    return f"{format(t.estimate, spec)} {ci}, p {_p(t.p_value)}, Holm p {_p(p.p_holm)}"


def _seeds(report: CausalReport, a: str, b: str, key: str) -> str:
    xa, xb = report.per_seed(a, key), report.per_seed(b, key)
    return ", ".join(f"{xa[s] - xb[s]:+.3f}" for s in sorted(set(xa) & set(xb)))


def _pair(report: CausalReport, key: str, a: str, b: str) -> PairEstimate | None:
    comp = report.comparison(key)
    return comp.pair(a, b) if comp is not None else None


def claims_of(report: CausalReport) -> tuple[str, ...]:
    """One line per acceptance check."""
    arms = [a.arm for a in report.arms]
    units = unit_checks()
    bad = [u.name for u in units if not u.ok]
    out = [
        f"Check 1, exact units: {'pass' if not bad else 'FAIL'} ({len(units) - len(bad)} of "
        f"{len(units)} within tolerance{'; failed: ' + ', '.join(bad) if bad else ''})."
    ]
    if "dpo" in arms and "sft" in arms:
        parts, ok = [], True
        for key, sign, what in (("ood_ndcg10", -1, "OOD NDCG@10"), ("ood_pop1", +1, "OOD Pop@1")):
            p = _pair(report, key, "dpo", "sft")
            t = p.test if p is not None else None
            met = t is not None and math.copysign(1, t.estimate) == sign and t.estimate != 0
            met = met and t is not None and t.p_value < PREMISE_P
            ok = ok and met
            parts.append(
                f"{what} DPO − SFT {diff_text(p)} (per seed {_seeds(report, 'dpo', 'sft', key)})"
            )
        out.append(
            f"Check 2, premise (DPO lowers OOD NDCG@10 and raises OOD Pop@1, engine p < "
            f"{PREMISE_P:g}): {'met' if ok else 'NOT met'}: " + "; ".join(parts) + "."
        )
    causal = [a for a in arms if a.startswith("causaldpo")]
    if "dpo" in arms and causal:
        lines = []
        for arm in causal:
            mark = " (λ chosen on IID val)" if arm == report.selected else ""
            p = _pair(report, "ood_ndcg10", arm, "dpo")
            t = p.test if p is not None else None
            way = "–" if t is None else "positive" if t.estimate > 0 else "not positive"
            lines.append(
                f"{arm}{mark} − DPO {diff_text(p)}, {way} (per seed "
                f"{_seeds(report, arm, 'dpo', 'ood_ndcg10')})"
            )
        out.append(
            "Check 3, claimed direction (CausalDPO − DPO on OOD NDCG@10; the paper expects "
            "a gain, the prototype none; reported, not gated): " + "; ".join(lines) + "."
        )
        others = [a for a in ("sdpo", "irm-oracle") if a in arms]
        if others:
            out.append(
                "Baselines − DPO on OOD NDCG@10: "
                + "; ".join(
                    f"{a} {diff_text(_pair(report, 'ood_ndcg10', a, 'dpo'))}" for a in others
                )
                + "."
            )
        verdicts = []
        for arm in causal:
            p = _pair(report, "iid_ndcg10", arm, "dpo")
            t = p.test if p is not None else None
            if t is None or math.isnan(t.low):
                v = "not decided"
            else:
                v = "pass" if t.low >= -MARGIN else "FAIL"
            verdicts.append(f"{arm}: {v}, {diff_text(p)}")
        out.append(
            f"Check 4, IID non-inferiority (lower end of arm − DPO on IID NDCG@10 ≥ "
            f"−{MARGIN:g}): " + "; ".join(verdicts) + "."
        )
    if report.ari:
        values = [v for _, v in report.ari]
        mean = sum(values) / len(values)
        out.append(
            f"Check 5, clustering sanity (ARI of the SFT model's k-means clusters vs the "
            f"true environments, expected ≥ 0.3): {'met' if mean >= 0.3 else 'NOT met'}, "
            f"mean {mean:.3f} (per seed {', '.join(f'{v:.3f}' for v in values)})."
        )
    return tuple(out)
