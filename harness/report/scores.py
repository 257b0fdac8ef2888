"""A log's score rows: n, errors, the score and its 95% interval, one row per metric.

`harness eval`'s summary, `harness report` and the leaderboard all print these rows, so one log
gives the same numbers everywhere.

- n counts problems (sample ids); `errors` counts problems with at least one errored epoch, in
  the same unit. A sample errors when its solver or model call raised, or when its score cannot
  be read as a number (None, NaN, an unknown string): that is an error with its reason, and it
  counts as wrong.
- Binary scores with one epoch get a Wilson interval; with several epochs each problem's mean
  and the unbiased pass@K get t intervals over problems; other scores a t interval over
  problems.
- A calibrated judge's verdicts give the naive share and the Rogan-Gladen corrected one
  (`judge_scores`); an errored sample there is a test item the judge calls wrong.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from harness.logs import LogRecord, judge_verdict, parse_score
from harness.stats.intervals import Interval, t_interval, wilson
from harness.stats.pass_at_k import pass_at_k

UNLABELLED = -1  # a verdict's `human` where the sample has no human label (a test item)


@dataclass(frozen=True)
class SummaryRow:
    """One score line of `harness eval` and `harness report`."""

    suite: str  # suite name
    task: str  # task name
    model: str  # model spec (with its arguments, where it has any)
    metric: str  # "accuracy" (with several scorers, "accuracy (SCORER)"), "pass@K",
    # "judge (naive)", "judge (corrected)", or the scorer's name
    n: int  # problems scored (errored ones included)
    errors: int  # problems with an errored epoch (raised, or a score that cannot be read)
    value: float  # the score
    ci_low: float  # lower end of the 95% interval
    ci_high: float  # upper end of the 95% interval
    ci_method: str  # how the interval was made
    log: str  # the inspect log it came from

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (nan becomes None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


@dataclass(frozen=True)
class JudgeScores:
    """A calibrated judge's naive and corrected shares over the test items."""

    naive: Interval  # share of test items the judge calls correct, Wilson
    corrected: Interval  # Rogan-Gladen estimate and interval; nan when refused
    refused: str  # why the correction was refused ("" when it was made)
    n_test: int  # test items (no human label), errored samples included
    n_calibration: int  # items with a human label


def judge_scores(verdicts: list[tuple[dict[str, int] | None, bool]]) -> JudgeScores:
    """Naive and corrected judge shares from (verdict, errored) per sample.

    The one rule for errors: an errored sample, or one without a verdict, is a test item the
    judge calls wrong (judge 0), whatever its human label; calibration items are the samples
    that finished with a human label. Both shares are over the test items only.
    """
    from harness.stats.judge_calibration import CalibrationError, rogan_gladen_from_labels

    test: list[int] = []
    human: list[int] = []
    judge: list[int] = []
    for verdict, errored in verdicts:
        if errored or verdict is None:
            test.append(0)
        elif verdict["human"] == UNLABELLED:
            test.append(int(verdict["judge"]))
        else:
            human.append(int(verdict["human"]))
            judge.append(int(verdict["judge"]))
    naive = wilson(sum(test), len(test)) if test else _nan_interval("no test items", 0)
    try:
        est = rogan_gladen_from_labels(test, human, judge)
        corrected = Interval(est.estimate, est.low, est.high, 0.95, "rogan-gladen", len(test))
        refused = ""
    except (CalibrationError, ValueError) as ex:
        refused = str(ex)
        corrected = _nan_interval(f"refused: {ex}", len(test))
    return JudgeScores(naive, corrected, refused, len(test), len(human))


def _nan_interval(method: str, n: int) -> Interval:
    return Interval(math.nan, math.nan, math.nan, 0.95, method, n)


