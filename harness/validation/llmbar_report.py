"""Validate the calibrated judge on LLMBar's real verdicts; writes docs/validation/llmbar.md.

Run: `python -m harness.validation.llmbar_report --data-dir ../shared/data`

Two experiments, each a repeated random stratified calibration draw (without replacement) with the
rest of the items as the test set; the target is the human preference rate of those test items.

1. Per subset x judge, for every pair whose Youden J on the whole subset exceeds 0.2: m0 = m1 =
   min(25, a third of the smaller class) calibration items (ours: small subsets cannot spare
   more). Reported: coverage and mean width of the Rogan-Gladen interval, of the naive Wilson
   interval on the judge's raw share, and of PPI with the calibration draw as its labelled set,
   plus how often the guard refused (judge no better than chance on the draw).
2. The spec's replay (specs/calibrated-judge.md §5 item 5): the Processed_* subsets pooled per
   judge, m0 = m1 = 50, 4,000 splits; the spec observed coverage 0.964-0.973.

PPI assumes its labelled set is an iid draw from the test distribution. A stratified calibration
draw is a prior shift, so PPI's coverage here shows what that assumption costs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.stats import CalibrationError, ppi_mean, rogan_gladen, wilson
from harness.validation.llmbar_data import JUDGES, SUBSETS, JudgeVerdicts, load_llmbar


@dataclass(frozen=True)
class CellResult:
    """Coverage and width of three intervals over repeated calibration draws."""

    label: str  # subset and judge
    n_items: int  # items in the pool
    m: int  # calibration items per class
    youden_j: float  # J on the whole pool
    draws: int  # calibration draws made
    refused: int  # draws where the guard refused (no interval)
    rg_coverage: float  # Rogan-Gladen coverage over the draws it answered
    rg_width: float  # its mean width
    rg_bias: float  # mean estimate minus target
    naive_coverage: float  # Wilson on the judge's raw share
    naive_width: float
    ppi_coverage: float  # PPI with the calibration draw as labelled data
    ppi_width: float


def youden(v: JudgeVerdicts) -> float:
    """J = q0 + q1 - 1 on all items."""
    z, zh = v.human, v.judge_verdict
    return float(((zh == 0) & (z == 0)).sum() / (z == 0).sum() + (zh[z == 1]).mean() - 1)


def replay(
    label: str, human: np.ndarray, verdict: np.ndarray, m: int, draws: int, seed: int
) -> CellResult:
    """Repeat stratified calibration draws of m per class; score three intervals on the rest."""
    rng = np.random.default_rng(seed)
    idx0, idx1 = np.flatnonzero(human == 0), np.flatnonzero(human == 1)
    stats = {k: [] for k in ("rg_cov", "rg_w", "rg_err", "nv_cov", "nv_w", "pp_cov", "pp_w")}
    refused = 0
    for _ in range(draws):
        calib = np.concatenate(
            [rng.choice(idx0, m, replace=False), rng.choice(idx1, m, replace=False)]
        )
        test = np.setdiff1d(np.arange(len(human)), calib)
        target = human[test].mean()
        zt = verdict[test]
        zc, hc = verdict[calib], human[calib]
        naive = wilson(int(zt.sum()), len(zt))
        stats["nv_cov"].append(naive.low <= target <= naive.high)
        stats["nv_w"].append(naive.high - naive.low)
        pp = ppi_mean(hc, zc, zt)
        stats["pp_cov"].append(pp.low <= target <= pp.high)
        stats["pp_w"].append(pp.high - pp.low)
        try:
            est = rogan_gladen(
                zt.mean(), len(zt), (zc[hc == 0] == 0).mean(), zc[hc == 1].mean(), m, m
            )
        except CalibrationError:
            refused += 1
            continue
        stats["rg_cov"].append(est.low <= target <= est.high)
        stats["rg_w"].append(est.high - est.low)
        stats["rg_err"].append(est.estimate - target)

    def mean(key: str) -> float:
        return float(np.mean(stats[key])) if stats[key] else float("nan")

    j = float(
        ((verdict == 0) & (human == 0)).sum() / (human == 0).sum() + verdict[human == 1].mean() - 1
    )
    return CellResult(
        label, len(human), m, j, draws, refused,
        mean("rg_cov"), mean("rg_w"), mean("rg_err"),
        mean("nv_cov"), mean("nv_w"), mean("pp_cov"), mean("pp_w"),
    )  # fmt: skip


def per_subset(data_dir: str | None, draws: int, seed: int) -> list[CellResult]:
    """Experiment 1: every subset x judge with J > 0.2."""
    out = []
    for s_i, subset in enumerate(SUBSETS):
        for j_i, judge in enumerate(JUDGES):
            v = load_llmbar(subset, judge, data_dir)
            if youden(v) <= 0.2:
                continue
            small = min(int((v.human == 0).sum()), int((v.human == 1).sum()))
            m = min(25, small // 3)
            out.append(
                replay(f"{subset} / {judge}", v.human, v.judge_verdict, m, draws,
                       seed + 100 * s_i + j_i)
            )  # fmt: skip
    return out


def pooled(data_dir: str | None, draws: int, seed: int) -> list[CellResult]:
    """Experiment 2: the Processed_* subsets pooled per judge, m0 = m1 = 50."""
    out = []
    for j_i, judge in enumerate(JUDGES):
        parts = [load_llmbar(s, judge, data_dir) for s in SUBSETS if s.startswith("Processed_")]
        human = np.concatenate([p.human for p in parts])
        verdict = np.concatenate([p.judge_verdict for p in parts])
        out.append(replay(f"Processed_* pooled / {judge}", human, verdict, 50, draws, seed + j_i))
    return out


def to_markdown(rows: list[CellResult]) -> str:
    """One table row per cell."""
    head = (
        "| pool / judge | items | m per class | J | draws | refused | RG coverage | RG width | "
        "RG bias | naive coverage | naive width | PPI coverage | PPI width |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.label} | {r.n_items} | {r.m} | {r.youden_j:.3f} | {r.draws} | {r.refused} | "
        f"{r.rg_coverage:.3f} | {r.rg_width:.3f} | {r.rg_bias:+.4f} | {r.naive_coverage:.3f} | "
        f"{r.naive_width:.3f} | {r.ppi_coverage:.3f} | {r.ppi_width:.3f} |\n"
        for r in rows
    )
    return head + body


def main() -> None:
    """Write the validation page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--pooled-draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", default="docs/validation/llmbar.md")
    args = parser.parse_args()
    cells = per_subset(args.data_dir, args.draws, args.seed)
    pools = pooled(args.data_dir, args.pooled_draws, args.seed)
    command = (
        "python -m harness.validation.llmbar_report --data-dir ../shared/data "
        f"--draws {args.draws} --pooled-draws {args.pooled_draws} --seed {args.seed}"
    )
    text = f"""# Calibrated judge on LLMBar: coverage on real verdicts

Written by `{command}`; do not edit by hand.

Binary mapping (ours): Z = [gold label == 1], judge verdict = [winner == 1] in the unswapped
order, null verdicts count as 0. Target: the human preference rate of the test items of each draw.
Nominal coverage 95%. "refused" counts draws where the judge was no better than chance on the
calibration draw, so the Rogan-Gladen guard gave no number; RG coverage is over the other draws.
Naive is the Wilson interval on the judge's raw share; PPI uses the calibration draw as its
labelled set (it assumes that set is iid from the test items, which a stratified draw is not).

## 1. Each subset x judge with J > 0.2 (m0 = m1 = min(25, a third of the smaller class))

{to_markdown(cells)}
## 2. Processed_* pooled per judge, m0 = m1 = 50 (specs/calibrated-judge.md §5 item 5)

The spec observed Rogan-Gladen coverage 0.964-0.973 and a mean error within ±0.012.

{to_markdown(pools)}"""
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
