"""Cost and latency rows: tokens, dollars and time per unit, each with its interval.

Every number is read from what inspect records per sample, never from a price table of ours:
`model_usage` (tokens by model; `total_cost` in dollars where a price was known, from
`--model-cost-config` or inspect's model database) and the sample's `working_time`. A unit's
value is its mean over its epochs (and the replicates of its configuration), as for scores;
the interval runs over the suite's declared unit (and its clusters) through the comparison
engine's `estimate`, under `cost_measure(design)`: an unbounded quantity with support (0, inf),
lower is better. Its interval is the t interval (clustered t where the design clusters) moved to
the log scale of the mean, which never passes 0 and reaches further above a skewed mean than
below it; the method says so. A t interval on the raw scale read 0.173 [-0.131, 0.476] working
seconds on a skewed log.

- tokens: input (inspect's input tokens plus cache reads and writes), output, reasoning (where
  the provider reports it, else "not reported").
- dollars per unit: the sum of `total_cost` over a sample's models. When a model that was called
  has no price, the row's dollars are unknown and say so: never 0. A sample that called no
  model (it errored first) spent nothing, but where no sample of the arm called a model (a
  suite that trains its own, run on `none/none`) dollars and tokens are unknown, never 0.
- dollars per correct answer: mean dollars / mean correct over units (`harness.stats._ratio`),
  Fieller's interval (the delta method's pivot inverted), "not estimable" below its coverage
  thresholds (20 units, 10 correct answers), saying which one it is.
- latency: working seconds per unit (inspect's `working_time`: time spent, waits for a
  connection left out), and time to first token where the provider reports it in the sample's
  metadata (`time_to_first_token`); inspect-ai 0.3.285's own providers do not, so it usually
  reads "not reported".

Wrapped methods (`pdr/`, `sr/`, `suco/`) make their inner calls through inspect, so their
usage and dollars count every call, as the budgets' B_total does.

Notes:
    Coverage of the log-scale interval (tests/test_cost_rows.py), per-unit values lognormal
    with sigma 0.5: 93.7% at n = 12, 94.6% at n = 60 (15000 draws; the misses lie mostly above
    the upper end). With heavier tails (sigma 1): about 90% at n = 12 and 92% at n = 60, where a
    raw-scale t covers 86% and 90% and passes below 0.

"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.compare import design_of, first_scorer, problem_means, unit_clusters
from harness.logs import LogRecord, SampleScore
from harness.outside_numbers import check_number
from harness.stats import POSITIVE, Design, Interval, estimate, ratio_of_means

TOKEN_KINDS = ("input", "output", "reasoning")  # shown; "total" (input + output) is kept too
TTFT_KEY = "time_to_first_token"  # sample metadata a provider may fill (seconds)
NO_CALL = "unknown: no model call recorded"  # an arm none of whose samples called a model


MAX_SAMPLE_DOLLARS = 1e6  # one model's dollars for one sample: more is damage, not a price
MAX_SAMPLE_TOKENS = 1e12  # one model's tokens for one sample
TOKEN_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
                "input_tokens_cache_write", "reasoning_tokens")  # fmt: skip


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def usage_problems(usage: dict[str, Any]) -> list[str]:
    """Why a sample's recorded usage is not numbers: each field that is present but invalid.

    A log is someone else's file: a `total_cost` must be dollars in [0, MAX_SAMPLE_DOLLARS]
    and a token count a whole number in [0, MAX_SAMPLE_TOKENS] (`harness.outside_numbers`).
    An absent or null `total_cost` is no price, which is not a problem here.
    """
    problems = []
    for name, u in usage.items():
        if not isinstance(u, dict):
            problems.append(f"{name}: usage is a {type(u).__name__}, not a mapping")
            continue
        for key in TOKEN_FIELDS:
            if u.get(key) is not None:
                checked = check_number(u[key], low=0, high=MAX_SAMPLE_TOKENS, integer=True)
                if not checked.ok:
                    problems.append(f"{name} {key} {checked.reason}")
        if u.get("total_cost") is not None:
            checked = check_number(u["total_cost"], low=0.0, high=MAX_SAMPLE_DOLLARS)
            if not checked.ok:
                problems.append(f"{name} total_cost {checked.reason}")
    return problems


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
                  if isinstance(u, dict) and u.get("total_cost") is None)  # fmt: skip


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
    called: bool = True  # some sample recorded a model's usage (False: tokens, $ unknown)
    invalid: str = ""  # why the recorded usage is not numbers ("": it is); then tokens, $ unknown


def _invalid(records: Sequence[LogRecord]) -> str:
    """The first usage problem of an arm's samples, naming the sample ("" when none)."""
    for record in records:
        for s in record.samples:
            if problems := usage_problems(s.usage):
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                return f"invalid: sample {s.id[:40]} {problems[0]}{more}"
    return ""


