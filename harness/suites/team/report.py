"""The TEAM section of `harness report`: metrics per variant, and ratios against vanilla.

What the samples share decides the intervals. Each seed trains its own model and draws its own
test prompts (`eval_prompts(seed, n)`), so prompts are nested in seeds: items of one seed share a
trained model, and items of different seeds share nothing. Hence:
- one seed (the presets' default): the prompts are independent draws for that one model, and
  the intervals are over prompts, for that model; they leave out how much another training seed
  would differ;
- several seeds: the seeds are the clusters. Exact match gets the clustered Wilson interval with
  the Korn-Graubard effective sample size (design effect floored at 1, degrees of freedom k - 1);
  TPF, APF and APT get the clustered t interval on k - 1 degrees of freedom, which with equal
  prompts per seed is the t interval over the k seed means.

For each `team` log:
- per variant: exact match (Wilson, or clustered Wilson) and mean TPF, APF and APT (t, or
  clustered t), plus the KV-commit-inclusive TPF and the share of masked rows that were cold;
- per variant against vanilla, paired on the same (seed, prompt): the exact-match difference
  (one seed: Agresti-Min interval and exact McNemar p, as for every 0/1 pair in the report;
  several: clustered t interval and the exact sign-flip p over the per-seed differences) and
  the ratios mean(variant) / mean(vanilla) of TPF, APF and APT with delta-method t intervals
  (clustered by seed when there are several);
- the spec's behaviour check (specs/team.md §5, check 5), each line saying what came out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.stats.intervals import (
    Interval,
    clustered_t_interval,
    ratio_interval,
    t_interval,
    wilson,
)
from harness.stats.paired import PairedTest, mcnemar, paired_permutation
from harness.stats.resampling import clustered_wilson

METRICS = ("tpf", "apf", "apt")


@dataclass(frozen=True)
class VariantRow:
    """One variant's metrics over its prompts."""

    variant: str
    n: int  # prompts (over all seeds)
    seeds: int
    exact: Interval  # exact match: Wilson over prompts (1 seed), clustered Wilson (seeds)
    tpf: Interval  # t over prompts (1 seed), clustered t with seeds as clusters (several)
    apf: Interval
    apt: Interval
    tpf_with_commits: float  # mean, KV commits counted as forwards
    cold_share: float  # mean share of masked rows that were cold


@dataclass(frozen=True)
class VariantPair:
    """A variant against vanilla on the same prompts."""

    variant: str
    n: int  # paired (seed, prompt) items
    exact_diff: PairedTest  # exact match, variant - vanilla (see the module notes)
    ratios: dict[str, Interval]  # tpf, apf, apt: mean(variant) / mean(vanilla), delta-method t
    seeds: int = 1  # seeds behind the pairs; above 1 they are the clusters


@dataclass(frozen=True)
class TeamReport:
    """One team log's tables and checks."""

    label: str
    rows: tuple[VariantRow, ...]
    pairs: tuple[VariantPair, ...]
    checks: tuple[str, ...]


