"""Spec §5.3 acceptance on 100 generated instances, through the real Plan/Reflexion loop.

The scripted orchestrators (`iwg/...`) play Plan; executors, Reflexion and the metrics run as in
`harness eval --suite iwg` (which the eval tests run end to end on fewer instances).
"""

import asyncio

import pytest
from inspect_ai.model import GenerateConfig, get_model

from harness.suites.iwg import metrics
from harness.suites.iwg.dynamics import PlaceholderMeanField, Series
from harness.suites.iwg.generator import generate
from harness.suites.iwg.orchestrator import run_loop
from harness.suites.iwg.plan import TaskBoard, parse_plan
from harness.suites.iwg.scripted import POLICIES, skipped_step
from harness.suites.iwg.task import iwg  # noqa: F401  (registers the iwg/ provider)

INSTANCES = generate(100, seed=0)


def _run(spec: str, instances=INSTANCES, **model_args):
    async def main():
        model = get_model(spec, **model_args)
        return await asyncio.gather(*(run_loop(i, model) for i in instances))

    return asyncio.run(main())


@pytest.fixture(scope="module")
def runs():
    return {p: _run(f"iwg/{p}") for p in POLICIES}


def _scores(inst, traj):
    pred = traj.predicted_values()
    gold_plans = [p.plan for p in inst.gold_recovery_plans]
    return {
        "lcs_f1": metrics.lcs_f1(traj.predicted_agents(), inst.gold_agent_sequence),
        "task_success": metrics.task_success(pred, inst.gold_checkpoints),
        "step_sr": metrics.step_sr(pred, inst.gold_checkpoints),
        "eh_f1": metrics.eh_f1(traj.recoveries(), gold_plans),
        "faithfulness": metrics.faithfulness(traj.step_queries(), inst.gold_checkpoints),
    }


def _fit(trajectories):
    series = [Series(t.instance_id, *map(tuple, t.entropy_series())) for t in trajectories]
    return PlaceholderMeanField().fit(series, n_boot=1000)


def test_perfect_scores_one_on_every_step_metric(runs):
    for inst, traj in zip(INSTANCES, runs["perfect"], strict=True):
        assert _scores(inst, traj) == dict.fromkeys(_scores(inst, traj), 1.0), inst.id
        assert traj.stopped == "no actions"
    # the 30 exception scenarios fired, were classified, and were recovered from
    fired = [t for t in runs["perfect"] if t.fired]
    assert len(fired) == 30 and all(f > 0 for t in fired for f in t.fired)
    assert (
        sum(
            t.failures().get("ToolError", 0) + t.failures().get("Timeout", 0)
            for t in runs["perfect"]
        )
        == 30
    )


def test_skipper_fails_the_task_with_step_sr_j_over_n_by_position(runs):
    for inst, traj in zip(INSTANCES, runs["skipper"], strict=True):
        s = _scores(inst, traj)
        j, n = skipped_step(inst), len(inst.workflow)
        assert s["task_success"] == 0.0
        # positional rule (the authors'): values after the skipped step are shifted, none match
        assert s["step_sr"] == pytest.approx(j / n, abs=1e-12), (inst.id, j, n)


def test_misrouter_loses_lcs_f1_but_keeps_its_checkpoints(runs):
    for inst, traj in zip(INSTANCES, runs["misrouter"], strict=True):
        s = _scores(inst, traj)
        assert s["lcs_f1"] < 1.0
        assert s["task_success"] == 1.0


def test_diffuser_drifts_upward_and_its_b_interval_excludes_zero(runs):
    diffuser, perfect = _fit(runs["diffuser"]), _fit(runs["perfect"])
    b = diffuser.param("b")
    assert b.estimate > 0 and b.low > 0, b
    assert diffuser.label == "oscillating"
    pb = perfect.param("b")
    assert pb.low <= 0 <= pb.high, pb
    assert perfect.label == "robust"
    # H(t) trends upward: the mean over the last rounds exceeds the mean over the first
    series = [t.entropy_series()[0] for t in runs["diffuser"] if len(t.entropy_series()[0]) >= 4]
    assert sum(s[-1] for s in series) > sum(s[0] for s in series)


def test_malformed_orchestrator_output_is_a_failed_step_with_its_reason():
    (traj,) = _run("scripted/garbage", INSTANCES[:1], answer="12+34=46")
    assert [r.failure for r in traj.rounds] == ["WrongFormat"] * 3
    assert traj.rounds[0].reason == "no JSON object in the reply"
    assert traj.stopped == "3 failed replies in a row"
    assert traj.predicted_values() == []
    assert metrics.task_success(traj.predicted_values(), INSTANCES[0].gold_checkpoints) == 0.0


def test_a_raising_orchestrator_model_is_a_failed_step_and_ends_the_run():
    async def main():
        model = get_model("scripted/broken", config=GenerateConfig(seed=7), fail_seeds="7")
        return await run_loop(INSTANCES[0], model)

    traj = asyncio.run(main())
    assert [r.failure for r in traj.rounds] == ["ModelError"]
    assert "ScriptedFailure" in traj.rounds[0].reason
    assert traj.failures() == {"ModelError": 1}


def test_plan_replies_hallucinations_and_the_board():
    board = TaskBoard()
    assert board.apply({"op": "ADD", "id": "s1", "agent": "searcher"}) == ""
    assert "already" in board.apply({"op": "ADD", "id": "s1"})
    assert "not on the board" in board.apply({"op": "MODIFY", "id": "s9", "status": "done"})
    assert board.apply({"op": "MODIFY", "id": "s1", "status": "done"}) == ""
    assert board.entries["s1"]["status"] == "done"
    reply = parse_plan(
        '```json\n{"next_actions": [{"agent": "wizard", "tool": "T1", '
        '"input": "x"}, {"agent": "reader"}]}\n```'
    )
    assert [a.agent for a in reply.actions] == ["wizard"]
    assert reply.problems == ("next_actions[1] needs string agent, tool and input",)

    async def main():
        text = (
            '{"next_actions": [{"agent": "wizard", "tool": "T1", "input": "x"}, '
            '{"agent": "reader", "tool": "T99", "input": "y"}]}'
        )
        return await run_loop(INSTANCES[0], get_model("scripted/x", answer=text), max_steps=2)

    traj = asyncio.run(main())
    reasons = [d.reason for d in traj.rounds[0].dispatches]
    assert reasons == ["unknown executor 'wizard'", "unknown tool 'T99'"]
    assert traj.rounds[-1].failure == "Timeout" and traj.stopped == "max_steps (2)"
