"""A suite's experimental design: declared once in the catalog, read by the comparison engine.

The design says what one observation of the analysis is (the unit), which units share
something (the cluster), what kind of number a unit's score is, and which task arguments and
spec fields only say where or how fast a run went. Nothing else decides these: the report, the
eval summary, the site and sequential stopping all read them from here.

- `unit`: what the analysis counts. A problem (a sample id, whatever its epochs), a chain, a
  trained seed, an instance, an item. A unit's score is the mean over its epochs and over the
  replicates of its configuration.
- `cluster`: where units nest, the sample metadata key naming the group a unit belongs to
  (mas-prove's grid cells within a chain, team's prompts within a trained seed). Intervals and
  paired tests then treat the clusters as the independent draws.
- `score`: "binary" (0/1 per unit and epoch), "bounded" (a score in `bounds`), "unbounded" (a
  loss, a count of steps). A binary design whose units average several epochs is bounded in
  [0, 1] for the engine; it says so in the method.
- `settings`: task arguments and spec fields that do not change the experiment. Two runs that
  differ only in these are the same configuration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

Unit = Literal["problem", "chain", "seed", "instance", "item", "run"]
ScoreType = Literal["binary", "bounded", "unbounded"]

# Task arguments that say where data lives, or where and how much runs at once: a data folder
# differs between machines; a sweep may move from local workers to a Ray cluster.
DEFAULT_SETTINGS = frozenset({"data_dir", "workers", "executor", "cpus_per_run", "display"})


@dataclass(frozen=True, slots=True)
class Design:
    """What a suite's numbers are computed over.

    Attributes:
        unit: The unit of analysis: every n the suite prints counts these.
        score: The type of a unit's score, which picks the interval and the paired test.
        cluster: Sample metadata key naming the cluster of a unit, where units nest; None
            when units are independent.
        bounds: The range of a bounded score (binary scores live in [0, 1]); intervals are
            clipped to it and say so.
        settings: Task arguments and spec fields that do not change the experiment.
        family: What one Holm family is, in words, for the report's captions.
        alpha: The family-wise error rate at which a pair reads "significant"
            (Holm-adjusted p <= alpha).

    """

    unit: Unit = "problem"
    score: ScoreType = "binary"
    cluster: str | None = None
    bounds: tuple[float, float] = (0.0, 1.0)
    settings: frozenset[str] = DEFAULT_SETTINGS
    family: str = "the pairs of models on one task"
    alpha: float = 0.05

    def __post_init__(self) -> None:
        """Refuse a design that names an unknown unit or score type, or empty bounds."""
        if self.unit not in get_args(Unit):
            raise ValueError(f"unit must be one of {get_args(Unit)}, got {self.unit!r}")
        if self.score not in get_args(ScoreType):
            raise ValueError(f"score must be one of {get_args(ScoreType)}, got {self.score!r}")
        low, high = self.bounds
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"bounds must be finite with low < high, got {self.bounds}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")

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
