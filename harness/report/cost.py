"""Cost and latency rows: tokens, dollars and time per unit, each with its interval.

Every number is read from what inspect records per sample, never from a price table of ours:
`model_usage` (tokens by model; `total_cost` in dollars where a price was known, from
`--model-cost-config` or inspect's model database) and the sample's `working_time`. A unit's
value is its mean over its epochs (and the replicates of its configuration), as for scores;
the interval runs over the suite's declared unit (and its clusters) through the comparison
engine's `estimate`, with the score type "unbounded".

- tokens: input (inspect's input tokens plus cache reads and writes), output, reasoning (where
  the provider reports it, else "not reported").
- dollars per unit: the sum of `total_cost` over a sample's models. When a model that was called
  has no price, the row's dollars are unknown and say so: never 0. A sample that called no
  model (it errored first) spent nothing.
- dollars per correct answer: mean dollars / mean correct over units (`harness.stats.ratio`),
  Fieller's interval (the delta method's pivot inverted), "not estimable" below its coverage
  thresholds (20 units, 10 correct answers).
- latency: working seconds per unit (inspect's `working_time`: time spent, waits for a
  connection left out), and time to first token where the provider reports it in the sample's
  metadata (`time_to_first_token`); inspect-ai 0.3.285's own providers do not, so it usually
  reads "not reported".

Wrapped methods (`pdr/`, `sr/`, `suco/`) make their inner calls through inspect, so their
usage and dollars count every call, as the budgets' B_total does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.logs import LogRecord, SampleScore
from harness.report.scores import design_of, first_scorer, problem_means, unit_clusters
from harness.stats.compare import estimate
from harness.stats.design import Design
from harness.stats.intervals import Interval
from harness.stats.ratio import ratio_of_means

TOKEN_KINDS = ("input", "output", "reasoning")  # shown; "total" (input + output) is kept too
TTFT_KEY = "time_to_first_token"  # sample metadata a provider may fill (seconds)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def sample_tokens(usage: dict[str, Any]) -> dict[str, float]:
    """Input, output and reasoning tokens of one sample, summed over its models.

    Reasoning is nan where no model of the sample reports it.
    """
    totals = {"input": 0.0, "output": 0.0, "reasoning": math.nan, "total": 0.0}
    for u in usage.values():
        if not isinstance(u, dict):
            continue
        for key in ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write"):
            totals["input"] += _number(u.get(key)) or 0.0
        totals["output"] += _number(u.get("output_tokens")) or 0.0
        reasoning = _number(u.get("reasoning_tokens"))
        if reasoning is not None:
            totals["reasoning"] = (0.0 if math.isnan(totals["reasoning"]) else
                                   totals["reasoning"]) + reasoning  # fmt: skip
    totals["total"] = totals["input"] + totals["output"]
    return totals


def unpriced_models(usage: dict[str, Any]) -> list[str]:
    """The models a sample called that have no recorded price (`total_cost`)."""
    return sorted(name for name, u in usage.items()
                  if isinstance(u, dict) and _number(u.get("total_cost")) is None)  # fmt: skip


def sample_dollars(usage: dict[str, Any]) -> float:
    """Dollars one sample spent; nan when a model it called has no price."""
    if unpriced_models(usage):
        return math.nan
    return math.fsum(_number(u.get("total_cost")) or 0.0 for u in usage.values())


def unit_values(
    records: Sequence[LogRecord], value: Callable[[SampleScore], float]
) -> dict[str, float]:
    """Each unit's mean over its sample-epochs of `value` (nan ones left out; nan if all are)."""
    seen: dict[str, list[float]] = {}
    for record in records:
        for s in record.samples:
            seen.setdefault(s.id, [])
            v = value(s)
            if not math.isnan(v):
                seen[s.id].append(v)
    return {u: (math.fsum(vs) / len(vs) if vs else math.nan) for u, vs in seen.items()}


@dataclass(frozen=True)
class UnitCosts:
    """One arm's per-unit numbers: what the rows and the frontier are computed from."""

    correct: dict[str, float]  # unit -> mean score of the first scorer (errors as 0)
    tokens: dict[str, dict[str, float]]  # kind -> unit -> mean tokens
    dollars: dict[str, float] | None  # unit -> mean dollars; None: some model has no price
    unpriced: tuple[str, ...]  # the models without a price
    seconds: dict[str, float]  # unit -> mean working seconds
    ttft: dict[str, float]  # unit -> mean time to first token (nan: not reported)


def unit_costs(records: Sequence[LogRecord]) -> UnitCosts:
    """The per-unit numbers of one arm (one log, or the replicates of a configuration)."""
    unpriced = sorted({m for r in records for s in r.samples for m in unpriced_models(s.usage)})
    tokens = {k: unit_values(records, lambda s, k=k: sample_tokens(s.usage)[k])
              for k in (*TOKEN_KINDS, "total")}  # fmt: skip
    dollars = None if unpriced else unit_values(records, lambda s: sample_dollars(s.usage))
    return UnitCosts(
        correct=problem_means(list(records), first_scorer(records)),
        tokens=tokens,
        dollars=dollars,
        unpriced=tuple(unpriced),
        seconds=unit_values(records, lambda s: s.working_time),
        ttft=unit_values(records, lambda s: _number(s.metadata.get(TTFT_KEY)) or math.nan),
    )


