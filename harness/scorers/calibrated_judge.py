"""A calibrated LLM judge: wraps any model-graded scorer and corrects its score with human labels.

Each sample's score value is `{"judge": 0|1, "human": 0|1|-1}`: the wrapped scorer's verdict,
and the human label from the labels file (-1 where the sample has none). Samples with a human
label form the calibration set; the others the test set. The `judge_corrected` metric is the
Rogan-Gladen estimate (specs/calibrated-judge.md; `harness.stats._judge_calibration`), beside the
naive share the judge calls correct. `harness eval` and `harness report` print both with their
intervals, computed from the per-sample values in the log.

Labels file: JSONL lines `{"id": SAMPLE_ID, "human": 0|1}`.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from harness.logs import HUMAN_LABEL_KEY, parse_score
from harness.scorers.judge_labels import read_labels
from harness.stats import CalibrationError, rogan_gladen_from_labels

UNLABELLED = -1


def split_verdicts(values: list[dict]) -> tuple[list[int], list[int], list[int]]:
    """Test verdicts (no human label), then calibration human labels and verdicts."""
    test = [int(v["judge"]) for v in values if v["human"] == UNLABELLED]
    human = [int(v["human"]) for v in values if v["human"] != UNLABELLED]
    judge = [int(v["judge"]) for v in values if v["human"] != UNLABELLED]
    return test, human, judge


@metric
def judge_naive() -> Metric:
    """Share of the test items (no human label) the judge calls correct, as the report's.

    Biased by the judge's errors; `harness.compare._scores.judge_scores` gives the same share
    with its interval from the log.
    """

    def compute(scores: list[SampleScore]) -> float:
        test, _, _ = split_verdicts([s.score.value for s in scores])  # type: ignore[misc]
        return sum(test) / len(test) if test else math.nan

    return compute


@metric
def judge_corrected() -> Metric:
    """Rogan-Gladen corrected share; nan when a guard refuses (see the report for why)."""

    def compute(scores: list[SampleScore]) -> float:
        test, human, judge = split_verdicts([s.score.value for s in scores])  # type: ignore[misc]
        if not test:
            return math.nan
        try:
            return rogan_gladen_from_labels(test, human, judge).estimate
        except CalibrationError:
            return math.nan

    return compute


@scorer(metrics=[judge_naive(), judge_corrected()])
def calibrated_judge(inner: Scorer, *, human_labels: str) -> Scorer:
    """Wrap a model-graded scorer; record its verdict and the human label of each sample.

    Args:
        inner: Any scorer whose value means correct (C, 1, True) or not, read by the one score
            parser, `harness.logs.parse_score` (>= 0.5 is "correct").
        human_labels: JSONL file of `{"id", "human": 0|1}` for some sample ids.

    Raises:
        ValueError: (in the sample, which then errors with this reason) the inner scorer gave
            no score, or one `parse_score` cannot read; an unreadable verdict is not a "wrong".

    """
    labels = read_labels(human_labels, ("human",))
    by_id = dict(zip(labels.ids, labels.columns["human"].tolist(), strict=True))

    async def score(state: TaskState, target: Target) -> Score:
        human = by_id.get(str(state.sample_id), UNLABELLED)
        if human != UNLABELLED:
            state.metadata[HUMAN_LABEL_KEY] = human
        verdict = await inner(state, target)
        value, reason = parse_score(verdict.value if verdict is not None else None)
        if reason:
            raise ValueError(f"calibrated_judge: the inner scorer's verdict is {reason}")
        judged = 1 if value >= 0.5 else 0
        return Score(
            value={"judge": judged, "human": human},
            answer=verdict.answer if verdict else None,
            explanation=verdict.explanation if verdict else None,
            metadata={"inner_value": verdict.value if verdict else None},
        )

    return score
