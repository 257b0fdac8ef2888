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
  clustered t), plus the KV-commit-inclusive TPF and the share of masked rows that were cold,
  all from the comparison engine (`harness.stats._compare.estimate`, the suite's design: unit
  item, clustered by seed);
- errored prompts: a prompt whose sample errored, was not decoded, or whose score cannot be
  read counts as incorrect in exact match (an error counts as wrong), is left out of TPF, APF
  and APT (continuous), and is counted per variant;
- per variant against vanilla, paired on the same (seed, prompt): the exact-match difference
  from the engine, one Holm family over the variants (one seed: Tango's score interval and
  the asymptotic McNemar p, as for every 0/1 pair in the report; several: the exact sign-flip
  test over the per-seed mean differences, with the interval that inverts it, none below 6
  seeds) and the ratios mean(variant) / mean(vanilla) of TPF, APF and APT with delta-method t
  intervals (clustered by seed when there are several) on the prompts both decoded;
- the spec's behaviour check (specs/team.md §5, check 5), each line saying what came out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.logs import parse_score
from harness.sections import pyplot
from harness.stats import POSITIVE, Interval, PairedTest, estimate, pair_family, ratio_interval
from harness.suites.catalog import suite_of_task

METRICS = ("tpf", "apf", "apt")
# unit: item (seed, prompt); cluster: seed; exact match 0/1
DESIGN = suite_of_task(f"{__package__}.task:team").design
COUNTS = dataclasses.replace(DESIGN, score="unbounded", bounds=POSITIVE)  # TPF, APF, APT >= 0


@dataclass(frozen=True)
class VariantRow:
    """One variant's metrics over its prompts."""

    variant: str
    n: int  # prompts (over all seeds), errored ones included
    seeds: int
    exact: Interval  # exact match (errored: incorrect): Wilson (1 seed), clustered Wilson
    tpf: Interval  # t over prompts (1 seed), clustered t with seeds as clusters (several)
    apf: Interval
    apt: Interval
    tpf_with_commits: float  # mean, KV commits counted as forwards
    cold_share: float  # mean share of masked rows that were cold
    errors: int = 0  # prompts that errored (incorrect in exact match, out of the means)


@dataclass(frozen=True)
class VariantPair:
    """A variant against vanilla on the same prompts."""

    variant: str
    n: int  # paired (seed, prompt) items
    exact_diff: PairedTest | None  # exact match, variant - vanilla (engine); None: not tested
    ratios: dict[str, Interval]  # tpf, apf, apt: mean(variant) / mean(vanilla), delta-method t
    seeds: int = 1  # seeds behind the pairs; above 1 they are the clusters
    p_holm: float = math.nan  # exact match: Holm over the log's variants; nan: not tested


@dataclass(frozen=True)
class TeamReport:
    """One team log's tables and checks."""

    label: str
    rows: tuple[VariantRow, ...]
    pairs: tuple[VariantPair, ...]
    checks: tuple[str, ...]


def load_team_runs(location: str) -> list[dict[str, Any]]:
    """Per-sample records of a team log: variant, seed, prompt, task, correct and the counts.

    A sample that errored, was not decoded, or whose score cannot be read is kept with
    `correct` False and `error` (the reason), and without the counts.
    """
    from harness.logs import read_samples

    runs = []
    for s in read_samples(location):
        keep = {k: (s.metadata or {}).get(k) for k in ("variant", "seed", "prompt_id", "task")}
        score = next(iter((s.scores or {}).values()), None)
        value, reason = parse_score(score.value) if score is not None else (0.0, "no score")
        if s.error:
            reason = str(getattr(s.error, "message", None) or s.error).splitlines()[0][:160]
        elif not reason and "tpf" not in (score.metadata or {}):
            reason = f"not decoded ({score.explanation or 'no counts'})"
        if reason:
            runs.append({**keep, "correct": False, "error": reason})
        else:
            runs.append({**score.metadata, "correct": value == 1.0})
    return runs


def _unit(r: dict[str, Any]) -> str:
    return f"{r['seed']}/{r['prompt_id']}"


