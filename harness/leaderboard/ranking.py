"""Per-task leaderboard tables: scores with intervals, Holm-corrected pairwise tests, honest ranks.

- Score: the mean over the suite's unit with its 95% interval, as `harness eval` prints it
  (`harness.compare._scores`; replicates of one configuration pooled); errors count as wrong.
- Pairs: every two models on the units both have, from the comparison engine
  (`harness.compare._pairs.group_pairs`), Holm-corrected over the task's pairs.
- Rank (ours): 1 + the number of models significantly better (Holm p <= alpha, the one rule
  of `harness.stats._design.rejects`, and a higher score). Models no test separates therefore
  share a rank.
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

from harness.compare import (
    Group,
    JudgeScores,
    SummaryRow,
    arm_rows,
    first_scorer,
    group_pairs,
    record_judge,
)
from harness.logs import LogRecord
from harness.stats import Interval, rejects


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
    flagged: int = 0  # units with an integrity flag (SWE tampering), shown beside errors
    tampered: str = ""  # why its log does not match its own manifest ("" if it does), shown


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


def _interval(row: SummaryRow) -> Interval:
    return Interval(row.value, row.ci_low, row.ci_high, 0.95, row.ci_method, row.n)


def task_table(group: Group, alpha: float = 0.05) -> TaskTable:
    """The table of one group of comparable logs, one per model.

    Each model's score, n and errors are its first score row, exactly as `harness eval` and
    `harness report` print them; a calibrated judge's naive and corrected shares come from the
    same function (`harness.compare._scores.judge_scores`).
    """
    by_model = group.arms
    first_rows = {m: arm_rows(records)[0] for m, records in by_model.items()}
    scores = {m: _interval(row) for m, row in first_rows.items()}
    # best first, in the direction the design declares (lower is better for a latency)
    sign = 1.0 if group.design.metric(first_scorer(group.records)).higher else -1.0
    order = sorted(by_model, key=lambda m: (-_key(sign * scores[m].estimate), m))
    pairs = tuple(
        PairResult(
            p.model_a, p.model_b,
            p.test.estimate if p.test else math.nan,
            p.test.low if p.test else math.nan,
            p.test.high if p.test else math.nan,
            p.p, p.p_holm,
            p.test.method if p.test else p.note,
            p.test.n if p.test else 0,
        )
        for p in group_pairs(group)
    )  # fmt: skip
    # a pair a `--until decided` run resolved by direction is separated at the run's alpha
    # (anytime-valid, Bonferroni over its pairs); every other pair by its Holm p
    separated = {
        frozenset((p.model_a, p.model_b))
        for p in pairs
        if rejects(p.p_holm, alpha) or p.method.startswith(("a > b after", "b > a after"))
    }
    groups = _groups(order, separated)
    rows = []
    for m in order:
        better = sum(
            1
            for other in order
            if frozenset((m, other)) in separated
            and sign * scores[other].estimate > sign * scores[m].estimate
        )
        records = by_model[m]
        rows.append(
            ModelRow(
                model=m,
                score=scores[m],
                n=first_rows[m].n,
                errors=first_rows[m].errors,
                rank=1 + better,
                groups=groups[m],
                log=first_rows[m].log,
                judge=_judge(records),
                flagged=first_rows[m].flagged,
                tampered=first_rows[m].tampered,
            )
        )
    return TaskTable(group.suite, group.label, tuple(rows), pairs, alpha)


def _key(x: float) -> float:
    return -math.inf if math.isnan(x) else x


def _judge(records: tuple[LogRecord, ...]) -> JudgeScores | None:
    judged = record_judge(records)
    return judged[0] if judged else None


def task_tables(groups: list[Group], alpha: float = 0.05) -> list[TaskTable]:
    """One table per group of comparable logs, sorted by suite and label."""
    return [task_table(g, alpha) for g in sorted(groups, key=lambda g: (g.suite, g.label))]
