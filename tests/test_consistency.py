"""One set of logs, three readers: `harness eval --json`, `harness report` and leaderboard.json
print the same score, interval, n and error count for every (task, model), judge scores
included; and logs that are not comparable are refused with the reason by report and site."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
from inspect_ai.solver import generate

from harness.cli import main
from harness.compare._scores import score_rows
from harness.leaderboard.build import build_site
from harness.logs import read_log
from harness.models.sample_context import bind_sample
from harness.report._data import build_report
from harness.scorers.calibrated_judge import calibrated_judge
from harness.suites.catalog import catalog_design

N = 120
rng = np.random.default_rng(11)
TRUTH = rng.binomial(1, 0.4, N)
VERDICT = np.where(TRUTH == 1, rng.binomial(1, 0.9, N), rng.binomial(1, 0.25, N))
LABELLED = set(range(0, N, 3))
FAILING = "s1,s2,s3,s4,s5"  # samples whose model call raises; s3 has a human label
JUDGE_RAISES = {6, 7}  # samples whose judge raises (no verdict); s6 has a human label


@scorer(metrics=[accuracy()])
def fixed_judge():
    async def score(state, target):
        i = int(str(state.sample_id).removeprefix("s"))
        if i in JUDGE_RAISES:
            raise RuntimeError("judge model unreachable")
        return Score(value=CORRECT if VERDICT[i] else INCORRECT)

    return score


def _eval_json(log_dir: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(
        main, ["eval", "--suite", "arith", "--log-dir", str(log_dir), "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :])["scores"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("consistency")
    log_dir = root / "logs"
    eval_rows = []
    eval_rows += _eval_json(log_dir, "--model", "scripted/a", "-T", "n=30", "-T", "difficulty=1",
                            "-M", "fail=arith-1,arith-2,arith-3")  # fmt: skip
    eval_rows += _eval_json(log_dir, "--model", "scripted/b", "-T", "n=30", "-T", "difficulty=1")
    eval_rows += _eval_json(log_dir, "--model", "scripted/c", "-T", "n=30", "-T", "difficulty=3")
    # several epochs and an errored sample: rows over problems, accuracy and pass@3
    eval_rows += _eval_json(log_dir, "--model", "scripted/d", "-T", "n=30", "-T", "difficulty=2",
                            "--epochs", "3", "-M", "fail=arith-4,arith-9")  # fmt: skip
    labels = root / "human.jsonl"
    labels.write_text("".join(json.dumps({"id": f"s{i}", "human": int(TRUTH[i])}) + "\n"
                              for i in sorted(LABELLED)))  # fmt: skip
    task = Task(
        dataset=MemoryDataset([Sample(id=f"s{i}", input="q", target="a") for i in range(N)]),
        solver=[bind_sample(), generate()],
        scorer=calibrated_judge(fixed_judge(), human_labels=str(labels)),
        metadata={"harness_suite": "toy"},
        name="judged",
    )
    (log,) = eval(task, model="scripted/j", model_args={"fail": FAILING}, log_dir=str(log_dir),
                  display="none", fail_on_error=False, score_on_error=True)  # fmt: skip
    # what `harness eval` prints for a log: the rows `harness.eval.run` builds (score_rows)
    eval_rows += [r.as_dict() for r in score_rows(read_log(log.location))]
    return log_dir, eval_rows


def _close(a, b):
    return (a is None and b is None) or (
        a is not None and b is not None and abs(a - b) <= 1e-6 * max(1.0, abs(a))
    )


def test_eval_report_and_site_print_the_same_numbers(logs, tmp_path):
    log_dir, eval_rows = logs
    report = build_report([str(log_dir)], catalog_design)
    site = build_site([str(log_dir)], catalog_design, str(tmp_path / "site"), viewer=False)
    board = json.loads((Path(site.site) / "leaderboard.json").read_text())
    report_rows = {(r.log, r.metric): r.as_dict() for r in report.scores}
    site_rows = {(row["log"], t["task"]): row for t in board["tasks"] for row in t["rows"]}
    # 4 accuracy, a pass@3, judge naive and corrected
    assert len(eval_rows) == 7 and len(report_rows) == 7
    errors_seen = set()
    for row in eval_rows:
        mine = report_rows[(row["log"], row["metric"])]
        for key in ("value", "ci_low", "ci_high"):
            assert _close(row[key], mine[key]), (row, mine)
        assert (row["n"], row["errors"], row["ci_method"]) == (
            mine["n"], mine["errors"], mine["ci_method"],
        )  # fmt: skip
        [site_row] = [v for (name, _), v in site_rows.items() if name == Path(row["log"]).name]
        if row["metric"].startswith("pass@"):  # the site shows a model's first row
            assert (row["n"], row["errors"]) == (30, 2)
            continue
        if row["metric"] == "judge (corrected)":
            assert _close(row["value"], site_row["judge_corrected"])
            assert _close(row["ci_low"], site_row["judge_corrected_ci"][0])
            assert _close(row["ci_high"], site_row["judge_corrected_ci"][1])
            continue
        if row["metric"] == "judge (naive)":
            assert _close(row["value"], site_row["judge_naive"])
        for ours, theirs in (("value", "score"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            assert _close(row[ours], site_row[theirs]), (row, site_row)
        assert (row["n"], row["errors"]) == (site_row["n"], site_row["errors"])
        errors_seen.add(row["errors"])
    assert {0, 2, 3, 5} <= errors_seen  # the failing calls are counted, the same way everywhere
    # an errored test item counts as wrong; a labelled sample is never a test item, whether its
    # answer errored and the judge still ran (s3) or its judge raised (s6)
    judge = [r for r in eval_rows if r["metric"] == "judge (naive)"][0]
    assert judge["n"] == N - len(LABELLED) and judge["errors"] == 5  # s1 s2 s4 s5 s7
    judged = [VERDICT[i] for i in range(N) if i not in LABELLED and i not in {1, 2, 4, 5, 7}]
    assert _close(judge["value"], sum(judged) / judge["n"])


def test_different_task_arguments_are_not_paired(logs, tmp_path):
    log_dir, _ = logs
    report = build_report([str(log_dir)], catalog_design)
    arith_pairs = [p for p in report.pairs if p.task.startswith("arith")]
    assert [(p.model_a, p.model_b) for p in arith_pairs] == [
        ('scripted/a (fail="arith-1,arith-2,arith-3")', "scripted/b")
    ]
    assert arith_pairs[0].task == "arith [config.epochs=1, difficulty=1]"
    refused = [n for n in report.not_comparable if n.task == "arith"]
    [refused_a, refused_b] = [n for n in refused if "difficulty 1 vs 3" in n.reason]
    epochs = [n for n in refused if "config.epochs" in n.reason]
    assert len(epochs) == 3  # scripted/d ran 3 epochs: compared with none of the others
    assert "difficulty 1 vs 3" in refused_a.reason and "difficulty 1 vs 3" in refused_b.reason
    out = tmp_path / "r.md"
    result = CliRunner().invoke(main, ["report", str(log_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "## Not compared" in text and "task_args.difficulty 1 vs 3" in text
    site = build_site([str(log_dir)], catalog_design, str(tmp_path / "site"), viewer=False)
    board = json.loads((Path(site.site) / "leaderboard.json").read_text())
    tasks = {t["task"] for t in board["tasks"]}
    assert {
        "arith [config.epochs=1, difficulty=1]",
        "arith [config.epochs=1, difficulty=3]",
    } <= tasks
    hard = [t for t in board["tasks"] if t["task"] == "arith [config.epochs=1, difficulty=3]"][0]
    assert hard["pairs"] == []  # alone in its group: compared with nobody
    assert any("difficulty 1 vs 3" in n["reason"] for n in board["not_comparable"])
    index = (Path(site.site) / "index.html").read_text()
    assert "Logs not compared" in index and "difficulty 1 vs 3" in index


def test_an_older_log_of_the_same_identity_is_superseded_and_listed(logs, tmp_path):
    log_dir, _ = logs
    again = tmp_path / "again"
    _eval_json(again, "--model", "scripted/b", "-T", "n=30", "-T", "difficulty=1")
    report = build_report([str(log_dir), str(again)], catalog_design)
    superseded = [b for b in report.left_out if "superseded" in b.reason]
    assert len(superseded) == 1 and str(again) in superseded[0].reason
    assert sum(1 for r in report.scores if r.model == "scripted/b") == 1


def test_a_log_named_by_url_reads_like_the_file(logs):
    """Remote logs (s3://, file://) go through inspect's reader, with the same result."""
    from harness.compare._scores import score_rows
    from harness.logs import log_files, read_log

    log_dir, _ = logs
    path = next(p for p in log_files([str(log_dir)]) if p.endswith(".eval"))
    local, remote = read_log(path), read_log(f"file://{path}")
    assert local.identity == remote.identity
    rows = [(r.value, r.ci_low, r.ci_high, r.n, r.errors) for r in score_rows(local)]
    assert rows == [(r.value, r.ci_low, r.ci_high, r.n, r.errors) for r in score_rows(remote)]