def build_team_report(label: str, runs: list[dict[str, Any]]) -> TeamReport:
    """Rows, pairs against vanilla, and the behaviour check."""
    from harness.models.team.decode import VARIANTS

    order = {v: i for i, v in enumerate(VARIANTS)}  # vanilla first, then TEAM, then ablations
    by_variant: dict[str, dict[tuple[int, int], dict]] = {}
    for r in sorted(runs, key=lambda r: (order.get(r["variant"], len(order)), r["variant"])):
        by_variant.setdefault(r["variant"], {})[(r["seed"], r["prompt_id"])] = r
    seeds_all = {r["seed"] for r in runs}
    # one seed: the prompts are independent draws for that one model (module notes)
    clusters = {_unit(r): r["seed"] for r in runs} if len(seeds_all) > 1 else None
    rows = []
    for variant, items in by_variant.items():
        rs = list(items.values())
        done = [r for r in rs if "error" not in r]

        def labels(some: list[dict]) -> list[int] | None:
            return [r["seed"] for r in some] if clusters else None

        rows.append(VariantRow(
            variant, len(rs), len({r["seed"] for r in rs}),
            estimate(DESIGN, [float(r["correct"]) for r in rs], labels(rs)),
            *(estimate(COUNTS, [r[m] for r in done], labels(done)) for m in METRICS),
            float(np.mean([r["tpf_with_commits"] for r in done])) if done else math.nan,
            float(np.mean([r["cold_share"] for r in done])) if done else math.nan,
            len(rs) - len(done),
        ))  # fmt: skip
    exact = {v: {_unit(r): float(r["correct"]) for r in items.values()}
             for v, items in by_variant.items()}  # fmt: skip
    base = by_variant.get("vanilla", {})
    others = [v for v, items in by_variant.items() if v != "vanilla" and set(items) & set(base)]
    family = pair_family(DESIGN, [(v, "vanilla", exact[v], exact["vanilla"]) for v in others],
                         clusters)  # fmt: skip
    pairs = []
    for variant, p in zip(others, family, strict=True):
        items = by_variant[variant]
        keys = sorted(k for k in set(items) & set(base)
                      if "error" not in items[k] and "error" not in base[k])  # fmt: skip
        a = [items[k] for k in keys]
        b = [base[k] for k in keys]
        seeds = [k[0] for k in keys]
        several = clusters is not None and len(set(seeds)) > 1
        ratios = {m: ratio_interval([r[m] for r in a], [r[m] for r in b],
                                    clusters=seeds if several else None)
                  for m in METRICS}  # fmt: skip
        k = len({key[0] for key in set(items) & set(base)})
        pairs.append(VariantPair(variant, p.shared, p.test, ratios, k, p.p_holm))
    return TeamReport(label, tuple(rows), tuple(pairs), tuple(_checks(pairs)))


def _checks(pairs: list[VariantPair]) -> list[str]:
    team = next((p for p in pairs if p.variant == "team"), None)
    if team is None:
        return []
    r, d = team.ratios, team.exact_diff
    if d is None:
        return [f"TEAM - vanilla: not tested (fewer than two shared {DESIGN.unit}s)"]
    ok = {
        "TPF higher": r["tpf"].low > 1,
        "APF lower": r["apf"].high < 1,
        "APT reduced by 20% or more": r["apt"].estimate <= 0.8,
        "exact match at least vanilla - 1 point": d.estimate >= -0.01,
    }
    lines = [f"{name}: {'pass' if passed else 'FAIL'}" for name, passed in ok.items()]
    test = "McNemar asymptotic" if team.seeds == 1 else "sign-flip over seeds"
    ci = Interval(d.estimate, d.low, d.high, d.confidence, d.method, d.n)
    bounds = (
        f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]"
        if ci.estimable
        else f"(no 95% interval at {team.seeds} seeds)"
    )
    lines.append(
        f"TEAM - vanilla exact match {100 * d.estimate:+.1f} points "
        f"{bounds} ({test} p {d.p_value:.3g}, Holm {team.p_holm:.3g}); "
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
        return (
            "Tango score interval, McNemar asymptotic p; ratios: delta-method t over prompts "
            "(one seed)"
        )
    return (
        f"sign-flip test and interval over {seeds} seed means; ratios: delta-method t, seeds as "
        "clusters"
    )


def _diff_text(d: PairedTest | None) -> str:
    if d is None:
        return "not tested"
    return Interval(d.estimate, d.low, d.high, d.confidence, d.method, d.n).text("+.1f", scale=100)


def _p_text(d: PairedTest | None) -> str:
    return "not tested" if d is None or math.isnan(d.p_value) else f"{d.p_value:.3g}"


def team_tables(report: TeamReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Caption, header and rows of the variant and ratio tables."""
    rows = [[v.variant, str(v.n), str(v.seeds), str(v.errors), v.exact.text(".3f"),
             v.tpf.text(".2f"),
             v.apf.text(".2f"), v.apt.text(".2f"), f"{v.tpf_with_commits:.2f}",
             f"{100 * v.cold_share:.1f}%", _row_intervals(v.seeds)]
            for v in report.rows]  # fmt: skip
    pairs = [[p.variant, str(p.n), _diff_text(p.exact_diff), _p_text(p.exact_diff),
              "not tested" if math.isnan(p.p_holm) else f"{p.p_holm:.3g}",
              *(p.ratios[m].text(".3f") for m in METRICS),
              _pair_intervals(p.seeds)] for p in report.pairs]  # fmt: skip
    return [
        (f"TEAM, {report.label}: per variant, 95% intervals (exact match: Wilson over prompts "
         "with one seed, clustered Wilson with the Korn-Graubard effective size when seeds are "
         "clusters; TPF, APF, APT: t over prompts, or clustered t on k - 1 df; KV commits "
         "excluded from TPF unless named; an errored prompt is incorrect in exact match, left "
         "out of the means, and counted)",
         ["variant", "prompts", "seeds", "errored", "exact match", "TPF", "APF", "APT",
          "TPF incl. commits", "cold rows", "intervals"], rows),
        (f"TEAM, {report.label}: against vanilla on the same prompts, 95% intervals (exact "
         "match: points, Holm over the variants; metrics: ratio of means, delta-method t, on "
         "the prompts both decoded)",
         ["variant", "prompts", "exact match diff", "p", "p (Holm)", "TPF ratio", "APF ratio",
          "APT ratio", "intervals"], pairs),
    ]  # fmt: skip


def plot_team(report: TeamReport, path: Path) -> str:
    """Exact match, TPF, APF and APT per variant with 95% intervals, one panel each."""
    plt = pyplot()
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