def load_team_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample records of a team log: variant, seed, prompt, task, correct and the counts."""
    from harness.logs import read_samples

    runs = []
    for s in read_samples(location):
        score = next(iter((s.scores or {}).values()), None)
        if score is None or "tpf" not in (score.metadata or {}):
            continue  # errored or not decoded
        runs.append({**score.metadata, "correct": score.value == "C"})
    return runs


def _mean_interval(values: list[float], seeds: list[int]) -> Interval:
    """Student t over prompts for one seed; clustered t with seeds as clusters for several."""
    if len(set(seeds)) > 1:
        return clustered_t_interval(values, seeds)
    return t_interval(values)


def _exact_interval(correct: list[bool], seeds: list[int]) -> Interval:
    """Wilson over prompts for one seed; clustered (Korn-Graubard) Wilson for several."""
    if len(set(seeds)) > 1:
        return clustered_wilson(np.asarray(correct, dtype=float), seeds)
    return wilson(sum(correct), len(correct))


def _exact_diff(a: list[dict], b: list[dict], seeds: list[int]) -> PairedTest:
    """Exact match a - b on paired items: McNemar for one seed, clustered by seed for several."""
    ya = np.array([int(r["correct"]) for r in a])
    yb = np.array([int(r["correct"]) for r in b])
    if len(set(seeds)) == 1:
        return mcnemar(ya, yb)
    ci = clustered_t_interval(ya - yb, seeds)
    labels = np.asarray(seeds)
    per_seed = [(ya[labels == s].mean(), yb[labels == s].mean()) for s in sorted(set(seeds))]
    p_value = paired_permutation([x for x, _ in per_seed], [y for _, y in per_seed]).p_value
    k = len(per_seed)
    method = f"clustered t over {k} seeds, exact sign-flip p over the seeds"
    b10, b01 = int(np.sum(ya > yb)), int(np.sum(ya < yb))
    return PairedTest(ci.estimate, ci.low, ci.high, ci.confidence, p_value, method, ci.n, b01, b10)


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
        seeds = [r["seed"] for r in rs]
        rows.append(VariantRow(
            variant, len(rs), len(set(seeds)),
            _exact_interval([bool(r["correct"]) for r in rs], seeds),
            *(_mean_interval([r[m] for r in rs], seeds) for m in METRICS),
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
        seeds = [k[0] for k in keys]
        clusters = seeds if len(set(seeds)) > 1 else None
        ratios = {m: ratio_interval([r[m] for r in a], [r[m] for r in b], clusters=clusters)
                  for m in METRICS}  # fmt: skip
        diff = _exact_diff(a, b, seeds)
        pairs.append(VariantPair(variant, len(keys), diff, ratios, len(set(seeds))))
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
    test = "McNemar exact" if team.seeds == 1 else "sign-flip over seeds"
    lines.append(
        f"TEAM - vanilla exact match {100 * d.estimate:+.1f} points "
        f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}] ({test} p {d.p_value:.3g}); "
        f"TPF x{r['tpf'].estimate:.2f}, APF x{r['apf'].estimate:.2f}, "
        f"APT x{r['apt'].estimate:.2f} ({100 * (r['apt'].estimate - 1):+.0f}%)"
    )
    return lines


def _row_intervals(seeds: int) -> str:
    if seeds == 1:
        return "over prompts, for the one trained seed"
    return f"seeds as clusters (k = {seeds}); exact match conservative"


def _pair_intervals(seeds: int) -> str:
    if seeds == 1:
        return "Agresti-Min, McNemar exact p; ratios: delta-method t over prompts (one seed)"
    return f"clustered t, sign-flip p over {seeds} seeds; ratios: delta-method t, seeds as clusters"


def team_tables(report: TeamReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Caption, header and rows of the variant and ratio tables."""
    rows = [[v.variant, str(v.n), str(v.seeds), v.exact.text(".3f"), v.tpf.text(".2f"),
             v.apf.text(".2f"), v.apt.text(".2f"), f"{v.tpf_with_commits:.2f}",
             f"{100 * v.cold_share:.1f}%", _row_intervals(v.seeds)]
            for v in report.rows]  # fmt: skip
    pairs = [[p.variant, str(p.n),
              Interval(p.exact_diff.estimate, p.exact_diff.low, p.exact_diff.high,
                       p.exact_diff.confidence, p.exact_diff.method, p.exact_diff.n
                       ).text("+.1f", scale=100),
              f"{p.exact_diff.p_value:.3g}", *(p.ratios[m].text(".3f") for m in METRICS),
              _pair_intervals(p.seeds)] for p in report.pairs]  # fmt: skip
    return [
        (f"TEAM, {report.label}: per variant, 95% intervals (exact match: Wilson over prompts "
         "with one seed, clustered Wilson with the Korn-Graubard effective size when seeds are "
         "clusters; TPF, APF, APT: t over prompts, or clustered t on k - 1 df; KV commits "
         "excluded from TPF unless named)",
         ["variant", "prompts", "seeds", "exact match", "TPF", "APF", "APT", "TPF incl. commits",
          "cold rows", "intervals"], rows),
        (f"TEAM, {report.label}: against vanilla on the same prompts, 95% intervals (exact "
         "match: points; metrics: ratio of means, delta-method t)",
         ["variant", "prompts", "exact match diff", "p", "TPF ratio", "APF ratio", "APT ratio",
          "intervals"], pairs),
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
