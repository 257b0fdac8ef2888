"""`harness report`: scores, Holm-corrected McNemar comparisons, a forest plot; bad input."""

import json

import pytest
from click.testing import CliRunner
from scipy.stats import chi2

from harness.cli import main
from harness.eval import EvalRequest, run
from harness.report._data import build_report
from harness.suites.arith.task import arith
from harness.suites.catalog import catalog_design


@pytest.fixture
def three_models(tmp_path):
    samples = list(arith(n=40, difficulty=1).dataset)
    specs = []
    for name, keep in (("good", lambda i: i % 4 != 0), ("half", lambda i: i % 2 == 1)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "\n".join(
                json.dumps({"id": s.id, "output": s.target if keep(i) else "999"})
                for i, s in enumerate(samples)
            )
        )
        specs.append(f"replay/{path}")
    log_dir = tmp_path / "logs"
    ok, _, _ = run(
        EvalRequest(
            suite="arith",
            models=(*specs, "scripted/none"),
            task_args={"n": 40, "difficulty": 1},
            model_args={"answer": "none"},
            log_dir=str(log_dir),
            display="none",
        )
    )
    assert ok
    return log_dir


def _name(model: str) -> str:
    """The file name of a replay spec, without the model arguments the label adds."""
    return model.split(" (")[0].split("/")[-1]


def test_pairs_use_mcnemar_and_holm(three_models):
    data = build_report([str(three_models)], catalog_design)
    assert {r.value for r in data.scores} == {0.75, 0.5, 0.0}
    by_pair = {(_name(p.model_a), _name(p.model_b)): p for p in data.pairs}
    # good vs half: 10 discordant items, all favouring good. McNemar's asymptotic test, whose
    # interval (Tango's) agrees with it: chi-square (10 - 0)**2 / 10 on 1 df, as
    # scipy.stats.chi2.sf(10, 1) gives it.
    good_half = by_pair[("good.jsonl", "half.jsonl")]
    assert good_half.test.estimate == pytest.approx(0.25)
    assert good_half.test.p_value == pytest.approx(chi2.sf(10, 1), rel=1e-12)
    assert good_half.test.low > 0
    raw = sorted(p.test.p_value for p in data.pairs)
    holm = sorted(p.p_holm for p in data.pairs)
    assert holm[0] == pytest.approx(3 * raw[0]) and holm[1] == pytest.approx(2 * raw[1])
    assert holm[2] == pytest.approx(max(raw[2], holm[1]))


def test_markdown_and_html_outputs(three_models, tmp_path):
    runner = CliRunner()
    md = tmp_path / "out" / "r.md"
    result = runner.invoke(main, ["report", str(three_models), "-o", str(md)])
    assert result.exit_code == 0, result.output
    text = md.read_text()
    assert "mcnemar asymptotic" in text and "![Forest plot" in text
    assert (tmp_path / "out" / "r.forest.png").read_bytes()[:4] == b"\x89PNG"
    page = tmp_path / "r.html"
    result = runner.invoke(main, ["report", str(three_models), "--format", "html", "-o", str(page)])
    assert result.exit_code == 0
    html = page.read_text()
    assert "<caption>" in html and 'scope="col"' in html and 'alt="Forest plot' in html


def test_report_bad_input(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["report", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist" in result.stderr
    (tmp_path / "empty").mkdir()
    result = runner.invoke(main, ["report", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no inspect logs" in result.stderr


def test_accuracy_against_budgets_for_direct_sr_and_pdr(tmp_path):
    samples = list(arith(n=20, difficulty=1).dataset)
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(
        "\n".join(
            json.dumps({"id": s.id, "output": s.target if i % 3 else "999"})
            for i, s in enumerate(samples)
        )
    )
    log_dir = tmp_path / "logs"
    runs = (
        ("scripted/x", {"outputs": str(outputs)}),
        ("sr/scripted/x", {"rounds": 2, "inner_outputs": str(outputs)}),
        ("pdr/scripted/x", {"rounds": "3,1", "inner_outputs": str(outputs)}),
    )
    for spec, args in runs:
        ok, _, _ = run(
            EvalRequest(
                suite="arith",
                models=(spec,),
                task_args={"n": 20, "difficulty": 1},
                model_args=args,
                log_dir=str(log_dir),
                display="none",
            )
        )
        assert ok
    data = build_report([str(log_dir)], catalog_design)
    [budgets] = [s for s in data.sections if s.section.tag == "budgets"]
    rows = {r.model.split(" (")[0]: r for r in budgets.results[0].rows}
    assert [rows[m].method for m in ("scripted/x", "sr/scripted/x", "pdr/scripted/x")] == [
        "direct", "sr", "pdr",
    ]  # fmt: skip
    direct, sr, pdr = rows["scripted/x"], rows["sr/scripted/x"], rows["pdr/scripted/x"]
    # every draft repeats the sample's scripted answer, so accuracy is the same everywhere
    assert direct.accuracy.estimate == sr.accuracy.estimate == pdr.accuracy.estimate == 13 / 20
    # direct: a one-word prompt and a one-word answer per sample; B_seq = B_total
    assert direct.budgets["seq_io"].estimate == direct.budgets["total_io"].estimate == 2.0
    assert direct.budgets["seq_out"].estimate == 1.0
    # PDR's three parallel drafts cost the longest on the critical path, all of them in total
    assert pdr.budgets["total_io"].estimate > pdr.budgets["seq_io"].estimate > 0
    assert pdr.budgets["total_out"].estimate - pdr.budgets["seq_out"].estimate == 2.0
    assert sr.budgets["seq_io"].estimate == sr.budgets["total_io"].estimate
    assert pdr.n_budget == sr.n_budget == 20
    out = tmp_path / "report.md"
    files = CliRunner().invoke(main, ["report", str(log_dir), "-o", str(out)])
    assert files.exit_code == 0, files.output
    text = out.read_text()
    assert "## Accuracy against token budgets" in text and "report.budgets-1.png" in text
    assert (tmp_path / "report.budgets-1.png").stat().st_size > 10_000
