"""The `sapo()` scorer through inspect, with scripted outputs and a fake echo calibrator."""

import pytest

from harness.suco.sapo_scorer import sapo
from tests.suco.logs import run_scripted

# the fake server gives p = min(0.99, 0.2 + 0.25 * count("Step")): S = .2, .45, .7, .95, .99 ...
ITEMS = [
    # correct, L = 3, t* = 3 (S = .95 >= .9): R = 1
    {"id": "ok", "output": "<think>Step a. Step b. Step c.</think>So \\boxed{7}."},
    # correct, L = 6 > t* + 2 = 5: R = 1 - 0.5
    {"id": "over",
     "output": "<think>Step a. Step b. Step c. Check. Check. Check.</think>\\boxed{7}"},
    # wrong, L = 1, t* = inf (S = .2, .45): R = 0 - 0.5
    {"id": "under", "output": "<think>Step a.</think>\\boxed{8}"},
    # correct but no think block: R = 1 - 1; L = 0, t* = inf, no penalty
    {"id": "noformat", "output": "It is 7"},
]  # fmt: skip
EXPECTED = {"ok": 1.0, "over": 0.5, "under": -0.5, "noformat": 0.0}


@pytest.mark.parametrize("fixed", [True, False])
def test_sapo_rewards_through_inspect(tmp_path, fake_server, monkeypatch, fixed):
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    items = [
        {**i, "input": "Sum?", "target": "7", "metadata": {"suco_complexity": 1.0}} for i in ITEMS
    ]  # C = 1: delta = 0.6 + 0.3 = 0.9, the same as the fixed one
    scorer = sapo(calibrator="openai-api/fake/m", delta=0.9 if fixed else None)
    log = run_scripted(tmp_path, items, scorer=scorer)
    scores = {s.id: s.scores["sapo"] for s in log.samples}
    assert {k: v.value for k, v in scores.items()} == pytest.approx(EXPECTED)
    meta = scores["over"].metadata
    assert (meta["length"], meta["t_star"], meta["r_suff"]) == (6, 3, -0.5)
    assert meta["delta"] == pytest.approx(0.9)
    assert scores["under"].metadata["t_star"] is None  # infinity
    assert scores["noformat"].metadata["format_ok"] is False
    assert scores["ok"].answer == "7" and "ours" in meta["reconstructed"]
    value = log.results.scores[0].metrics["mean"].value
    assert value == pytest.approx(sum(EXPECTED.values()) / 4)


def test_missing_complexity_errors_the_sample(tmp_path, fake_server, monkeypatch):
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.solver import generate

    from harness.models.sample_context import bind_sample

    outputs = tmp_path / "o.jsonl"
    outputs.write_text('{"id": "ok", "output": "<think>Step a.</think>\\\\boxed{7}"}')
    task = Task(dataset=MemoryDataset([Sample(id="ok", input="Sum?", target="7")]),
                solver=[bind_sample(), generate()],
                scorer=sapo(calibrator="openai-api/fake/m"))  # fmt: skip
    (log,) = inspect_eval(task, model="scripted/s", model_args={"outputs": str(outputs)},
                          log_dir=str(tmp_path / "l"), display="none")  # fmt: skip
    assert log.status == "error" and "suco_complexity" in str(log.error)


def test_bad_options_are_usage_errors():
    from harness.errors import HarnessUsageError

    with pytest.raises(HarnessUsageError, match="delta0"):
        sapo(calibrator="openai-api/x/m", delta0=0.9, alpha=0.3)
    with pytest.raises(HarnessUsageError, match="delta"):
        sapo(calibrator="openai-api/x/m", delta=1.5)
