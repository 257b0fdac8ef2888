"""`harness suco msc` end to end on a scripted log with a fake echo server as calibrator."""

import json

import pytest
from click.testing import CliRunner
from inspect_ai.log import read_eval_log, write_eval_log

from harness.cli.suco import suco
from harness.suco.trajectories import read_trajectories, split_completion
from tests.suco.logs import run_scripted

ANSWER = "The final answer is \\boxed{{{}}}."
# the fake server gives p = min(0.99, 0.2 + 0.25 * count("Step")) to every token
ITEMS = [
    {"id": "q1", "input": "Add one.", "target": "7",
     "output": "<think>Step a.</think>" + ANSWER.format(7)},
    {"id": "q2", "input": "Add two.", "target": "7",
     "output": "<think>Step a. Step b. Check.</think>" + ANSWER.format(8)},
    {"id": "q3", "input": "Add three.", "target": "7",
     "output": "<think>Step a. Step b. Step c. Check.</think>" + ANSWER.format(7)},
    {"id": "q4", "input": "Add four.", "target": "7",
     "output": "<think>Step a. Step b. Step c. Step d. Check. Check.</think>" + ANSWER.format(7)},
]  # fmt: skip


@pytest.fixture
def log_path(tmp_path):
    return run_scripted(tmp_path, ITEMS).location


@pytest.fixture
def fake_env(fake_server, monkeypatch):
    monkeypatch.setenv("FAKE_BASE_URL", fake_server.base_url)
    return fake_server


def invoke(args):
    return CliRunner().invoke(suco, args, catch_exceptions=False)


