"""Scoring SWE-rebench V2 runs: both criteria, normalised names, partial rates, failed runs.

The expected values are worked out by hand from the small test lists below. The criteria are
those of `specs/swe-rebench.md`, section 2, step 6; acceptance check 3 is
`test_extra_passing_test_standard_resolves_strict_does_not`.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from harness.suites.swe_rebench.log_parsers import FAILED, PASSED, SKIPPED, parse_log
from harness.suites.swe_rebench.scoring import (
    CRITERIA,
    TEST_PATCH_APPLY_FAILED,
    SweScore,
    failed_run,
    git_apply_commands,
    score_run,
)
from harness.suites.swe_rebench.task_format import SweTask, load_tasks, parse_task
from tests.swe.rows import task_row

F2P = ("f1", "f2")
P2P = ("p1", "p2", "p3")


def _task(fail_to_pass: tuple[str, ...] = F2P, pass_to_pass: tuple[str, ...] = P2P) -> SweTask:
    row = task_row(
        FAIL_TO_PASS=list(fail_to_pass),
        PASS_TO_PASS=list(pass_to_pass),
        install_config={"test_cmd": "make check", "log_parser": "parse_log_jq"},
    )
    return parse_task(row, "test row")


def _all_pass(*extra: str) -> dict[str, str]:
    return {name: PASSED for name in (*F2P, *P2P, *extra)}


@pytest.mark.parametrize("criterion", CRITERIA)
def test_all_listed_pass_resolves(criterion: str) -> None:
    score = score_run(_task(), _all_pass(), criterion)  # type: ignore[arg-type]
    assert score == SweScore(
        resolved=True,
        criterion=criterion,  # type: ignore[arg-type]
        f2p_passed=2,
        f2p_total=2,
        p2p_passed=3,
        p2p_total=3,
        f2p_rate=1.0,
        p2p_rate=1.0,
        missing=(),
        failed=(),
        extra_passed=(),
        reason=None,
    )


def test_default_criterion_is_standard_and_recorded() -> None:
    assert score_run(_task(), _all_pass()).criterion == "standard"


def test_missing_fail_to_pass_test_is_not_passed() -> None:
    results = _all_pass()
    del results["f2"]
    score = score_run(_task(), results)
    assert not score.resolved
    assert score.missing == ("f2",) and score.failed == ()
    assert (score.f2p_passed, score.f2p_total, score.f2p_rate) == (1, 2, 0.5)
    assert score.p2p_rate == 1.0


def test_failing_pass_to_pass_test_is_not_resolved() -> None:
    results = {**_all_pass(), "p2": FAILED}
    score = score_run(_task(), results)
    assert not score.resolved
    assert score.failed == ("p2",) and score.missing == ()
    assert score.f2p_rate == 1.0
    assert score.p2p_passed == 2
    assert score.p2p_rate == pytest.approx(2 / 3, abs=1e-12)  # exact fraction, float rounding


def test_skipped_listed_test_is_not_passed() -> None:
    score = score_run(_task(), {**_all_pass(), "f1": SKIPPED})
    assert not score.resolved and score.failed == ("f1",)


def test_extra_passing_test_standard_resolves_strict_does_not() -> None:
    results = _all_pass("unlisted")
    standard = score_run(_task(), results, "standard")
    strict = score_run(_task(), results, "strict")
    assert standard.resolved and standard.criterion == "standard"
    assert not strict.resolved and strict.criterion == "strict"
    assert standard.extra_passed == strict.extra_passed == ("unlisted",)
    # Only PASSED names count towards strict's set: an extra failing test does not hurt.
    assert score_run(_task(), {**_all_pass(), "flaky": FAILED}, "strict").resolved


def test_timing_suffixes_and_ansi_codes_match() -> None:
    results = {
        "f1 [1.34 ms]": PASSED,
        "f2 in 29.08 msec": PASSED,
        "p1 (1.2s)": PASSED,
        "\x1b[32mp2\x1b[0m": PASSED,
        "p3": PASSED,
    }
    assert score_run(_task(), results, "strict").resolved
    # The expected names are normalised too.
    task = _task(fail_to_pass=("f1 (3 ms)", "\x1b[1mf2\x1b[0m"))
    assert score_run(task, _all_pass(), "strict").resolved


def test_names_that_normalise_alike_keep_a_failure() -> None:
    # "f1" passed once and failed once, in either order.
    for results in ({**_all_pass(), "f1 (2 ms)": FAILED}, {"f1 (2 ms)": FAILED, **_all_pass()}):
        score = score_run(_task(), results)
        assert not score.resolved and score.failed == ("f1",)


def test_partial_rates() -> None:
    results = {"f1": PASSED, "f2": FAILED, "p1": PASSED, "p3": SKIPPED, "x": PASSED}
    score = score_run(_task(), results)
    assert (score.f2p_passed, score.f2p_rate) == (1, 0.5)
    assert (score.p2p_passed, score.p2p_rate) == (1, pytest.approx(1 / 3, abs=1e-12))
    assert score.missing == ("p2",)
    assert score.failed == ("f2", "p3")
    assert score.extra_passed == ("x",)


def test_empty_pass_to_pass_rate_is_one() -> None:
    score = score_run(_task(pass_to_pass=()), {"f1": PASSED, "f2": PASSED})
    assert score.resolved and score.p2p_total == 0 and score.p2p_rate == 1.0


def test_duplicate_listed_names_count_once() -> None:
    score = score_run(_task(fail_to_pass=("f1", "f1 (1 ms)", "f2")), _all_pass())
    assert (score.f2p_passed, score.f2p_total) == (2, 2)


def test_failed_run_keeps_the_reason() -> None:
    score = failed_run(_task(), TEST_PATCH_APPLY_FAILED, "strict")
    assert not score.resolved
    assert score.reason == "test_patch_apply_failed" and score.criterion == "strict"
    assert (score.f2p_rate, score.p2p_rate, score.f2p_passed, score.p2p_passed) == (0, 0, 0, 0)
    assert (score.f2p_total, score.p2p_total) == (2, 3)
    assert score.missing == ("f1", "f2", "p1", "p2", "p3")
    assert "not resolved (test_patch_apply_failed) [strict]" in score.summary()


def test_reason_overrides_a_passing_log() -> None:
    score = score_run(_task(), _all_pass(), reason="timeout")
    assert not score.resolved and score.reason == "timeout"
    assert (score.f2p_rate, score.p2p_rate) == (0.0, 0.0)
    empty = score_run(_task(pass_to_pass=()), {"f1": PASSED, "f2": PASSED}, reason="limit: memory")
    assert empty.p2p_rate == 0.0 and empty.reason == "limit: memory"


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError, match="unknown criterion 'lenient'; valid criteria: standard"):
        score_run(_task(), {}, "lenient")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reason must be a non-empty string"):
        score_run(_task(), {}, reason="")
    with pytest.raises(ValueError, match="needs a reason"):
        failed_run(_task(), None)  # type: ignore[arg-type]


def test_score_is_frozen_and_summarises() -> None:
    score = score_run(_task(), _all_pass())
    with pytest.raises(dataclasses.FrozenInstanceError):
        score.resolved = False  # type: ignore[misc]
    assert score.summary() == (
        "resolved [standard]: FAIL_TO_PASS 2/2, PASS_TO_PASS 3/3, "
        "0 missing, 0 failed, 0 extra passed"
    )


def test_fixture_scored_from_a_jq_log(data_dir: Path) -> None:
    task = load_tasks(data_dir / "swe" / "swe-rebench-v2-sample.json")[0]
    lines = [f"PASS: {name}" for name in task.fail_to_pass + task.pass_to_pass]
    log = "make[2]: Entering directory\n" + "\n".join(lines) + "\n"
    results = parse_log(task.install_config.log_parser, log)
    assert score_run(task, results, "strict").resolved
    broken = log.replace(f"PASS: {task.pass_to_pass[5]}\n", f"  FAIL: {task.pass_to_pass[5]}\n")
    score = score_run(task, parse_log(task.install_config.log_parser, broken))
    assert not score.resolved and score.failed == (task.pass_to_pass[5],)
    assert (score.f2p_passed, score.p2p_passed) == (12, 176)


# --- git apply --------------------------------------------------------------------------------


def test_git_apply_commands_order() -> None:
    three_way, plain = git_apply_commands("/tmp/p.diff")
    assert three_way[:2] == ("git", "apply") and three_way[-1] == "/tmp/p.diff"
    assert {"--3way", "--recount", "--ignore-space-change"} <= set(three_way)
    assert plain == ("git", "apply", "--verbose", "/tmp/p.diff")
    with pytest.raises(ValueError, match="patch_path"):
        git_apply_commands("")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)


def test_git_apply_commands_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert _git(repo, "init", "-q").returncode == 0
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "add", "calc.py")
    assert _git(repo, "commit", "-qm", "base").returncode == 0
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    patch = tmp_path / "fix.diff"
    patch.write_text(_git(repo, "diff").stdout)
    _git(repo, "checkout", "-q", "calc.py")

    three_way, _ = git_apply_commands(str(patch))
    applied = subprocess.run(three_way, cwd=repo, capture_output=True, text=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "calc.py").read_text().endswith("return a + b\n")