@dataclass(frozen=True)
class CostRow:
    """One log's (or arm's) cost and latency, per unit with 95% intervals."""

    suite: str  # suite name
    task: str  # task name (the group's label in a report)
    model: str  # model spec with its arguments
    unit: str  # what n counts
    n: int  # units
    tokens: dict[str, Interval]  # "input", "output", "reasoning", "total": tokens per unit
    dollars: Interval  # dollars per unit; nan with the reason where a price is unknown
    per_correct: Interval  # dollars per correct answer (ratio of means)
    seconds: Interval  # working seconds per unit
    ttft: Interval  # seconds to the first token; nan: not reported
    log: str  # the log file(s)
    manifest: str = ""  # the manifest's digest ("" for a log without one)
    unpriced: tuple[str, ...] = field(default_factory=tuple)  # models without a price


def _interval(design: Design, values: dict[str, float], clusters: dict[str, str] | None,
              missing: str) -> Interval:  # fmt: skip
    units = sorted(u for u, v in values.items() if not math.isnan(v))
    if not units:
        return Interval(math.nan, math.nan, math.nan, 0.95, missing, 0)
    measure = Design(design.unit, "unbounded", cluster=design.cluster)
    labels = [clusters[u] for u in units] if clusters else None
    return estimate(measure, [values[u] for u in units], labels)


def cost_row(records: Sequence[LogRecord], design: Design | None = None) -> CostRow:
    """The cost row of one arm (one log, or replicates pooled)."""
    from harness.eval.manifest import manifest_of

    first = records[0]
    design = design or design_of(first)
    clusters = unit_clusters(records, design)
    costs = unit_costs(records)
    tokens = {k: _interval(design, v, clusters, "not reported") for k, v in costs.tokens.items()}
    if costs.dollars is None:
        why = f"unknown: no price for {', '.join(costs.unpriced)} (--model-cost-config)"
        dollars = per_correct = Interval(
            math.nan, math.nan, math.nan, 0.95, why, len(costs.correct)
        )
    else:
        dollars = _interval(design, costs.dollars, clusters, "no sample")
        units = sorted(costs.correct)
        labels = [clusters[u] for u in units] if clusters else None
        per_correct = ratio_of_means(design, [costs.dollars[u] for u in units],
                                     [costs.correct[u] for u in units], labels)  # fmt: skip
    manifest = manifest_of(first) if len(records) == 1 else None
    return CostRow(
        suite=first.suite, task=first.task,
        model=first.model if len(records) == 1 else first.identity.arm_label,
        unit=design.unit, n=len(costs.correct), tokens=tokens, dollars=dollars,
        per_correct=per_correct,
        seconds=_interval(design, costs.seconds, clusters, "no working time in the log"),
        ttft=_interval(design, costs.ttft, clusters, "not reported by the provider"),
        log=", ".join(r.path for r in records),
        manifest=manifest.digest if manifest is not None else "",
        unpriced=costs.unpriced,
    )  # fmt: skip


def money(ci: Interval) -> str:
    """Dollars with an interval, in a precision that shows cents of a cent; the reason if none."""
    if math.isnan(ci.estimate):
        return ci.method
    digits = 2 if ci.estimate >= 1 else 6
    return ci.text(f".{digits}f")


def cost_table(rows: Sequence[CostRow]) -> tuple[str, list[str], list[list[str]]]:
    """Caption, header and rows of the cost and latency table."""
    units = {r.unit for r in rows}
    unit = units.pop() if len(units) == 1 else "unit"
    head = ["task", "model", "n", "input tokens", "output tokens", "reasoning tokens",
            f"$ per {unit}", "$ per correct", "working s", "first token s", "manifest"]  # fmt: skip
    body = [
        [r.task, r.model, str(r.n), *(_tokens(r.tokens[k]) for k in TOKEN_KINDS),
         money(r.dollars), money(r.per_correct), _tokens(r.seconds, ".3f"),
         _tokens(r.ttft, ".3f"), r.manifest or "none (`harness manifest` says why)"]
        for r in rows
    ]  # fmt: skip
    caption = (
        f"Cost and latency per {unit} with 95% intervals over {unit}s (t, clustered where the "
        "design clusters); $ per correct = mean $ / mean correct, Fieller's interval; a price "
        "that is not known is shown as unknown, never 0; manifest: its digest, printed in full by "
        "`harness manifest LOG`"
    )
    return caption, head, body


def _tokens(ci: Interval, spec: str = ".1f") -> str:
    if math.isnan(ci.estimate):
        return ci.method
    return ci.text(spec)
