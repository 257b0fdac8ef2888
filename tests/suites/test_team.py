"""Suite `team` end to end on the tiny preset, its report section, and bad arguments."""

import pytest
from inspect_ai.log import read_eval_log

from harness.cli.run import EvalRequest, run_eval
from harness.errors import HarnessUsageError
from harness.report.data import build_report
from harness.report.render import write_report
from harness.suites.team.report import build_team_report
from harness.suites.team.task import team


def test_suite_end_to_end_with_report(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    ok, rows = run_eval(
        EvalRequest(
            suite="team",
            models=(),
            task_args={
                "preset": "tiny",
                "steps": 20,
                "n_test": 6,
                "variants": "vanilla,team,no_caching",
            },
            log_dir=str(tmp_path / "logs"),
            display="none",
        )  # fmt: skip
    )
    assert ok and rows[0].n == 18 and rows[0].errors == 0
    log = read_eval_log(rows[0].log)
    assert "reconstructed" in log.eval.metadata
    meta = log.samples[0].scores["exact_match_ids"].metadata
    assert {"tpf", "apf", "apt", "tpf_with_commits", "calls_per_row"} <= set(meta)
    assert meta["apt"] == pytest.approx(meta["apf"] / meta["tpf"])
    assert list((tmp_path / "cache" / "team").glob("*.pt")), "the checkpoint was not cached"
    report = build_report([str(tmp_path / "logs")])
    (section,) = report.team
    assert [r.variant for r in section.rows] == ["vanilla", "team", "no_caching"]
    assert [p.variant for p in section.pairs] == ["team", "no_caching"]
    assert any(c.startswith("APT reduced by 20% or more") for c in section.checks)
    written = write_report(report, str(tmp_path / "out" / "report.md"), "md")
    assert any(p.endswith(".team-1.png") for p in written)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## TEAM" in text and "APT ratio" in text


def _run(variant, pid, correct, tpf, apf):
    return {"variant": variant, "seed": 0, "prompt_id": pid, "task": "reverse",
            "correct": correct, "tpf": tpf, "apf": apf, "apt": apf / tpf,
            "tpf_with_commits": tpf, "cold_share": 0.0}  # fmt: skip


def test_ratios_and_checks_on_constructed_runs():
    runs = [_run("vanilla", i, i % 2 == 0, 2.0, 6.0) for i in range(40)]
    runs += [_run("team", i, i % 2 == 0, 3.0, 5.4) for i in range(40)]
    rep = build_team_report("t", runs)
    (pair,) = rep.pairs
    assert pair.ratios["tpf"].estimate == pytest.approx(1.5)
    assert pair.ratios["apf"].estimate == pytest.approx(0.9)
    assert pair.ratios["apt"].estimate == pytest.approx(0.6)
    assert pair.exact_diff.estimate == 0
    assert list(rep.checks[:4]) == ["TPF higher: pass", "APF lower: pass",
                              "APT reduced by 20% or more: pass",
                              "exact match at least vanilla - 1 point: pass"]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"variants": "vanilla,fast"}, "unknown variant"), ({"preset": "huge"}, "unknown preset"),
     ({"n_test": 0}, "n_test must be at least 1"), ({"seeds": 0}, "at least 1")],
)  # fmt: skip
def test_bad_arguments_are_usage_errors(kwargs, message):
    with pytest.raises(HarnessUsageError, match=message):
        team(**kwargs)
