"""The calibrated judge reads its inner scorer's verdict with the one parser, `parse_score`."""

import json

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, accuracy, scorer
from inspect_ai.solver import generate

from harness.models.sample_context import bind_sample
from harness.scorers.calibrated_judge import calibrated_judge

VALUES = {"s0": "C", "s1": 0.0, "s2": True, "s3": "maybe", "s4": float("nan")}


@scorer(metrics=[accuracy()])
def fixed_verdicts():
    async def score(state, target):
        return Score(value=VALUES[str(state.sample_id)])

    return score


def test_verdicts_are_parsed_and_an_unreadable_one_errors_with_its_reason(tmp_path):
    labels = tmp_path / "human.jsonl"
    labels.write_text(json.dumps({"id": "s0", "human": 1}) + "\n")
    task = Task(
        dataset=MemoryDataset([Sample(id=i, input="q", target="a") for i in VALUES]),
        solver=[bind_sample(), generate()],
        scorer=calibrated_judge(fixed_verdicts(), human_labels=str(labels)),
    )
    (log,) = eval(task, model="scripted/x", log_dir=str(tmp_path / "logs"), display="none",
                  fail_on_error=False)  # fmt: skip
    samples = {s.id: s for s in log.samples}
    judged = {i: samples[i].scores["calibrated_judge"].value for i in ("s0", "s1", "s2")}
    assert judged == {"s0": {"judge": 1, "human": 1}, "s1": {"judge": 0, "human": -1},
                      "s2": {"judge": 1, "human": -1}}  # fmt: skip
    assert "unparseable score 'maybe'" in samples["s3"].error.message
    assert "unscored (nan)" in samples["s4"].error.message