def per_problem(record: LogRecord, scorer: str) -> dict[str, list[tuple[float, str]]]:
    """Each problem's (value, error reason) per epoch for one scorer; errored samples are 0."""
    out: dict[str, list[tuple[float, str]]] = {}
    for s in record.samples:
        raw = dict(s.raw)
        if s.error:
            value, reason = 0.0, s.error
        elif scorer not in raw:
            value, reason = 0.0, f"no score from {scorer}"
        else:
            value, reason = parse_score(raw[scorer])
        out.setdefault(s.id, []).append((value, reason))
    return out


def problem_means(record: LogRecord, scorer: str | None = None) -> dict[str, float]:
    """Each problem's mean score over its epochs, errored epochs as 0 (for paired tests)."""
    scorer = scorer or (record.scorers[0] if record.scorers else "")
    return {sid: sum(v for v, _ in vs) / len(vs) for sid, vs in per_problem(record, scorer).items()}


def error_reasons(record: LogRecord) -> Counter[str]:
    """How many sample-epochs errored, by reason (each counted once, whatever its scorers)."""
    reasons: Counter[str] = Counter()
    for s in record.samples:
        if s.error:
            reasons[s.error] += 1
            continue
        unread = [parse_score(value)[1] for _, value in s.raw]
        first = next((reason for reason in unread if reason), "")
        if first:
            reasons[first] += 1
    return reasons


def record_judge(record: LogRecord, scorer: str | None = None) -> tuple[JudgeScores, int] | None:
    """A calibrated judge's scores of a log and its errored samples; None if no judge scored.

    With no scorer named, the first scorer that logged judge verdicts.
    """
    for name in [scorer] if scorer else record.scorers:
        raws = [dict(s.raw).get(name) for s in record.samples]
        if any(judge_verdict(v) is not None for v in raws):
            verdicts = [
                (judge_verdict(v), bool(s.error)) for v, s in zip(raws, record.samples, strict=True)
            ]
            errors = sum(1 for verdict, errored in verdicts if errored or verdict is None)
            return judge_scores(verdicts), errors
    return None


def score_rows(record: LogRecord) -> list[SummaryRow]:
    """The summary rows of one log, one or more per scorer."""
    rows: list[SummaryRow] = []
    for scorer in record.scorers:
        judged = record_judge(record, scorer)
        if judged is not None:
            scores, errors = judged
            rows.append(_row(record, "judge (naive)", scores.naive, scores.n_test, errors))
            rows.append(_row(record, "judge (corrected)", scores.corrected, scores.n_test, errors))
            continue
        problems = per_problem(record, scorer)
        n = len(problems)
        errors = sum(1 for vs in problems.values() if any(reason for _, reason in vs))
        values = {sid: [v for v, _ in vs] for sid, vs in problems.items()}
        binary = all(v in (0.0, 1.0) for vs in values.values() for v in vs)
        # a log with several scorers names each one's accuracy, so its rows tell them apart
        label = "accuracy" if len(record.scorers) == 1 else f"accuracy ({scorer})"
        metric = label if binary else scorer
        epochs = max(len(vs) for vs in values.values())
        if epochs == 1 and binary:
            correct = int(sum(vs[0] for vs in values.values()))
            rows.append(_row(record, metric, wilson(correct, n), n, errors))
            continue
        means = [sum(vs) / len(vs) for vs in values.values()]
        rows.append(_row(record, metric, t_interval(means), n, errors))
        if binary and epochs > 1:
            passes = [pass_at_k(len(vs), int(sum(vs)), epochs) for vs in values.values()]
            at_k = f"pass@{epochs}" if len(record.scorers) == 1 else f"pass@{epochs} ({scorer})"
            rows.append(_row(record, at_k, t_interval(passes), n, errors))
    return rows


def _row(record: LogRecord, metric: str, ci: Interval, n: int, errors: int) -> SummaryRow:
    return SummaryRow(
        suite=record.suite,
        task=record.task,
        model=record.model,
        metric=metric,
        n=n,
        errors=errors,
        value=ci.estimate,
        ci_low=ci.low,
        ci_high=ci.high,
        ci_method=ci.method,
        log=record.path,
    )
