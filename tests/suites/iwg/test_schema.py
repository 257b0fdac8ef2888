"""Instances and trajectories round-trip through JSON; bad files name the file and the field."""

import json

import pytest

from harness.errors import HarnessUsageError
from harness.suites.iwg.generator import generate
from harness.suites.iwg.schema import (
    BenchmarkInstance,
    instance_from_dict,
    load_instance,
    load_instances,
    save_instance,
    to_dict,
)
from harness.suites.iwg.trajectory import Dispatch, Round, Trajectory


def test_generator_is_seeded_and_follows_the_spec():
    a, b = generate(100, seed=5), generate(100, seed=5)
    assert a == b
    assert a != generate(100, seed=6)
    assert all(3 <= len(i.workflow) <= 8 for i in a)
    assert sum(1 for i in a if i.exception_scenarios) == 30
    assert {i.gold_checkpoints[0].type for i in a} == {"exact_match"}
    assert len({i.id for i in a}) == 100
    for inst in a:  # values are distinct, so a shifted checkpoint never matches by chance
        values = [c.expected_value for c in inst.gold_checkpoints]
        assert len(set(values)) == len(values)


def test_instances_round_trip_losslessly(tmp_path):
    for inst in generate(20, seed=1):
        path = save_instance(inst, tmp_path)
        again = load_instance(path)
        assert again == inst
        assert isinstance(again, BenchmarkInstance)
        assert to_dict(again) == json.loads(path.read_text())
    assert load_instances(tmp_path) == generate(20, seed=1)


def test_trajectories_round_trip_losslessly():
    traj = Trajectory(
        "x",
        (
            Round(1, 0.25, "{}", (Dispatch("searcher", "T1", "q", "answer: v", "v"),), "retry"),
            Round(2, 0.3, "", failure="WrongFormat", reason="no JSON", board_errors=("ADD s1",)),
        ),
        "no actions",
        ("T2", "T1"),
        (1,),
    )
    data = json.loads(json.dumps(traj.to_dict()))
    assert Trajectory.from_dict(data) == traj


def _bad(tmp_path, edit) -> str:
    data = to_dict(generate(1, seed=2)[0])
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(HarnessUsageError) as ex:
        load_instance(path)
    message = str(ex.value)
    assert str(path) in message and "\n" not in message
    return message


def test_bad_instances_name_the_file_and_the_field(tmp_path):
    msg = _bad(tmp_path, lambda d: d["workflow"][1].update(assigned_agent="wizard"))
    assert "workflow[1].assigned_agent" in msg and "wizard" in msg
    msg = _bad(tmp_path, lambda d: d["workflow"][0].update(dependencies=[d["workflow"][-1]["id"]]))
    assert "cycle" in msg
    msg = _bad(tmp_path, lambda d: d["seed_data"].update(expected_steps="three"))
    assert "seed_data.expected_steps" in msg
    msg = _bad(tmp_path, lambda d: d["gold_checkpoints"][0].update(type="fuzzy"))
    assert "gold_checkpoints[0].type" in msg
    msg = _bad(tmp_path, lambda d: d.pop("environments"))
    assert "environments" in msg and "missing" in msg
    msg = _bad(tmp_path, lambda d: d.update(colour="red"))
    assert "colour" in msg
    msg = _bad(tmp_path, lambda d: d["gold_agent_sequence"].pop())
    assert "gold_agent_sequence" in msg
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(HarnessUsageError, match="bad.json: not valid JSON"):
        load_instance(tmp_path / "bad.json")


def test_a_cycle_is_named_step_by_step():
    data = to_dict(generate(1, seed=2)[0])
    data["workflow"][0]["dependencies"] = ["s1"]
    with pytest.raises(HarnessUsageError, match=r"cycle \(s0 -> s1 -> s0\)"):
        instance_from_dict(data)
