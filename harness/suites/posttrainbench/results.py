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
    configuration) give the paper's ±1 SD and a t interval on R - 1 degrees of freedom, on
    the logit scale so that it stays in the score's support [0, 1] (`replicate_interval`);
    with one run per configuration it is "not estimable". A percentile bootstrap over so
    few runs would not cover 95% (see `harness.compare._pairs`), so none is printed;
- **against the base**, per agent and configuration: the comparison engine's test on the test
  items (`harness.stats._compare`, the suite's design: unit item, 0/1 scores, so McNemar's exact
  test and interval), paired with the base model's answers, Holm-corrected over the log's pairs;
- **errored runs** (the sample raised, or finished without a run): counted per agent, and
  scored as a failed run is, with the base model's score and answers (taken from a finished
  run on the same benchmark; without one, the run is counted and left out).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from harness.stats import Interval, PairedTest, pair_family
from harness.suites.catalog import suite_of_task

MIN_ITEMS = 20  # below this many items per benchmark the item interval is not printed
# unit: test item, 0/1; each run against the base
DESIGN = suite_of_task(f"{__package__}.task:posttrainbench").design
RUN_KEYS = ("agent", "base_model", "benchmark", "run", "configuration")  # an errored run's


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
    errors: int = 0  # runs that errored (scored as failed runs: the base model's score)


@dataclass(frozen=True)
class BasePair:
    """An agent's configuration against the base model, paired by test item."""

    agent: str
    configuration: str  # base model / benchmark
    test: PairedTest  # final - base, the engine's (McNemar exact on 0/1 items)
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
    runs: tuple[dict[str, Any], ...]  # the runs, as logged; errored ones as failed runs


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
    """T interval over R replicate weighted scores in [0, 1], on the logit scale.

    The mean m of the R replicates (run r of every configuration) and its standard error se
    give logit(m) +- t_{R-1} se / (m (1 - m)) (the delta method), mapped back: the interval
    never leaves [0, 1] and is skewed away from the nearer end, as such means are.

    Notes:
        Coverage at the n the report prints (R = 3, Beta-distributed replicates,
        tests/suites/posttrainbench/test_checks.py): 0.947-0.955 at means 0.05-0.98, where the
        t interval on the raw scale covered 0.907-0.952 and left [0, 1] (a mean of 0.78 over 3
        runs gave [0.498, 1.069]). With every replicate equal there is no spread: the interval
        is the point; with a mean at 0 or 1 (every replicate there) too.

    """
    r = len(replicates)
    if r < 2:
        method = "t over runs: not estimable at 1 run per configuration"
        mean = float(replicates[0]) if replicates else math.nan
        return Interval(mean, math.nan, math.nan, confidence, method, r)
    x = np.asarray(replicates, dtype=float)
    tol = 8 * np.finfo(float).eps  # normalised weights sum to 1 within a few ulp
    if not np.all((x >= -tol) & (x <= 1 + tol)):
        raise ValueError(f"a weighted score lies in [0, 1], got {replicates}")
    x = np.clip(x, 0.0, 1.0)
    m = float(x.mean())
    method = "t over replicate runs, on the logit scale"
    if m <= 0.0 or m >= 1.0:
        return Interval(m, m, m, confidence, method, r)
    half = stats.t.ppf(0.5 + confidence / 2, r - 1) * x.std(ddof=1) / math.sqrt(r)
    centre, width = math.log(m / (1 - m)), half / (m * (1 - m))
    low, high = (float(special.expit(centre - width)), float(special.expit(centre + width)))
    return Interval(m, low, high, confidence, method, r)


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
        weighted=weighted, over_runs=over, sd_runs=sd, errors=sum("error" in r for r in runs),
    )  # fmt: skip


