"""PostTrainBench's report: each agent's weighted score with intervals, its runs and flags.

From one log's runs (sample metadata `run`):

- **weights**: eq. 1 over the log's benchmarks, from the reference scores the runs carry
  (the instruct reference and the base on the same test items), normalised;
- **weighted score** per agent: sum_i w_i s_i, s_i its final score on benchmark i averaged
  over base models and runs, with two intervals:
  - *over test items* (always, when every benchmark has at least 20 items): the items are
    the sampling unit; per item, its final 0/1 score averaged over the agent's runs and base
    models; s_i's variance is the items' variance over n_i, and Var(S) = sum_i w_i^2 Var(s_i),
    the weights held fixed. The interval is Agresti-Caffo-adjusted (one success and one
    failure added per benchmark, spread over its items) Wald; tests/suites/posttrainbench/
    test_report.py checks its coverage by Monte Carlo at 100 items per benchmark;
  - *over runs* (the issue's "bootstrap over runs clustered by configuration"): with R >= 2
    runs of every configuration, the R replicate weighted scores (run r of each
    configuration) give the paper's ±1 SD and a t interval on R - 1 degrees of freedom;
    with one run per configuration it is "not estimable". A percentile bootstrap over so
    few runs would not cover 95% (see `harness.report.pairs`), so none is printed;
- **against the base**, per agent and configuration: McNemar's exact test and interval on
  the test items, paired with the base model's answers, Holm-corrected over the log's pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from harness.stats.intervals import Interval
from harness.stats.multiple import holm
from harness.stats.paired import PairedTest, mcnemar

MIN_ITEMS = 20  # below this many items per benchmark the item interval is not printed


@dataclass(frozen=True)
class AgentRow:
    """One agent's weighted score."""

    agent: str  # agent name
    runs: int  # runs in the log
    flagged: int  # runs flagged by anti-cheat
    no_model: int  # runs without a final model (timeouts)
    per_benchmark: dict[str, float]  # benchmark -> mean final score
    weighted: Interval  # weighted score, interval over test items
    over_runs: Interval  # weighted score, interval over replicate runs (or not estimable)
    sd_runs: float  # SD of the replicate weighted scores (nan with one run per configuration)


@dataclass(frozen=True)
class BasePair:
    """An agent's configuration against the base model, paired by test item."""

    agent: str
    configuration: str  # base model / benchmark
    test: PairedTest  # final - base, McNemar exact
    p_holm: float  # Holm over the log's pairs; nan: not tested


@dataclass(frozen=True)
class PtbReport:
    """The posttrainbench section of one log."""

    heading: str  # which log
    weights: dict[str, float]  # benchmark -> normalised weight (nan: undefined)
    base: dict[str, float]  # benchmark -> base score
    instruct: dict[str, float]  # benchmark -> instruct reference score
    agents: tuple[AgentRow, ...]
    pairs: tuple[BasePair, ...]
    runs: tuple[dict[str, Any], ...]  # the runs, as logged


def item_interval(
    items: dict[str, list[float]], weights: dict[str, float], *, confidence: float = 0.95
) -> Interval:
    """Weighted sum of per-benchmark item means, with the adjusted Wald interval.

    Args:
        items: Benchmark -> per-item scores in [0, 1] (already averaged over runs and bases).
        weights: Benchmark -> weight; the score is sum_i w_i mean(items_i).
        confidence: Nominal coverage.

    Notes:
        Agresti-Caffo style: for the variance and the centre, each benchmark's mean is
        (sum + 1) / (n + 2), which keeps the interval from collapsing at 0 or 1 scores.
        Items are independent draws from the benchmark's task distribution; weights are
        held fixed. Not estimable below `MIN_ITEMS` items in some benchmark.

    References:
        Agresti, A. and Caffo, B. (2000). Simple and effective confidence intervals for
        proportions and differences of proportions result from adding two successes and two
        failures. The American Statistician 54(4), 280-288.

    """
    n_min = min((len(v) for v in items.values()), default=0)
    estimate = sum(weights[b] * float(np.mean(v)) for b, v in items.items()) if n_min else math.nan
    if n_min < MIN_ITEMS:
        method = f"adjusted Wald over items: not estimable below {MIN_ITEMS} items"
        return Interval(estimate, math.nan, math.nan, confidence, method, n_min)
    centre = var = 0.0
    for bench, values in items.items():
        x = np.asarray(values, dtype=float)
        n = x.size
        adjusted = (x.sum() + 1) / (n + 2)
        # item variance, with the added success and failure counted as two items
        spread = (np.sum((x - adjusted) ** 2) + (1 - adjusted) ** 2 + adjusted**2) / (n + 1)
        centre += weights[bench] * adjusted
        var += weights[bench] ** 2 * spread / (n + 2)
    z = stats.norm.ppf(0.5 + confidence / 2)
    half = z * math.sqrt(var)
    n_all = sum(len(v) for v in items.values())
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return Interval(estimate, low, high, confidence, "adjusted Wald over items", n_all)


