"""The eval summary's model column: short labels that tell models apart, the specs below."""

import json

from click.testing import CliRunner

from harness.cli import main
from harness.cli.summary_table import print_rows
from harness.eval._summary import short_labels
from harness.suites.arith.task import arith


def test_shortest_distinct_suffix():
    specs = ["replay//home/me/runs/r_1/a.jsonl", "replay//home/me/runs/r_2/a.jsonl",
             "local/tiny-arith", "scripted/x"]  # fmt: skip
    labels = short_labels(specs)
    assert labels == {specs[0]: "r_1/a.jsonl", specs[1]: "r_2/a.jsonl",
                      specs[2]: "tiny-arith", specs[3]: "x"}  # fmt: skip
    assert short_labels(specs, {specs[2]: "big"})[specs[2]] == "big"
    # a spec that is the end of another stays whole where no shorter end is its own
    assert short_labels(["a/b", "c/a/b"]) == {"a/b": "a/b", "c/a/b": "c/a/b"}


def _replays(tmp_path, n=4):
    specs = []
    items = list(arith(n=5).dataset)
    for i in range(n):
        folder = tmp_path / "runs" / f"r_{i}"
        folder.mkdir(parents=True)
        lines = [json.dumps({"id": s.id, "output": str(s.target)}) for s in items]
        (folder / "out.jsonl").write_text("\n".join(lines) + "\n")
        specs.append(f"replay/{folder / 'out.jsonl'}")
    return specs


def test_piped_summary_tells_replays_apart(tmp_path):
    specs = _replays(tmp_path, 3)
    args = [a for s in specs for a in ("--model", s)]
    base = ["eval", "--suite", "arith", "-T", "n=5", "--display", "none"]
    result = CliRunner().invoke(main, [*base, "--log-dir", str(tmp_path / "logs"), *args])
    assert result.exit_code == 0, result.output
    table = result.output[: result.output.index("models: ")]
    for i in range(3):
        assert f"r_{i}/out.jsonl" in table
    assert all(s in result.output.replace("\n", "") for s in specs)  # the full specs, once
    costs = result.output[result.output.index("cost and latency per problem") :]
    assert "r_2/out.jsonl" in costs  # the cost table uses the same labels
    assert "$ per problem: unknown: no price for replay/" in costs  # a column no model has
    bad = CliRunner().invoke(main, [*base, *args, "--model-name", "only-one"])
    assert bad.exit_code == 2 and "--model-name takes one distinct" in bad.output


def test_model_names_label_the_rows():
    from rich.console import Console

    from harness.compare._scores import SummaryRow

    row = SummaryRow(suite="arith", task="arith", model="replay//x/y/out.jsonl",
                     metric="accuracy", n=5, errors=0, value=1.0, ci_low=0.5, ci_high=1.0,
                     ci_method="wilson", log="x.eval")  # fmt: skip
    console = Console(width=120, record=True)
    print_rows([row], console, names={"replay//x/y/out.jsonl": "mine"})
    text = console.export_text()
    assert " mine " in text and "mine = replay//x/y/out.jsonl" in text
