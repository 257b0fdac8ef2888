"""The TEAM section of `harness report`: metrics per variant, and ratios against vanilla.

For each `team` log:
- per variant: exact match (Wilson interval over prompts) and mean TPF, APF and APT (t intervals
  over prompts), plus the KV-commit-inclusive TPF and the share of masked rows that were cold;
- per variant against vanilla, paired on the same (seed, prompt): the exact-match difference
  (Agresti-Min interval, exact McNemar p, as for every 0/1 pair in the report) and the ratios
  mean(variant) / mean(vanilla) of TPF, APF and APT with paired-bootstrap percentile intervals
  (prompts resampled, both variants together);
- the spec's behaviour check (specs/team.md §5, check 5), each line saying what came out.
Seeds are pooled as prompts; with several seeds the intervals ignore the clustering by seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.stats.intervals import Interval, t_interval, wilson
from harness.stats.paired import PairedTest, mcnemar

METRICS = ("tpf", "apf", "apt")


@dataclass(frozen=True)
class VariantRow:
    """One variant's metrics over its prompts."""

    variant: str
    n: int  # prompts (over all seeds)
    seeds: int
    exact: Interval  # exact match, Wilson
    tpf: Interval  # t intervals over prompts
    apf: Interval
    apt: Interval
    tpf_with_commits: float  # mean, KV commits counted as forwards
    cold_share: float  # mean share of masked rows that were cold


@dataclass(frozen=True)
class Ratio:
    """mean(variant) / mean(vanilla) of a metric, paired over prompts."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class VariantPair:
    """A variant against vanilla on the same prompts."""

    variant: str
    n: int
    exact_diff: PairedTest  # exact match, variant - vanilla: McNemar exact, Agresti-Min interval
    ratios: dict[str, Ratio]  # tpf, apf, apt


@dataclass(frozen=True)
class TeamReport:
    """One team log's tables and checks."""

    label: str
    rows: tuple[VariantRow, ...]
    pairs: tuple[VariantPair, ...]
    checks: tuple[str, ...]


def load_team_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample records of a team log: variant, seed, prompt, task, correct and the counts."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(location)
    runs = []
    for s in log.samples or []:
        score = next(iter((s.scores or {}).values()), None)
        if score is None or "tpf" not in (score.metadata or {}):
            continue  # errored or not decoded
        runs.append({**score.metadata, "correct": score.value == "C"})
    return runs


def _ratio(a: np.ndarray, b: np.ndarray, seed: int = 0, n: int = 5000) -> Ratio:
    est = float(a.mean() / b.mean())
    if len(a) < 2:
        return Ratio(est, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n, len(a)))
    boot = a[idx].mean(1) / b[idx].mean(1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return Ratio(est, float(low), float(high))


def build_team_report(label: str, runs: list[dict[str, Any]]) -> TeamReport:
    """Rows, pairs against vanilla, and the behaviour check."""
    from harness.models.team.decode import VARIANTS

    order = {v: i for i, v in enumerate(VARIANTS)}  # vanilla first, then TEAM, then ablations
    by_variant: dict[str, dict[tuple[int, int], dict]] = {}
    for r in sorted(runs, key=lambda r: (order.get(r["variant"], len(order)), r["variant"])):
        by_variant.setdefault(r["variant"], {})[(r["seed"], r["prompt_id"])] = r
    rows = []
    for variant, items in by_variant.items():
        rs = list(items.values())
        rows.append(VariantRow(
            variant, len(rs), len({r["seed"] for r in rs}),
            wilson(sum(r["correct"] for r in rs), len(rs)),
            *(t_interval([r[m] for r in rs]) for m in METRICS),
            float(np.mean([r["tpf_with_commits"] for r in rs])),
            float(np.mean([r["cold_share"] for r in rs])),
        ))  # fmt: skip
    pairs = []
    base = by_variant.get("vanilla", {})
    for variant, items in by_variant.items():
        keys = sorted(set(items) & set(base))
        if variant == "vanilla" or not keys:
            continue
        a = [items[k] for k in keys]
        b = [base[k] for k in keys]
        diff = mcnemar([int(r["correct"]) for r in a], [int(r["correct"]) for r in b])
        ratios = {m: _ratio(np.array([r[m] for r in a]), np.array([r[m] for r in b]))
                  for m in METRICS}  # fmt: skip
        pairs.append(VariantPair(variant, len(keys), diff, ratios))
    return TeamReport(label, tuple(rows), tuple(pairs), tuple(_checks(pairs)))


def _checks(pairs: list[VariantPair]) -> list[str]:
    team = next((p for p in pairs if p.variant == "team"), None)
    if team is None:
        return []
    r, d = team.ratios, team.exact_diff
    ok = {
        "TPF higher": r["tpf"].low > 1,
        "APF lower": r["apf"].high < 1,
        "APT reduced by 20% or more": r["apt"].estimate <= 0.8,
        "exact match at least vanilla - 1 point": d.estimate >= -0.01,
    }
    lines = [f"{name}: {'pass' if passed else 'FAIL'}" for name, passed in ok.items()]
    lines.append(
        f"TEAM - vanilla exact match {100 * d.estimate:+.1f} points "
        f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}] (McNemar exact p {d.p_value:.3g}); "
        f"TPF x{r['tpf'].estimate:.2f}, APF x{r['apf'].estimate:.2f}, "
        f"APT x{r['apt'].estimate:.2f} ({100 * (r['apt'].estimate - 1):+.0f}%)"
    )
    return lines