def as_failed(errored: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An errored run scored as a failed run: the base model's score and answers.

    The base's score and items come from a finished run on the same configuration (the same
    base model and benchmark); None when the log has none to take them from.
    """
    same = [r for r in runs if "error" not in r and r["configuration"] == errored["configuration"]]
    if not same:
        return None
    ref = same[0]
    why = f"errored ({errored['error']}): the base model's score"
    return {
        **{k: errored[k] for k in RUN_KEYS}, "error": errored["error"],
        "final_score": ref["base_score"], "raw_score": None, "base_score": ref["base_score"],
        "instruct_score": ref["instruct_score"], "flags": [], "why": why, "anticheat": None,
        "judge": None, "exit": {}, "final_model": False, "items": ref["base_items"],
        "base_items": ref["base_items"], "raw_items": None,
    }  # fmt: skip


def build_report(heading: str, runs: list[dict[str, Any]]) -> PtbReport:
    """Weights, agent rows and paired comparisons with the base for one log's runs.

    `runs` may hold errored ones (`error`, and the keys `RUN_KEYS`): each is scored as a failed
    run (`as_failed`), or, with no finished run of its configuration, kept for its count only.
    """
    finished = [r for r in runs if "error" not in r]
    failed = {id(r): as_failed(r, finished) for r in runs if "error" in r}
    scored = finished + [f for f in failed.values() if f is not None]
    lost = [r for r in runs if "error" in r and failed[id(r)] is None]  # nothing to score by
    weights, base, instruct = _weights(finished) if finished else ({}, {}, {})
    rows = []
    for agent in sorted({r["agent"] for r in runs}):
        mine = [r for r in scored if r["agent"] == agent]
        gone = sum(1 for r in lost if r["agent"] == agent)
        if mine:
            row = _agent_row(agent, mine, weights)
        else:
            nan = Interval(math.nan, math.nan, math.nan, 0.95, "no scored run", 0)
            row = AgentRow(agent, 0, 0, 0, {}, nan, nan, math.nan)
        rows.append(dataclasses.replace(row, runs=row.runs + gone, errors=row.errors + gone))
    family = []
    for run in sorted(scored, key=lambda r: (r["agent"], r["configuration"], r["run"])):
        if run["run"] == 0 and run.get("items") and run.get("base_items"):
            items = {str(k): float(v) for k, v in run["items"].items()}
            base_items = {str(k): float(v) for k, v in run["base_items"].items()}
            family.append((run["agent"], run["configuration"], items, base_items))
    tested = pair_family(DESIGN, family)
    pairs = tuple(
        BasePair(agent, config, p.test, p.p_holm)
        for (agent, config, _, _), p in zip(family, tested, strict=True)
        if p.test is not None  # fewer than two shared items: no row
    )
    return PtbReport(heading, weights, base, instruct, tuple(rows), pairs, tuple(scored + lost))


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def report_tables(report: PtbReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """The section's tables: agents, runs, the paired comparisons, the weights."""
    benches = sorted(report.weights)
    agents = [
        [a.agent, str(a.runs), str(a.errors), str(a.flagged), str(a.no_model),
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
        raw = r.get("raw_score")
        why = r.get("why") or f"errored ({r.get('error')}); no finished run to score it by"
        runs.append([
            r["agent"], r["configuration"], str(r["run"]), _pct(raw if raw is not None else
            math.nan), _pct(r.get("final_score", math.nan)), ", ".join(r.get("flags") or ())
            or "none", f"{exit_.get('exit_code')} / {signal}",
            "yes" if r.get("final_model") else "no", why,
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
        ("Agents: weighted score (%) = sum of w_i x s_i; flagged and errored runs score the base "
         "model",
         ["agent", "runs", "errored", "flagged", "no final model", *[f"{b} (%)" for b in benches],
          "weighted (%) [95% CI over items]", "item interval", "over runs [95% t]"], agents),
        ("Runs: raw = the pristine evaluator's test accuracy; final = what counts",
         ["agent", "configuration", "run", "raw (%)", "final (%)", "flags", "exit / signal",
          "final model", "why"], runs),
        ("Against the base model, paired by test item (the engine: McNemar exact on 0/1 items, "
         "Holm over the pairs)",
         ["agent", "configuration", "final - base", "p (Holm)"], pairs),
        ("Weights (eq. 1): 1 / (s_instruct - s_base), normalised",
         ["benchmark", "base (%)", "instruct reference (%)", "weight"], weights),
    ]  # fmt: skip
