"""The calibrated-judge scorer: a noisy judge's score corrected with human labels."""

import json

import numpy as np
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
from inspect_ai.solver import generate

from harness.compare._scores import score_rows
from harness.logs import read_log
from harness.models.sample_context import bind_sample
from harness.report._data import build_report
from harness.scorers.calibrated_judge import calibrated_judge
from harness.stats._judge_calibration import rogan_gladen_from_labels
from harness.suites.catalog import catalog_design

N = 200
rng = np.random.default_rng(7)
TRUTH = rng.binomial(1, 0.3, N)  # is the model's answer really right?
# a judge with specificity ~0.7 and sensitivity ~0.9 (specs/calibrated-judge.md's example)
VERDICT = np.where(TRUTH == 1, rng.binomial(1, 0.9, N), rng.binomial(1, 0.3, N))
LABELLED = set(range(0, N, 4))  # humans labelled every 4th sample


@scorer(metrics=[accuracy()])
def noisy_judge():
    async def score(state, target):
        i = int(str(state.sample_id).removeprefix("s"))
        return Score(value=CORRECT if VERDICT[i] else INCORRECT)

    return score


def test_corrected_score_matches_rogan_gladen_on_the_same_split(tmp_path):
    labels = tmp_path / "human.jsonl"
    labels.write_text("".join(json.dumps({"id": f"s{i}", "human": int(TRUTH[i])}) + "\n"
                              for i in sorted(LABELLED)))  # fmt: skip
    task = Task(
        dataset=MemoryDataset([Sample(id=f"s{i}", input="q", target="a") for i in range(N)]),
        solver=[bind_sample(), generate()],
        scorer=calibrated_judge(noisy_judge(), human_labels=str(labels)),
        metadata={"harness_suite": "toy"},
    )
    (log,) = eval(task, model="scripted/x", log_dir=str(tmp_path / "logs"), display="none")
    test = [int(VERDICT[i]) for i in range(N) if i not in LABELLED]
    human = [int(TRUTH[i]) for i in sorted(LABELLED)]
    judge = [int(VERDICT[i]) for i in sorted(LABELLED)]
    expected = rogan_gladen_from_labels(test, human, judge)
    metrics = log.results.scores[0].metrics
    assert metrics["judge_corrected"].value == pytest.approx(expected.estimate)
    assert metrics["judge_naive"].value == pytest.approx(np.mean(test))  # test items only

    rows = {r.metric: r for r in score_rows(read_log(log.location))}
    corrected, naive = rows["judge (corrected)"], rows["judge (naive)"]
    assert (corrected.value, corrected.ci_low, corrected.ci_high) == pytest.approx(
        (expected.estimate, expected.low, expected.high)
    )
    assert corrected.n == naive.n == N - len(LABELLED)
    assert naive.value == pytest.approx(np.mean(test))
    # the naive share is biased upwards here; the correction moves towards the truth
    truth = TRUTH[[i for i in range(N) if i not in LABELLED]].mean()
    assert abs(corrected.value - truth) < abs(naive.value - truth)
    assert corrected.ci_low <= truth <= corrected.ci_high

    report = build_report([str(tmp_path / "logs")], catalog_design)
    assert {"judge (naive)", "judge (corrected)"} <= {r.metric for r in report.scores}


def test_useless_judge_is_refused_not_a_number(tmp_path):
    labels = tmp_path / "human.jsonl"
    # human labels that the judge gets exactly backwards
    labels.write_text("".join(json.dumps({"id": f"s{i}", "human": 1 - int(VERDICT[i])}) + "\n"
                              for i in sorted(LABELLED)))  # fmt: skip
    task = Task(
        dataset=MemoryDataset([Sample(id=f"s{i}", input="q", target="a") for i in range(N)]),
        solver=[bind_sample(), generate()],
        scorer=calibrated_judge(noisy_judge(), human_labels=str(labels)),
    )
    (log,) = eval(task, model="scripted/x", log_dir=str(tmp_path / "logs"), display="none")
    rows = {r.metric: r for r in score_rows(read_log(log.location))}
    assert rows["judge (corrected)"].ci_method.startswith("refused: ")
    assert "chance" in rows["judge (corrected)"].ci_method