def team_tables(report: TeamReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Caption, header and rows of the variant and ratio tables."""

    def ci(i: Interval, digits: int = 2) -> str:
        return f"{i.estimate:.{digits}f} [{i.low:.{digits}f}, {i.high:.{digits}f}]"

    def rt(r: Ratio) -> str:
        return f"{r.estimate:.3f} [{r.low:.3f}, {r.high:.3f}]"

    rows = [[v.variant, str(v.n), str(v.seeds), ci(v.exact, 3), ci(v.tpf), ci(v.apf), ci(v.apt),
             f"{v.tpf_with_commits:.2f}", f"{100 * v.cold_share:.1f}%"]
            for v in report.rows]  # fmt: skip
    pairs = [[p.variant, str(p.n),
              f"{100 * p.exact_diff.estimate:+.1f} [{100 * p.exact_diff.low:+.1f}, "
              f"{100 * p.exact_diff.high:+.1f}]", f"{p.exact_diff.p_value:.3g}",
              *(rt(p.ratios[m]) for m in METRICS)] for p in report.pairs]  # fmt: skip
    return [
        (f"TEAM, {report.label}: per variant (exact match: Wilson; TPF, APF, APT: t intervals "
         "over prompts; KV commits excluded from TPF unless named)",
         ["variant", "prompts", "seeds", "exact match", "TPF", "APF", "APT", "TPF incl. commits",
          "cold rows"], rows),
        (f"TEAM, {report.label}: against vanilla on the same prompts (exact match: points, "
         "Agresti-Min interval, McNemar exact p; metrics: ratio of means, paired bootstrap)",
         ["variant", "prompts", "exact match diff", "p", "TPF ratio", "APF ratio", "APT ratio"],
         pairs),
    ]  # fmt: skip


def plot_team(report: TeamReport, path: Path) -> str:
    """Exact match, TPF, APF and APT per variant with 95% intervals, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    names = [v.variant for v in report.rows]
    panels = [
        ("exact match", lambda v: v.exact),
        ("TPF (tokens / forward)", lambda v: v.tpf),
        ("APF (experts / layer / forward)", lambda v: v.apf),
        ("APT = APF / TPF", lambda v: v.apt),
    ]
    for ax, (title, get) in zip(axes, panels, strict=True):
        for x, v in enumerate(report.rows):
            i = get(v)
            color = "#b8420f" if v.variant == "team" else "#1f5fa8"
            # no interval (one prompt, or every value equal): the point alone
            err = [[max(0.0, i.estimate - i.low) if math.isfinite(i.low) else 0.0],
                   [max(0.0, i.high - i.estimate) if math.isfinite(i.high) else 0.0]]  # fmt: skip
            ax.errorbar([x], [i.estimate], yerr=err, fmt="o", capsize=3, color=color)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"TEAM on the tiny block-diffusion MoE, {report.label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
