"""causaldpo's report section: arms per split, each arm against DPO, the checks, IID against OOD."""

from __future__ import annotations

import math

from harness.sections import Table, png_figure, runs_section, section_view
from harness.stats import PairEstimate
from harness.suites.causaldpo.results import (
    BASELINE,
    KINDS,
    SPLITS,
    CausalReport,
    build_report,
    load_runs,
    plot_iid_ood,
)

CHECKS = (
    "Acceptance checks (specs/causaldpo.md §5): differences against DPO on the same seeds, the "
    "engine's interval at the level it attains and its p (exact sign-flip, two-sided, below 20 "
    "seeds), Holm over the arms of one split and metric"
)


def _pair_cell(p: PairEstimate | None) -> str:
    if p is None:
        return "–"
    t = p.test
    if t is None:
        return p.note or "not tested"
    if math.isnan(t.low):
        return f"{t.estimate:+.4f} (not estimable at n = {t.n}), p {t.p_value:.3g}"
    return f"{t.estimate:+.4f} [{t.low:+.4f}, {t.high:+.4f}] ({100 * t.confidence:.1f}%), " + (
        f"Holm p {p.p_holm:.3g}" if not math.isnan(p.p_holm) else "not tested"
    )


def tables(report: CausalReport) -> list[Table]:
    """One table per metric (arms by split), and arm − DPO per split for NDCG@10 and Pop@1."""
    out: list[Table] = []
    for kind, label in KINDS:
        head = ["arm", "seeds", "errored"] + [name for _, name in SPLITS]
        rows = []
        for arm in report.arms:
            cells = [arm.arm, str(arm.seeds), str(arm.errors)]
            for split, _ in SPLITS:
                comp = report.comparison(f"{split}_{kind}")
                est = comp.arm(arm.arm) if comp is not None else None
                cells.append("–" if est is None else est.interval.text(".4f"))
            rows.append(cells)
        better = "lower" if kind in ("pop1", "orr10") else "higher"
        out.append((f"CausalDPO (reconstructed), {report.label}: {label} per arm and split, mean "
                    f"over the seeds that finished (95% t, clipped to [0, 1]; {better} is "
                    "better; an errored run is left out and counted)", head, rows))  # fmt: skip
    for kind, label in (("ndcg10", "NDCG@10"), ("pop1", "Pop@1")):
        head = ["arm"] + [f"{name}: arm − DPO" for split, name in SPLITS if split != "val"]
        rows = []
        for arm in report.arms:
            if arm.arm == BASELINE:
                continue
            cells = [arm.arm]
            for split, _ in SPLITS[1:]:
                comp = report.comparison(f"{split}_{kind}")
                cells.append(_pair_cell(comp.pair(arm.arm, BASELINE) if comp else None))
            rows.append(cells)
        out.append((f"CausalDPO (reconstructed), {report.label}: {label}, arm − DPO on the same "
                    "seeds (exact sign-flip interval at the level it attains, none below 6 "
                    "seeds; Holm over the arms of one split)", head, rows))  # fmt: skip
    return out


view = section_view(
    heading=lambda report: report.label,
    tables=tables,
    notes_caption=CHECKS,
    notes=lambda report: report.claims,
    figures=[png_figure("IID against OOD NDCG@10 per arm, and OOD Pop@1 against OOD NDCG@10",
                        plot_iid_ood)],
)  # fmt: skip
SECTION = runs_section("CausalDPO (reconstructed)", "causaldpo", load_runs, build_report, view)
