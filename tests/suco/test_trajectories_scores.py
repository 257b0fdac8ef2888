"""SuCo's trajectories read each score with the one parser, `harness.logs.parse_score`."""

from inspect_ai.log import read_eval_log, write_eval_log

from harness.suco.trajectories import read_trajectories
from tests.suco.logs import run_scripted

ITEMS = [
    {"id": f"q{i}", "input": "Add.", "target": "7", "output": "<think>Step.</think>7"}
    for i in range(4)
]


def test_scores_are_read_by_parse_score_and_an_unreadable_one_is_an_error(tmp_path):
    log = read_eval_log(run_scripted(tmp_path, ITEMS).location)
    values = ["C", 0.5, True, "maybe"]  # right, a half (not correct), right, unreadable
    for sample, value in zip(log.samples, values, strict=True):
        next(iter(sample.scores.values())).value = value
    path = str(tmp_path / "edited.json")
    write_eval_log(log, path)
    data = read_trajectories(path)
    assert [(t.id, t.correct) for t in data.trajectories] == [
        ("q0", True), ("q1", False), ("q2", True)
    ]  # fmt: skip
    assert data.skipped == ("q3: unparseable score 'maybe'",)
