"""Spec §5.3-5.4 end to end: the grid through `harness eval`, the log's records, the report.

Fast runs use scripted agents or a random tiny GPT-2 (`conftest.py`); the run on the trained
`local/tiny-arith` is marked slow (it trains for minutes on first use).
"""

import json
from pathlib import Path

import pytest

from harness.eval import EvalRequest, run
from harness.logs import read_log, read_samples
from harness.report._sections import SectionOutput, section_markdown, write_plots
from harness.suites.catalog import catalog_design
from harness.suites.mas_prove.results import build_mas_report
from harness.suites.mas_prove.section import SECTION, view


def _run(tmp_path: Path, model: str, **task_args) -> Path:
    log_dir = tmp_path / "logs"
    ok, _, _ = run(
        EvalRequest(
            suite="mas-prove", models=(model,), log_dir=str(log_dir), task_args=task_args,
            display="none",
        )
    )  # fmt: skip
    assert ok
    (log,) = list(log_dir.glob("*.eval"))
    return log


def _check_grid_log(log: Path, verifiers: set[str], tmp_path: Path) -> None:
    record = read_log(str(log), catalog_design)
    assert not isinstance(record, str) and not any(s.error for s in record.samples)
    report = build_mas_report("t", record)
    assert {r.verifier for r in report.rows} == verifiers
    per_pattern = 1 + 2 * (len(verifiers) - 1)  # none, then each verifier at two granularities
    assert len(report.rows) == 5 * per_pattern
    assert {r.pattern for r in report.rows} == {
        "single", "debate", "refine", "orchestrator", "workflow"
    }  # fmt: skip
    judged = [r for r in report.rows if r.verifier == "judge"]
    assert all(r.verifier_calls > 0 and r.fallbacks == 0 for r in judged)

    # every search is in the log: all N candidates, the verifier's input, ranking and choice
    samples = {s.id: s for s in read_samples(str(log))}
    sample = samples["debate.judge.agent.raw.s0.chain-1"]
    records = sample.metadata["mp_search_records"]
    assert len(records) == sample.metadata["mp_searches"] == 2 * 3  # rounds x agents
    for r in records:
        assert len(r["candidates"]) == len(r["answers"]) == len(r["correct"]) == 3
        assert r["verifier_input"]["candidates"] == r["candidates"]
        assert r["ranking"] == [2, 0, 1] and r["chosen"] == 2
        assert r["detail"]["judge_output"] == "<ranking>3,1,2</ranking>"
    infos = [e for e in sample.events if e.event == "info" and e.source == "mas-prove search"]
    assert len(infos) == len(records)
    rounds = samples["debate.judge.iteration.raw.s0.chain-1"].metadata["mp_search_records"]
    assert len(rounds) == 2 and all(len(r["candidates"]) == 3 for r in rounds)

    # the section renders its tables and the gain-against-cost plot
    output = SectionOutput(SECTION, (report,))
    files = write_plots(output, tmp_path / "report")
    assert files[0][0].endswith(".png") and Path(files[0][0]).stat().st_size > 0
    text = section_markdown(output, files)
    assert "vs. no verification" in text and "Toy model check" in text
    assert len(view(report).tables[0][2]) == len(report.rows)


JUDGE = {"answer": "<ranking>3,1,2</ranking>"}


def test_every_pattern_verifier_and_granularity_runs_with_scripted_agents(tmp_path):
    log = _run(
        tmp_path, "scripted/agent", problems=1, seeds=1, min_steps=1, max_steps=1,
        verifiers="none,oracle,random,majority,judge", judge_args=JUDGE,
    )  # fmt: skip
    _check_grid_log(log, {"none", "oracle", "random", "majority", "judge"}, tmp_path)


@pytest.mark.slow
def test_every_verifier_runs_with_a_local_model_as_agents_and_reward_model(tmp_path, random_tiny):
    spec = f"local/{random_tiny}"
    log = _run(
        tmp_path, spec, problems=1, seeds=1, reward_model=spec, min_steps=1, max_steps=1,
        judge_args=JUDGE,
    )  # fmt: skip
    verifiers = {"none", "oracle", "random", "majority", "judge", "reward", "prm-min"}
    _check_grid_log(log, verifiers, tmp_path)
    report = build_mas_report("t", read_log(str(log), catalog_design))
    prm = [r for r in report.rows if r.verifier == "prm-min"]
    assert all(r.verifier_tokens > 0 for r in prm)


