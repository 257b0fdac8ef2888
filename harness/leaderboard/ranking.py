"""Per-task leaderboard tables: scores with intervals, Holm-corrected pairwise tests, honest ranks.

- Score: the mean over samples with its 95% interval (Wilson for 0/1 scores, t otherwise), as
  `harness eval` prints it; errored samples count as wrong.
- Pairs: every two models on the samples both have, McNemar's exact test for 0/1 scores and a
  paired bootstrap otherwise (`harness.stats.paired`), Holm-corrected over the task's pairs.
- Rank (ours): 1 + the number of models significantly better (Holm p < alpha and a higher
  score). Models no test separates therefore share a rank.
- Significance groups (ours, a compact letter display restricted to runs of the score order):
  each maximal run of consecutive models, in score order, in which no pair differs significantly
  gets a letter. Two models sharing a letter are not separated by the tests.
- Judge-corrected scores: for a calibrated judge (`harness.scorers.calibrated_judge`), the
  naive share (Wilson) and the Rogan-Gladen estimate with its interval, or why it is refused.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from harness.leaderboard.collect import LogEntry
from harness.stats.intervals import Interval, t_interval, wilson
from harness.stats.multiple import holm
from harness.stats.paired import mcnemar, paired_bootstrap_diff


@dataclass(frozen=True)
class JudgeScores:
    """A calibrated judge's naive and corrected shares."""

    naive: Interval  # the judge's raw share of positives, Wilson
    corrected: Interval | None  # Rogan-Gladen estimate and interval; None when refused
    refused: str = ""  # why the correction was refused


@dataclass(frozen=True)
class ModelRow:
    """One model on one task."""

    model: str  # model spec
    score: Interval  # mean score and its 95% interval
    n: int  # samples (problems) scored
    errors: int  # errored samples
    rank: int  # 1 + models significantly better
    groups: str  # significance-group letters
    log: str  # the log file
    judge: JudgeScores | None = None  # for calibrated-judge tasks


@dataclass(frozen=True)
class PairResult:
    """Model a against model b on their shared samples."""

    model_a: str  # first model
    model_b: str  # second model
    diff: float  # mean score a - b on the shared samples
    low: float  # lower end of the paired 95% interval
    high: float  # upper end
    p: float  # raw p-value (nan: fewer than two shared samples)
    p_holm: float  # Holm-corrected over the task's pairs (nan: not tested)
    method: str  # the paired test
    n: int  # shared samples


@dataclass(frozen=True)
class TaskTable:
    """Everything a suite page shows for one task."""

    suite: str  # suite name
    task: str  # task name
    rows: tuple[ModelRow, ...]  # best score first
    pairs: tuple[PairResult, ...]  # every pair of models
    alpha: float  # the family-wise error rate of the Holm correction

    def p_holm(self, a: str, b: str) -> float:
        """Holm-corrected p-value between two models (symmetric; nan when untested)."""
        for p in self.pairs:
            if {p.model_a, p.model_b} == {a, b}:
                return p.p_holm
        return math.nan


def score_interval(values: list[float]) -> Interval:
    """Wilson for 0/1 scores, t over samples otherwise."""
    if all(v in (0.0, 1.0) for v in values):
        return wilson(int(sum(values)), len(values))
    return t_interval(values)


def _judge_scores(verdicts: tuple[dict[str, int], ...]) -> JudgeScores:
    from harness.scorers.calibrated_judge import split_verdicts
    from harness.stats.judge_calibration import CalibrationError, rogan_gladen_from_labels

    test, human, judge = split_verdicts(list(verdicts))
    naive = wilson(sum(test), len(test))
    try:
        est = rogan_gladen_from_labels(test, human, judge)
    except (CalibrationError, ValueError) as ex:
        return JudgeScores(naive, None, str(ex))
    return JudgeScores(
        naive, Interval(est.estimate, est.low, est.high, 0.95, "rogan-gladen", len(test))
    )


def _pair(a: LogEntry, b: LogEntry) -> tuple[float, float, float, float, str, int]:
    shared = sorted(set(a.values) & set(b.values))
    if len(shared) < 2:
        return math.nan, math.nan, math.nan, math.nan, "not tested (< 2 shared samples)", 0
    x = np.array([a.values[i] for i in shared])
    y = np.array([b.values[i] for i in shared])
    binary = bool(np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all())
    test = mcnemar(x, y) if binary else paired_bootstrap_diff(x, y)
    return test.estimate, test.low, test.high, test.p_value, test.method, len(shared)


def _groups(order: list[str], separated: set[frozenset[str]]) -> dict[str, str]:
    """Letters for maximal runs of the score order in which no pair is separated."""
    runs: list[tuple[int, int]] = []
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and not any(
            frozenset((order[m], order[j + 1])) in separated for m in range(i, j + 1)
        ):
            j += 1
        if not runs or j > runs[-1][1]:  # a run inside the previous one adds nothing
            runs.append((i, j))
    letters = string.ascii_lowercase
    out = {m: "" for m in order}
    for r, (i, j) in enumerate(runs):
        for m in order[i : j + 1]:
            out[m] += letters[r % 26] if r < 26 else f"{letters[r % 26]}{r // 26}"
    return out


def task_table(entries: list[LogEntry], alpha: float = 0.05) -> TaskTable:
    """The table of one task: entries are the task's logs, one per model."""
    by_model = {e.model: e for e in entries}
    scores = {m: score_interval(list(e.values.values())) for m, e in by_model.items()}
    order = sorted(by_model, key=lambda m: (-scores[m].estimate, m))
    raw = [(a, b, *_pair(by_model[a], by_model[b])) for a, b in combinations(order, 2)]
    tested = [r for r in raw if not math.isnan(r[5])]
    adjusted = dict(
        zip(
            [(r[0], r[1]) for r in tested],
            holm([r[5] for r in tested], alpha=alpha).adjusted if tested else (),
            strict=True,
        )
    )
    pairs = tuple(
        PairResult(a, b, d, lo, hi, p, adjusted.get((a, b), math.nan), method, n)
        for a, b, d, lo, hi, p, method, n in raw
    )
    separated = {frozenset((p.model_a, p.model_b)) for p in pairs if p.p_holm < alpha}
    groups = _groups(order, separated)
    rows = []
    for m in order:
        better = sum(
            1
            for other in order
            if frozenset((m, other)) in separated and scores[other].estimate > scores[m].estimate
        )
        e = by_model[m]
        rows.append(
            ModelRow(
                model=m,
                score=scores[m],
                n=len(e.values),
                errors=e.errors,
                rank=1 + better,
                groups=groups[m],
                log=e.path,
                judge=_judge_scores(e.judge) if e.judge else None,
            )
        )
    first = entries[0]
    return TaskTable(first.suite, first.task, tuple(rows), pairs, alpha)


def task_tables(entries: list[LogEntry], alpha: float = 0.05) -> list[TaskTable]:
    """One table per task, sorted by suite and task."""
    by_task: dict[tuple[str, str], list[LogEntry]] = {}
    for e in entries:
        by_task.setdefault((e.suite, e.task), []).append(e)
    return [task_table(v, alpha) for _, v in sorted(by_task.items())]