def unit_costs(records: Sequence[LogRecord]) -> UnitCosts:
    """The per-unit numbers of one arm (one log, or the replicates of a configuration).

    Usage a log records that is not numbers (`usage_problems`) leaves the arm's tokens and
    dollars unknown, with the reason: never summed, never published.
    """
    invalid = _invalid(records)
    unpriced = sorted({m for r in records for s in r.samples for m in unpriced_models(s.usage)})
    called = any(s.usage for r in records for s in r.samples)
    tokens = {k: ({} if invalid else unit_values(records, lambda s, k=k: sample_tokens(s.usage)[k]))
              for k in (*TOKEN_KINDS, "total")}  # fmt: skip
    dollars = None if invalid or unpriced or not called else unit_values(
        records, lambda s: sample_dollars(s.usage))  # fmt: skip
    return UnitCosts(
        correct=problem_means(list(records), first_scorer(records)),
        tokens=tokens,
        dollars=dollars,
        unpriced=tuple(unpriced),
        seconds=unit_values(records, lambda s: s.working_time),
        ttft=unit_values(records, lambda s: _ttft(s.metadata.get(TTFT_KEY))),
        called=called,
        invalid=invalid,
    )


def _ttft(value: Any) -> float:
    """A sample's time to first token in seconds, nan where absent or not a time."""
    return (
        float(checked.value) if (checked := check_number(value, low=0.0, high=1e7)).ok else math.nan
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


def cost_measure(design: Design) -> Design:
    """The design of a cost or latency quantity under a suite's design.

    Same unit and cluster; an unbounded quantity in (0, inf) where lower is better, so the
    engine's `estimate` gives its log-scale interval, clustered where the design clusters.
    """
    return Design(design.unit, "unbounded", cluster=design.cluster, bounds=POSITIVE,
                  alpha=design.alpha, direction="lower")  # fmt: skip


def positive_interval(
    design: Design,
    values: Mapping[str, float],
    clusters: Mapping[str, str] | None,
    missing: str,
) -> Interval:
    """A positive quantity's mean over the units that have one (nan ones left out), 95% CI.

    Args:
        design: The suite's design (its unit and cluster).
        values: Each unit's value (nan: none recorded).
        clusters: Each unit's cluster, where the design clusters units.
        missing: The reason to give when no unit has a value.

    """
    units = sorted(u for u, v in values.items() if not math.isnan(v))
    if not units:
        return Interval(math.nan, math.nan, math.nan, 0.95, missing, 0)
    labels = [clusters[u] for u in units] if clusters else None
    return estimate(cost_measure(design), [values[u] for u in units], labels)


def cost_row(records: Sequence[LogRecord], design: Design | None = None) -> CostRow:
    """The cost row of one arm (one log, or replicates pooled)."""
    from harness.eval import manifest_of

    first = records[0]
    design = design or design_of(first)
    clusters = unit_clusters(records, design)
    costs = unit_costs(records)
    missing = ("invalid usage (see $)" if costs.invalid else
               "not reported" if costs.called else NO_CALL)  # fmt: skip
    tokens = {k: positive_interval(design, v if costs.called else {}, clusters, missing)
              for k, v in costs.tokens.items()}  # fmt: skip
    if costs.dollars is None:
        why = costs.invalid or (
            f"unknown: no price for {', '.join(costs.unpriced)} (--model-cost-config)"
            if costs.called else NO_CALL)  # fmt: skip
        dollars = per_correct = Interval(
            math.nan, math.nan, math.nan, 0.95, why, len(costs.correct)
        )
    else:
        dollars = positive_interval(design, costs.dollars, clusters, "no sample")
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
        seconds=positive_interval(design, costs.seconds, clusters, "no working time in the log"),
        ttft=positive_interval(design, costs.ttft, clusters, "not reported by the provider"),
        log=", ".join(r.path for r in records),
        manifest=manifest.digest if manifest is not None else "",
        unpriced=costs.unpriced,
    )  # fmt: skip


def money(ci: Interval) -> str:
    """Dollars with an interval, in a precision that shows cents of a cent; the reason if none.

    Without an interval the estimate is followed by the method's reason (`0.200000 (not
    estimable: 3 correct answers, fewer than 10)`), not only by n.
    """
    if math.isnan(ci.estimate):
        return ci.method
    digits = 2 if ci.estimate >= 1 else 6
    if not ci.estimable and ci.method.startswith("not estimable"):
        return f"{ci.estimate:.{digits}f} ({ci.method})"
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
        f"Cost and latency per {unit} with 95% intervals over {unit}s (t on the log scale of the "
        "mean, which never passes 0; clustered t where the design clusters); $ per correct = "
        "mean $ / mean correct, Fieller's interval; a price that is not known is shown as "
        "unknown, never 0; manifest: its digest, printed in full by `harness manifest LOG`"
    )
    return caption, head, body


def _tokens(ci: Interval, spec: str = ".1f") -> str:
    if math.isnan(ci.estimate):
        return ci.method
    return ci.text(spec)