def replicate_interval(replicates: list[float], *, confidence: float = 0.95) -> Interval:
    """T interval over R replicate weighted scores (run r of every configuration)."""
    r = len(replicates)
    if r < 2:
        method = "t over runs: not estimable at 1 run per configuration"
        mean = float(replicates[0]) if replicates else math.nan
        return Interval(mean, math.nan, math.nan, confidence, method, r)
    x = np.asarray(replicates, dtype=float)
    half = stats.t.ppf(0.5 + confidence / 2, r - 1) * x.std(ddof=1) / math.sqrt(r)
    return Interval(float(x.mean()), x.mean() - half, x.mean() + half, confidence,
                    "t over replicate runs", r)  # fmt: skip


def _weights(runs: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float], dict]:
    base: dict[str, list[float]] = {}
    instruct: dict[str, list[float]] = {}
    for run in runs:
        base.setdefault(run["benchmark"], []).append(run["base_score"])
        instruct.setdefault(run["benchmark"], []).append(run["instruct_score"])
    b = {k: float(np.mean(v)) for k, v in base.items()}
    s = {k: float(np.mean(v)) for k, v in instruct.items()}
    gaps = {k: s[k] - b[k] for k in b}
    if any(not g > 0 for g in gaps.values()):
        return {k: math.nan for k in b}, b, s
    raw = {k: 1 / g for k, g in gaps.items()}
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}, b, s


def _agent_row(agent: str, runs: list[dict[str, Any]], weights: dict[str, float]) -> AgentRow:
    benches = sorted(weights)
    per_bench = {b: float(np.mean([r["final_score"] for r in runs if r["benchmark"] == b]))
                 for b in benches if any(r["benchmark"] == b for r in runs)}  # fmt: skip
    items: dict[str, list[float]] = {}
    for bench in per_bench:
        table: dict[str, list[float]] = {}
        for run in (r for r in runs if r["benchmark"] == bench):
            for item, value in (run.get("items") or {}).items():
                table.setdefault(item, []).append(float(value))
        items[bench] = [float(np.mean(v)) for v in table.values()]
    if set(per_bench) != set(benches) or any(math.isnan(w) for w in weights.values()):
        nan = Interval(math.nan, math.nan, math.nan, 0.95, "weights undefined", 0)
        weighted, over = nan, nan
        sd = math.nan
    else:
        weighted = item_interval(items, weights)
        configs: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            configs.setdefault(run["configuration"], []).append(run)
        r = min(len(v) for v in configs.values())
        replicates = []
        for k in range(r):
            by_bench: dict[str, list[float]] = {}
            for config_runs in configs.values():
                ordered = sorted(config_runs, key=lambda x: x["run"])
                by_bench.setdefault(ordered[k]["benchmark"], []).append(ordered[k]["final_score"])
            replicates.append(sum(weights[b] * float(np.mean(v)) for b, v in by_bench.items()))
        over = replicate_interval(replicates)
        sd = float(np.std(replicates, ddof=1)) if r >= 2 else math.nan
    return AgentRow(
        agent=agent, runs=len(runs), flagged=sum(bool(r["flags"]) for r in runs),
        no_model=sum(not r["final_model"] for r in runs), per_benchmark=per_bench,
        weighted=weighted, over_runs=over, sd_runs=sd,
    )  # fmt: skip


