"""`harness.logs.load_training_runs`: every sample of a training suite's log, errored ones kept."""

from harness.logs import load_training_runs


def test_errored_and_unfinished_runs_are_returned_with_their_reason(training_log):
    runs = load_training_runs(training_log, ("arm", "seed"))
    by_seed = {r["seed"]: r for r in runs}
    assert sorted(by_seed) == [0, 1, 2, 3]  # none is dropped
    assert by_seed[0] == {"arm": "a", "seed": 0, "score": 0.5, "steps": [10, 20]}
    assert by_seed[2]["score"] == 0.7 and "error" not in by_seed[2]
    crashed = by_seed[1]
    assert set(crashed) == {"arm", "seed", "error"}  # the keys and the reason, no run fields
    assert "CUDA out of memory" in crashed["error"] and "\n" not in crashed["error"]
    assert set(by_seed[3]) == {"arm", "seed", "error"} and "no run" in by_seed[3]["error"]
