"""Suite bandpo end to end: the quick preset (several minutes on 2 cores), marked `long`.

Checks the pipeline (both tasks, every run, the report section and its claims) and the spec's
§5.2 bandit checks at lr 1.0 on seeds 0-19, as the spec states them.
"""

import pytest
from inspect_ai.log import read_eval_log

from harness.suites.bandpo.log_numbers import comparison
from harness.suites.bandpo.results import build_report, load_runs
from harness.suites.bandpo.section import plot, tables
from harness.suites.bandpo.task import QUICK_ARMS

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def quick_logs(tmp_path_factory):
    from harness.eval import EvalRequest, run  # the CLI is not under test

    ok, rows, _ = run(
        EvalRequest(suite="bandpo", models=(), task_args={"workers": 2},
                    log_dir=str(tmp_path_factory.mktemp("bandpo") / "logs"), display="none")
    )  # fmt: skip
    assert ok
    return {read_eval_log(r.log, header_only=True).eval.task.split("/")[-1]: r for r in rows}


def test_quick_preset_runs_every_arm_and_seed(quick_logs, tmp_path):
    arms = QUICK_ARMS.split(",")
    bandit, rlvr = quick_logs["bandpo_bandit"], quick_logs["bandpo_rlvr"]
    assert (bandit.n, bandit.errors) == (len(arms) * 20, 0)
    assert (rlvr.n, rlvr.errors) == (len(arms) * 3, 0)
    for row, experiment in ((bandit, "bandit"), (rlvr, "rlvr")):
        report = build_report("quick", load_runs(row.log))
        assert report.experiment == experiment
        assert sorted(a.arm for a in report.arms) == sorted(arms)
        assert report.claims and tables(report)
        assert plot(report, tmp_path / experiment)[0].endswith(".png")
    runs = load_runs(rlvr.log)
    assert all(0.10 <= r["start_mean"] <= 0.30 for r in runs)  # spec §5.3: a 10-30% start


def test_bandit_clip_fraction_check_of_spec_section_5_2(quick_logs):
    """BandKL's clip fraction is below clip's (measured 0.0025 against 0.0263)."""
    report = build_report("quick", load_runs(quick_logs["bandpo_bandit"].log))
    clip = comparison(report, "clip")
    assert clip.arm("bandkl-0.05").interval.estimate < clip.arm("clip").interval.estimate
    pair = clip.pair("bandkl-0.05", "clip")
    assert pair is not None and pair.test is not None and pair.test.high < 0


@pytest.mark.xfail(
    strict=True,
    reason="does not reproduce on seeds 0-19: seed 3 of BandKL locks onto a suboptimal action "
    "and never reaches p_best > 0.5, so its mean (never = the 200-iteration budget) is 16.6 "
    "against clip's 16.8, ratio 0.99; the other 19 seeds average 7.0 (median 7 vs 17.5). "
    "docs/validation/bandpo.md",
)
def test_bandit_iterations_check_of_spec_section_5_2(quick_logs):
    """BandKL's mean iterations to p_best > 0.5 (a seed that never gets there counts as the
    200-iteration budget) at most 0.7x clip's, at lr 1.0, as the spec states the check."""
    report = build_report("quick", load_runs(quick_logs["bandpo_bandit"].log))
    its = comparison(report, "iterations")
    ratio = its.arm("bandkl-0.05").interval.estimate / its.arm("clip").interval.estimate
    assert ratio <= 0.7, f"BandKL / clip mean iterations {ratio:.2f}"