def test_msc_rows_table_and_mft(log_path, fake_env, tmp_path):
    out, mft = tmp_path / "msc.jsonl", tmp_path / "mft.jsonl"
    result = invoke(["msc", log_path, "--calibrator", "openai-api/fake/m", "-o", str(out),
                     "--mft", str(mft), "--l-min", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    # lengths 1, 3, 4, 6 sentences: C = .25, .5, .75, 1 and delta = .675, .75, .825, .9
    assert [rows[q]["C"] for q in ("q1", "q2", "q3", "q4")] == [0.25, 0.5, 0.75, 1.0]
    assert [rows[q]["delta"] for q in ("q1", "q2", "q3", "q4")] == [0.675, 0.75, 0.825, 0.9]
    assert [rows[q]["bucket"] for q in ("q1", "q2", "q3", "q4")] == ["Q1", "Q2", "Q3", "Q4"]
    # q1: S = .2, .45: fallback t* = 1; q2: .2, .45, .7, .7: fallback, tie to t* = 2;
    # q3: .95 at t = 3 >= .825; q4: .95 at t = 3 >= .9
    assert [(rows[q]["t_star"], rows[q]["reached"]) for q in ("q1", "q2", "q3", "q4")] == [
        (1, False), (2, False), (3, True), (3, True),
    ]  # fmt: skip
    assert rows["q2"]["scores"] == [0.2, 0.45, 0.7, 0.7]
    q4 = rows["q4"]
    assert (q4["n_sentences"], q4["full_chars"], q4["msc_chars"]) == (6, 45, 24)
    assert q4["saving_sentences"] == 0.5 and q4["saving_chars"] == round(1 - 24 / 45, 6)
    assert [rows[q]["correct"] for q in ("q1", "q2", "q3", "q4")] == [True, False, True, True]
    assert "Q4" in result.output and "all" in result.output and "reconstructed" in result.output
    # MFT: q2 is wrong and left out; q1's t* = 1 < L_min = 2 gives an empty CoT
    sft = {r["id"]: r for r in map(json.loads, mft.read_text().splitlines())}
    assert set(sft) == {"q1", "q3", "q4"}
    assert sft["q1"]["completion"] == "<think></think>" + ANSWER.format(7)
    assert sft["q4"]["completion"] == "<think>Step a. Step b. Step c. </think>" + ANSWER.format(7)
    assert all(r["repaired"] is False for r in sft.values())
    assert sft["q3"]["prompt"] == "Add three."


def test_json_summary(log_path, fake_env):
    result = invoke(["msc", log_path, "--calibrator", "openai-api/fake/m", "--json",
                     "--delta0", "0.5", "--alpha", "0.1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "ours" in data["reconstructed"] and data["n"] == 4
    total = data["summary"][-1]
    assert total["bucket"] == "all" and total["n"] == 4
    # deltas .525 .55 .575 .6: S = .7 at t = 2 reaches them for q2-q4; q1 (S = .2, .45) falls
    # back to t* = 1
    assert total["reached"] == 0.75 and total["msc_sentences"] == 1.75
    prompts = [r["prompt"] for r in fake_env.requests]
    assert "Add one.<think>Step a.</think>The final answer is \\boxed{7}" in prompts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--calibrator", "openai/gpt-4o"], "openai-api/NAME/MODEL"),
        (["--calibrator", "openai-api/fake/m", "--delta0", "0.8", "--alpha", "0.3"], "delta0"),
        (["--calibrator", "openai-api/fake/m", "-M", "oops"], "key=value"),
    ],
)
def test_usage_errors_are_one_line(log_path, fake_env, args, message):
    result = CliRunner().invoke(suco, ["msc", log_path, *args])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_missing_and_empty_logs(tmp_path, log_path, fake_env):
    result = CliRunner().invoke(suco, ["msc", str(tmp_path / "nope.eval"), "--calibrator", "x/y"])
    assert result.exit_code == 2 and "no such log file" in result.stderr
    log = read_eval_log(log_path)
    log.samples = []
    empty = str(tmp_path / "empty.json")
    write_eval_log(log, empty)
    result = CliRunner().invoke(suco, ["msc", empty, "--calibrator", "openai-api/fake/m"])
    assert result.exit_code == 2 and "has no samples" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_trajectories_from_the_log(log_path):
    data = read_trajectories(log_path)
    q2 = next(t for t in data.trajectories if t.id == "q2")
    assert (q2.prompt, q2.gold, q2.correct, q2.think_block) == ("Add two.", "7", False, True)
    assert q2.cot == "Step a. Step b. Check." and q2.answer == ANSWER.format(8)


@pytest.mark.parametrize(
    ("text", "cot", "answer", "think"),
    [
        ("<think>a. b.</think>x", "a. b.", "x", True),
        ("a. b.\n</think>\n\nx", "a. b.\n", "\n\nx", False),  # <think> was in the prompt
        ("First. Second. So \\boxed{3}. Done.", "First. Second. ", "So \\boxed{3}. Done.", False),
        ("First. Second. Answer 3", "First. Second. ", "Answer 3", False),
        ("Just 3", "", "Just 3", False),
        ("", "", "", False),
    ],
)
def test_split_completion(text, cot, answer, think):
    parts = split_completion(text)
    assert (parts.cot, parts.answer, parts.think_block) == (cot, answer, think)


def test_local_tiny_arith_end_to_end(tmp_path):
    import random

    from harness.models.tiny_arith_data import make_problem

    rng = random.Random(5)
    items = []
    for i in range(12):
        prompt, answer = make_problem(rng, 2)
        items.append({"id": f"a{i}", "input": prompt, "target": answer, "output": answer})
    log = run_scripted(tmp_path, items, name="arith")
    out = tmp_path / "rows.jsonl"
    bare = ["--think-open", "", "--think-close", "", "--lead-in", "", "--answer-close", ""]
    result = invoke(["msc", log.location, "--calibrator", "local/tiny-arith", "-M", "device=cpu",
                     "-o", str(out), *bare])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and all(r["n_sentences"] == 0 and r["t_star"] == 0 for r in rows)
    # tiny-arith is nearly always right on 2-digit sums: S(gold | prompt) is high
    assert sum(r["score"] > 0.5 for r in rows) >= 10