def build_report(heading: str, runs: list[dict[str, Any]]) -> PtbReport:
    """Weights, agent rows and paired comparisons with the base for one log's runs."""
    weights, base, instruct = _weights(runs) if runs else ({}, {}, {})
    agents = sorted({r["agent"] for r in runs})
    rows = tuple(_agent_row(a, [r for r in runs if r["agent"] == a], weights) for a in agents)
    raw_pairs = []
    for run in sorted(runs, key=lambda r: (r["agent"], r["configuration"], r["run"])):
        if run["run"] != 0 or not run.get("items") or not run.get("base_items"):
            continue
        shared = sorted(set(run["items"]) & set(run["base_items"]))
        if len(shared) < 2:
            continue
        test = mcnemar([run["items"][i] for i in shared], [run["base_items"][i] for i in shared])
        raw_pairs.append((run["agent"], run["configuration"], test))
    tested = [t.p_value for _, _, t in raw_pairs if not math.isnan(t.p_value)]
    adjusted = iter(holm(tested).adjusted if tested else ())
    pairs = tuple(
        BasePair(a, c, t, math.nan if math.isnan(t.p_value) else float(next(adjusted)))
        for a, c, t in raw_pairs
    )
    return PtbReport(heading, weights, base, instruct, rows, pairs, tuple(runs))


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def report_tables(report: PtbReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """The section's tables: agents, runs, the paired comparisons, the weights."""
    benches = sorted(report.weights)
    agents = [
        [a.agent, str(a.runs), str(a.flagged), str(a.no_model),
         *[_pct(a.per_benchmark.get(b, math.nan)) for b in benches],
         a.weighted.text(".1f", scale=100), a.weighted.method,
         a.over_runs.text(".1f", scale=100) + ("" if math.isnan(a.sd_runs)
                                               else f" (±{100 * a.sd_runs:.1f} SD)")]
        for a in report.agents
    ]  # fmt: skip
    runs = []
    for r in sorted(report.runs, key=lambda r: (r["agent"], r["configuration"], r["run"])):
        exit_ = r.get("exit") or {}
        signal = exit_.get("signal") or "none"
        runs.append([
            r["agent"], r["configuration"], str(r["run"]), _pct(r["raw_score"] if r["raw_score"]
            is not None else math.nan), _pct(r["final_score"]), ", ".join(r["flags"]) or "none",
            f"{exit_.get('exit_code')} / {signal}", "yes" if r["final_model"] else "no", r["why"],
        ])  # fmt: skip
    pairs = [
        [p.agent, p.configuration, p.test.summary().replace("a-b", "final-base"),
         "not tested" if math.isnan(p.p_holm) else f"{p.p_holm:.3g}"]
        for p in report.pairs
    ]  # fmt: skip
    weights = [[b, _pct(report.base[b]), _pct(report.instruct[b]),
                "undefined" if math.isnan(report.weights[b]) else f"{report.weights[b]:.4f}"]
               for b in benches]  # fmt: skip
    return [
        ("Agents: weighted score (%) = sum of w_i x s_i; flagged runs score the base model",
         ["agent", "runs", "flagged", "no final model", *[f"{b} (%)" for b in benches],
          "weighted (%) [95% CI over items]", "item interval", "over runs [95% t]"], agents),
        ("Runs: raw = the pristine evaluator's test accuracy; final = what counts",
         ["agent", "configuration", "run", "raw (%)", "final (%)", "flags", "exit / signal",
          "final model", "why"], runs),
        ("Against the base model, paired by test item (McNemar exact, Holm over the pairs)",
         ["agent", "configuration", "final - base", "p (Holm)"], pairs),
        ("Weights (eq. 1): 1 / (s_instruct - s_base), normalised",
         ["benchmark", "base (%)", "instruct reference (%)", "weight"], weights),
    ]  # fmt: skip
