"""A suite's experimental design: declared once in the catalog, read by every consumer.

The design says what one observation of the analysis is (the unit), which units share
something (the cluster), what kind of number a unit's score is, where it can lie (its support),
which way is better (its direction), what an errored sample counts as (the error rule), which
metrics the eval summary shows (the headline), which pairs make one Holm family (the family
rule), and which task arguments and spec fields only say where or how fast a run went. Nothing
else decides these: the fixed and sequential engines, cost rows, the frontier, budgets, the
judge correction, the eval summary, the report and the site all read them from here.

- `unit`: what the analysis counts. A problem (a sample id, whatever its epochs), a chain, a
  trained seed, an instance, an item. A unit's score is the mean over its epochs and over the
  replicates of its configuration.
- `cluster`: where units nest, the sample metadata key naming the group a unit belongs to
  (mas-prove's grid cells within a chain, team's prompts within a trained seed). Intervals and
  paired tests then treat the clusters as the independent draws.
- `score`: "binary" (0/1 per unit and epoch), "bounded" (a score in `bounds`), "unbounded" (a
  loss, a count of steps). A binary design whose units average several epochs is bounded in
  [0, 1] for the engine; it says so in the method.
- `bounds`: the support. [0, 1] for binary scores; [lo, hi] for bounded ones; for unbounded
  ones (0, inf) when the quantity cannot be negative (seconds, tokens, dollars, counts, an
  entropy), else (-inf, inf). No interval leaves it.
- `direction`: "higher" or "lower" is better.
- `on_error`: what an errored sample counts as. "worst": the worst value of the support (0 for
  an accuracy, the upper bound of a bounded lower-is-better score); "exclude": left out of the
  estimate and counted, the row saying so (the only honest rule for an unbounded score with no
  worst value); "penalty": the declared `penalty`. Never a value that flatters: a "worst" rule
  needs a finite bound on the bad side, and a penalty must lie at that side of the support.
- `headline`: the metrics (scorer names) the eval summary shows; None: every scorer; (): the
  suite's result is a table, and the summary points to its section.
- `baseline`: the family rule. None: all pairs of arms; a name: each arm against that
  baseline arm. One family per metric (`per_metric`), or one over every metric of the log.
- `metrics`: per-metric designs where a suite's metrics differ in support, direction or error
  rule (`metric(name)`); a metric not named takes the design itself.
- `settings`: task arguments and spec fields that do not change the experiment. Two runs that
  differ only in these are the same configuration.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, get_args

Unit = Literal["problem", "chain", "seed", "instance", "item", "run"]
ScoreType = Literal["binary", "bounded", "unbounded"]
Direction = Literal["higher", "lower"]
ErrorRule = Literal["worst", "exclude", "penalty"]

# Task arguments that say where data lives, or where and how much runs at once: a data folder
# differs between machines; a sweep may move from local workers to a Ray cluster.
DEFAULT_SETTINGS = frozenset({"data_dir", "workers", "executor", "cpus_per_run", "display"})

UNIT_INTERVAL = (0.0, 1.0)
POSITIVE = (0.0, math.inf)
REAL = (-math.inf, math.inf)


@dataclass(frozen=True, slots=True)
class Design:
    """What a suite's numbers are computed over.

    Attributes:
        unit: The unit of analysis: every n the suite prints counts these.
        score: The type of a unit's score, which picks the interval and the paired test.
        cluster: Sample metadata key naming the cluster of a unit, where units nest; None
            when units are independent.
        bounds: The support of a unit's score as declared; None: [0, 1] for bounded scores,
            (-inf, inf) for unbounded ones; a binary score is always in [0, 1]. Infinite
            ends are allowed for unbounded scores. Read it as `support`.
        settings: Task arguments and spec fields that do not change the experiment.
        family: What one Holm family is, in words, for the report's captions.
        alpha: The family-wise error rate at which a pair reads "significant"
            (Holm-adjusted p <= alpha).
        direction: "higher" or "lower" is better.
        on_error: What an errored sample counts as, as declared; None: "worst" where the
            support has a finite bad end, else "exclude". Read it as `error_rule`.
        penalty: The value of an errored sample under the "penalty" rule.
        headline: The metrics the eval summary shows (None: all; (): none, see the section).
        baseline: The family rule: None, all pairs; a name, each arm against that arm.
        per_metric: Whether each metric is its own Holm family.
        metrics: (metric name, design) for metrics that differ from this design.
        section: `module:NAME` of the suite's report section (a `harness.sections.ReportSection`),
            or None. The catalog declares it beside the suite and `catalog_design` attaches it,
            so the report and the site read it from a log's record, never from the catalog.
        own_table: The section is the suite's table: no row in the generic score table and no
            generic pairs (needs a section).

    """

    unit: Unit = "problem"
    score: ScoreType = "binary"
    cluster: str | None = None
    bounds: tuple[float, float] | None = None
    settings: frozenset[str] = DEFAULT_SETTINGS
    family: str = "the pairs of models on one task"
    alpha: float = 0.05
    direction: Direction = "higher"
    on_error: ErrorRule | None = None
    penalty: float | None = None
    headline: tuple[str, ...] | None = None
    baseline: str | None = None
    per_metric: bool = True
    metrics: tuple[tuple[str, Design], ...] = ()
    section: str | None = None
    own_table: bool = False

    def __post_init__(self) -> None:
        """Refuse an unknown value, an empty support or a flattering error rule; fill defaults.

        The support and the error rule left to the default are filled from the score type.
        """
        if self.unit not in get_args(Unit):
            raise ValueError(f"unit must be one of {get_args(Unit)}, got {self.unit!r}")
        if self.score not in get_args(ScoreType):
            raise ValueError(f"score must be one of {get_args(ScoreType)}, got {self.score!r}")
        if self.direction not in get_args(Direction):
            raise ValueError(f"direction must be one of {get_args(Direction)}")
        low, high = self.support
        if math.isnan(low) or math.isnan(high) or not low < high:
            raise ValueError(f"bounds must have low < high, got {self.bounds}")
        if self.score == "bounded" and not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"a bounded score needs finite bounds, got {self.bounds}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        rule = self.error_rule
        if rule not in get_args(ErrorRule):
            raise ValueError(f"on_error must be one of {get_args(ErrorRule)}, got {rule!r}")
        if rule == "worst" and not math.isfinite(self.worst):
            raise ValueError(
                f"on_error 'worst' needs a finite {'lower' if self.higher else 'upper'} bound"
                f" (support {self.bounds}); use 'exclude' or a 'penalty'"
            )
        if rule == "penalty":
            p = self.penalty
            if p is None or not math.isfinite(p) or not low <= p <= high:
                raise ValueError(f"a penalty must be a finite value in the support, got {p}")
            best_side = p > self.worst if self.higher else p < self.worst
            if math.isfinite(self.worst) and best_side:
                raise ValueError(f"penalty {p} flatters: the worst value is {self.worst}")
        if self.own_table and not self.section:
            raise ValueError("own_table needs a section: the section is then the suite's table")
        names = [name for name, _ in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"a metric is declared twice in {names}")

    @property
    def higher(self) -> bool:
        """Whether a higher score is better."""
        return self.direction == "higher"

    @property
    def support(self) -> tuple[float, float]:
        """The support [low, high] (ends may be infinite): [0, 1] for a binary score."""
        if self.score == "binary":
            return UNIT_INTERVAL
        if self.bounds is None:
            return REAL if self.score == "unbounded" else UNIT_INTERVAL
        low, high = self.bounds
        return float(low), float(high)

    @property
    def error_rule(self) -> ErrorRule:
        """The declared error rule, or the default: "worst" where the bad end is finite."""
        if self.on_error is not None:
            return self.on_error
        return "worst" if math.isfinite(self.worst) else "exclude"

    @property
    def worst(self) -> float:
        """The worst value of the support (infinite when it is unbounded on that side)."""
        low, high = self.support
        return low if self.higher else high

    def error_value(self) -> float | None:
        """What an errored sample scores: a number, or None when it is excluded and counted."""
        if self.error_rule == "worst":
            return self.worst
        if self.error_rule == "penalty":
            return self.penalty
        return None

    def error_rule_text(self) -> str:
        """The error rule in words, for a row's method or a caption."""
        if self.error_rule == "worst":
            return f"errors count as {self.worst:g} (the worst value)"
        if self.error_rule == "penalty":
            return f"errors count as the declared penalty {self.penalty:g}"
        return "errored samples excluded and counted (no worst value)"

    def metric(self, name: str) -> Design:
        """The design of one metric: its own where declared, else this one."""
        for declared, design in self.metrics:
            if declared == name:
                return design
        return self

    def shows(self, name: str) -> bool:
        """Whether the eval summary shows metric `name` (a scorer name or a row's metric)."""
        if self.headline is None:
            return True
        return any(name == h or name.startswith(f"{h} ") or f"({h})" in name
                   for h in self.headline)  # fmt: skip

    def pairs(self, arms: Sequence[str]) -> list[tuple[str, str]]:
        """The family rule expanded over these arms: every pair, or each against the baseline.

        With a baseline that is not among the arms, there is no pair to test.
        """
        names = sorted(dict.fromkeys(arms))
        if self.baseline is None:
            return list(combinations(names, 2))
        if self.baseline not in names:
            return []
        return [(a, self.baseline) for a in names if a != self.baseline]

    def with_metric(self, name: str, **changes: object) -> Design:
        """A copy that declares metric `name` as this design with `changes`."""
        own = dataclasses.replace(self.metric(name), metrics=(), **changes)  # type: ignore[arg-type]
        rest = tuple((n, d) for n, d in self.metrics if n != name)
        return dataclasses.replace(self, metrics=(*rest, (name, own)))

    def summary(self) -> str:
        """One line, for example `unit: problem; score: binary; Holm over the pairs ...`."""
        cluster = f", clustered by {self.cluster}" if self.cluster else ""
        return (
            f"unit: {self.unit}{cluster}; score: {self.score}; "
            f"Holm over {self.family} at {self.alpha:g}"
        )


def rejects(p_value: float, alpha: float) -> bool:
    """The one decision rule: reject when p <= alpha; a p that was not tested (nan) never does."""
    return not math.isnan(p_value) and p_value <= alpha
