"""The MSC of every trajectory in a log, and its summary by difficulty quartile.

Per trajectory: C(x) is the percentile rank of its length in sentences among the log's
trajectories, δ(x) = δ0 + α·C(x), S is computed for each sentence prefix with a calibrator, and
t* is the MSC (`harness.suco.msc`). The difficulty bucket is the quartile of C: Q1 for
C <= 0.25, up to Q4 for C > 0.75. Savings are 1 - MSC length / full length, in sentences and in
characters; they are None for an empty CoT.

The scoring template, the splitter and δ0 = 0.6, α = 0.3 are ours (spec suco.md §4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.suco.calibrator import Calibrator
from harness.suco.msc import find_msc
from harness.suco.segment import sentence_ends
from harness.suco.sufficiency import ScoringTemplate, score_prefixes
from harness.suco.threshold import ALPHA, DELTA0, adaptive_delta, percentile_ranks
from harness.suco.trajectories import Trajectory

BUCKETS = ("Q1", "Q2", "Q3", "Q4")


@dataclass(frozen=True, slots=True)
class MSCRow:
    """The MSC of one trajectory."""

    id: str  # sample id
    epoch: int  # sample epoch
    n_sentences: int  # T, sentences in the full CoT
    t_star: int  # sentences in the MSC
    reached: bool  # S(z_{<=t*}) >= delta (else the argmax fallback)
    score: float  # S(z_{<=t*})
    delta: float  # the sample's threshold
    C: float  # percentile rank of the CoT length in the log
    bucket: str  # difficulty quartile of C, Q1..Q4
    msc_chars: int  # characters in the MSC
    full_chars: int  # characters in the full CoT
    saving_sentences: float | None  # 1 - t*/T; None when T = 0
    saving_chars: float | None  # 1 - msc_chars/full_chars; None for an empty CoT
    correct: bool | None  # the log's score, None when unscored
    scores: tuple[float, ...]  # S(z_{<=t}) for t = 0..T

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, floats rounded to 6 places."""
        row = asdict(self)
        for key, value in row.items():
            if isinstance(value, float):
                row[key] = round(value, 6)
        row["scores"] = [round(s, 6) for s in self.scores]
        return row


def bucket_of(c: float) -> str:
    """Q1 for C <= 0.25, Q2 for C <= 0.5, Q3 for C <= 0.75, else Q4."""
    return BUCKETS[min(3, max(0, math.ceil(4 * c - 1e-9) - 1))]


def msc_rows(
    trajectories: Sequence[Trajectory],
    calibrator: Calibrator,
    template: ScoringTemplate,
    delta0: float = DELTA0,
    alpha: float = ALPHA,
    advance: Callable[[], None] | None = None,
) -> list[MSCRow]:
    """The MSC row of each trajectory; `advance` is called once per finished trajectory."""
    ends = [sentence_ends(t.cot) for t in trajectories]
    complexity = percentile_ranks([len(e) for e in ends])
    deltas = adaptive_delta(complexity, delta0, alpha)
    rows = []
    for traj, e, c, d in zip(trajectories, ends, complexity, deltas, strict=True):
        scores = score_prefixes(calibrator, traj.prompt, traj.cot, traj.gold, template)
        res = find_msc(scores, float(d))
        n, full = len(e), len(traj.cot)
        msc_chars = e[res.t_star - 1] if res.t_star else 0
        rows.append(
            MSCRow(
                id=traj.id,
                epoch=traj.epoch,
                n_sentences=n,
                t_star=res.t_star,
                reached=res.reached,
                score=res.score,
                delta=float(d),
                C=float(c),
                bucket=bucket_of(float(c)),
                msc_chars=msc_chars,
                full_chars=full,
                saving_sentences=1 - res.t_star / n if n else None,
                saving_chars=1 - msc_chars / full if full else None,
                correct=traj.correct,
                scores=tuple(scores),
            )
        )
        if advance is not None:
            advance()
    return rows


@dataclass(frozen=True, slots=True)
class BucketSummary:
    """Means over the rows of one difficulty bucket (or all rows)."""

    bucket: str  # Q1..Q4, or "all"
    n: int  # rows
    full_sentences: float  # mean T
    msc_sentences: float  # mean t*
    full_chars: float  # mean full CoT characters
    msc_chars: float  # mean MSC characters
    saving_sentences: float  # mean saving in sentences over rows with T > 0 (nan if none)
    saving_chars: float  # mean saving in characters over rows with a CoT (nan if none)
    reached: float  # share of rows whose MSC reached the threshold


def _mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else math.nan


def summarize(rows: Sequence[MSCRow]) -> list[BucketSummary]:
    """One summary per non-empty bucket, then one over all rows."""
    groups = [(b, [r for r in rows if r.bucket == b]) for b in BUCKETS]
    out = []
    for name, group in [*((b, g) for b, g in groups if g), ("all", list(rows))]:
        out.append(
            BucketSummary(
                bucket=name,
                n=len(group),
                full_sentences=_mean([r.n_sentences for r in group]),
                msc_sentences=_mean([r.t_star for r in group]),
                full_chars=_mean([r.full_chars for r in group]),
                msc_chars=_mean([r.msc_chars for r in group]),
                saving_sentences=_mean([r.saving_sentences for r in group]),
                saving_chars=_mean([r.saving_chars for r in group]),
                reached=_mean([float(r.reached) for r in group]),
            )
        )
    return out


def render_table(summary: Sequence[BucketSummary]) -> str:
    """A plain-text table of the summary."""

    def num(x: float, fmt: str) -> str:
        return "-" if math.isnan(x) else format(x, fmt)

    head = (
        f"{'bucket':<6} {'n':>5} {'full sent':>9} {'MSC sent':>8} {'full chars':>10} "
        f"{'MSC chars':>9} {'saving sent':>11} {'saving chars':>12} {'reached':>7}"
    )
    lines = [head, "-" * len(head)]
    for s in summary:
        lines.append(
            f"{s.bucket:<6} {s.n:>5} {num(s.full_sentences, '.1f'):>9} "
            f"{num(s.msc_sentences, '.1f'):>8} {num(s.full_chars, '.0f'):>10} "
            f"{num(s.msc_chars, '.0f'):>9} {num(s.saving_sentences, '.1%'):>11} "
            f"{num(s.saving_chars, '.1%'):>12} {num(s.reached, '.0%'):>7}"
        )
    return "\n".join(lines)


def summary_json(summary: Sequence[BucketSummary]) -> list[dict[str, Any]]:
    """The summary as JSON-ready dicts (nan as None)."""
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(s).items()}
        for s in summary
    ]
