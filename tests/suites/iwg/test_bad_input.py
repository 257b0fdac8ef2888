"""Careless input to the suite's commands: one line on stderr, exit 2, the input named."""

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.suites.iwg.generator import generate
from harness.suites.iwg.schema import to_dict


def _instance_file(folder, name, edit):
    data = to_dict(generate(1, seed=9)[0])
    edit(data)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def files(tmp_path):
    def cycle(d):
        d["workflow"][0]["dependencies"] = [d["workflow"][-1]["id"]]

    out = {
        "malformed": _instance_file(tmp_path, "malformed.json", lambda d: d["seed_data"].pop("id")),
        "cycle": _instance_file(tmp_path, "cycle.json", cycle),
        "executor": _instance_file(
            tmp_path, "executor.json", lambda d: d["workflow"][0].update(assigned_agent="oracle")
        ),
        "notjson": tmp_path / "notjson.json",
        "empty": tmp_path / "empty.jsonl",
        "badseed": tmp_path / "badseed.jsonl",
        "emptydir": tmp_path / "emptydir",
    }
    out["notjson"].write_text("{")
    out["empty"].write_text("\n")
    out["badseed"].write_text('{"id": "a", "query": "q", "answer": "x"}\n{"id": "b", "query": 3}\n')
    out["emptydir"].mkdir()
    return out


SYNTH = ["--scout", "scripted/a", "--wrapper", "scripted/b", "--committee", "scripted/c"]
# (arguments, a word the one line must contain)
CASES = [
    (["eval", "--suite", "iwg", "-T", "instances={malformed}"], "seed_data.id"),
    (["eval", "--suite", "iwg", "-T", "instances={cycle}"], "cycle"),
    (["eval", "--suite", "iwg", "-T", "instances={executor}"], "unknown executor 'oracle'"),
    (["eval", "--suite", "iwg", "-T", "instances={notjson}"], "notjson.json"),
    (["eval", "--suite", "iwg", "-T", "instances={emptydir}"], "no instance files"),
    (["eval", "--suite", "iwg", "-T", "n=0"], "-T n=0"),
    (["eval", "--suite", "iwg", "-T", "embedder=bert"], "embedder"),
    (["eval", "--suite", "iwg", "--model", "iwg/nope"], "iwg/perfect"),
    (["iwg", "synthesize", "--seeds", "{empty}", *SYNTH, "-o", "{tmp}/o"], "empty"),
    (["iwg", "synthesize", "--seeds", "{badseed}", *SYNTH, "-o", "{tmp}/o"], "line 2"),
    (["iwg", "synthesize", "--seeds", "{tmp}/none.jsonl", *SYNTH, "-o", "{tmp}/o"], "none.jsonl"),
    (["iwg", "synthesize", "--seeds", "{badseed}", *SYNTH, "-o", "{tmp}/o", "-M", "x=1"], "ROLE"),
    (["iwg", "synthesize", "--seeds", "{badseed}", "--scout", "s"], "--wrapper"),
    (["iwg", "generate", "--n", "0", "-o", "{tmp}/g"], "--n"),
    (["iwg", "generate", "--n", "x", "-o", "{tmp}/g"], "--n"),
    (["iwg", "nope"], "nope"),
]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[" ".join(c[0][:4]) for c in CASES])
def test_careless_input_is_one_line_and_exit_2(args, needle, files, tmp_path):
    filled = [a.format(tmp=tmp_path, **files) for a in args]
    result = CliRunner().invoke(main, filled)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("harness: error: ") and needle in lines[0], lines[0]