def test_aime_debate_with_a_scripted_judge_at_both_granularities(tmp_path, data_dir):
    log = _run(
        tmp_path, "scripted/agent", benchmark="aime2025", problems=3, data_dir=str(data_dir),
        judge_args={"answer": "I like the second. <ranking>2,1,3</ranking>"},
    )  # fmt: skip
    record = read_log(str(log), catalog_design)
    report = build_mas_report("t", record)
    rows = {(r.verifier, r.granularity): r for r in report.rows}
    assert set(rows) == {("none", "-"), ("judge", "agent"), ("judge", "iteration")}
    # a 2-agent debate of 2 rounds: 4 agent calls per problem, or 2 rounds, each a judged search
    assert rows[("judge", "agent")].verifier_calls == 4
    assert rows[("judge", "iteration")].verifier_calls == 2
    assert rows[("none", "-")].verifier_calls == 0
    for row in rows.values():
        assert row.n == 3 and row.errors == 0 and row.accuracy.estimate == 0.0  # answers ""
    samples = read_samples(str(log))
    judged = next(s for s in samples if s.metadata["mp_verifier"] == "judge")
    assert all(r["chosen"] == 1 for r in judged.metadata["mp_search_records"])
    assert record.metadata.get("extraction", "lenient") == "lenient"


def test_log_metadata_labels_what_is_reconstructed(tmp_path):
    log = _run(tmp_path, "scripted/agent", patterns="single", verifiers="none,oracle",
               granularities="agent", problems=2, seeds=1)  # fmt: skip
    from harness.logs import read_full_log

    meta = read_full_log(str(log)).eval.metadata
    assert "reconstructed" in meta and "toy verification model" in meta["reconstructed"]
    assert json.dumps(meta)  # plain data


@pytest.mark.slow
def test_the_default_grid_on_trained_tiny_arith(tmp_path):
    log = _run(tmp_path, "local/tiny-arith", problems=2, seeds=1)
    record = read_log(str(log), catalog_design)
    report = build_mas_report("t", record)
    assert len(report.rows) == 65 and not any(r.errors for r in report.rows)
    oracle = [t for t in report.toy if t.label.startswith("single / oracle / agent")]
    assert oracle and oracle[0].a.estimate == 1.0


def test_gaia_runs_from_a_users_own_copy(tmp_path):
    # GAIA is never shipped: a user points --data-dir at a copy laid out as the hub repository
    folder = tmp_path / "data" / "gaia" / "2023" / "validation"
    folder.mkdir(parents=True)
    rows = [
        {"task_id": "t1", "Question": "What is 2+2?", "Level": 1, "Final answer": "4"},
        {"task_id": "t2", "Question": "Capital of France?", "Level": 1, "Final answer": "Paris"},
    ]
    (folder / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    log_dir = tmp_path / "logs"
    ok, out, _ = run(
        EvalRequest(
            suite="mas-prove", models=("scripted/agent",), log_dir=str(log_dir),
            data_dir=str(tmp_path / "data"), model_args={"answer": "so... FINAL ANSWER: paris."},
            task_args={"benchmark": "gaia", "verifiers": "none,oracle"}, display="none",
        )
    )  # fmt: skip
    assert ok and out[0].value == 0.5  # Paris right, 4 wrong, in every configuration


def test_context_strategies_reach_the_verifier(tmp_path):
    log = _run(
        tmp_path, "scripted/agent", patterns="single", verifiers="judge", granularities="agent",
        contexts="raw,none,summary,summary+step", problems=1, seeds=1, min_steps=3, max_steps=3,
        judge_args=JUDGE,
    )  # fmt: skip
    by_context = {
        s.metadata["mp_context"]: s.metadata["mp_search_records"] for s in read_samples(str(log))
    }
    assert set(by_context) == {"raw", "none", "summary", "summary+step"}
    last = {k: v[-1]["verifier_input"] for k, v in by_context.items()}  # step 3 sees steps 1-2
    assert last["none"]["context"] == ""
    assert (
        last["raw"]["context"].startswith("Step 1: ") and "\n\nStep 2: " in last["raw"]["context"]
    )
    # the extractive summary (no summariser given): each part reduced to its answer
    assert last["summary"]["context"].startswith("Part 1: answer ")
    assert last["summary+step"]["context"] == last["summary"]["context"]
    assert all(c.startswith(("answer ", "no answer")) for c in last["summary"]["candidates"])
    assert last["summary+step"]["candidates"] == by_context["summary+step"][-1]["candidates"]
