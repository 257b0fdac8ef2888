"""The swe-rebench suite end to end: fixture tasks, materialising, the runner, validate, eval."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from inspect_ai import eval as inspect_eval

import harness.plugin  # noqa: F401  (registers bwrap and replay/)
from harness.cli.validate import validate
from harness.errors import HarnessUsageError
from harness.sandbox import BwrapConfig, bwrap_available
from harness.suites.swe_rebench.repos import RepoUnavailableError, materialise
from harness.suites.swe_rebench.runner import bwrap_sandbox, copy_into_sandbox, run_candidate
from harness.suites.swe_rebench.task import extract_patch, load_swe_tasks, swe_rebench
from harness.suites.swe_rebench.task_format import load_tasks
from harness.suites.swe_rebench.validate import validate_tasks
from tests.swe.make_fixture_tasks import FIXTURES, make_fixture_tasks


@pytest.fixture
def needs_bwrap() -> None:
    # as in tests/sandbox: CI installs bwrap, so a missing one fails and is never skipped
    if (why := bwrap_available()) is not None:
        pytest.fail(f"bwrap sandbox unavailable: {why}")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    make_fixture_tasks(folder)
    return folder


def _tasks(folder: Path) -> dict:
    return {t.instance_id: t for t in load_tasks(folder / "swe" / "fixture-tasks.jsonl")}


def _eval(folder: Path, tmp_path: Path, outputs: dict[str, str], **task_args: object) -> list:
    tmp_path.mkdir(parents=True, exist_ok=True)
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "".join(json.dumps({"id": k, "output": v}) + "\n" for k, v in outputs.items())
    )
    logs = inspect_eval(
        swe_rebench(data_dir=str(folder), **task_args),
        model=f"replay/{replay}",
        display="none",
        log_dir=str(tmp_path / "logs"),
        score_on_error=True,
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0].samples


def _breaks_pass_to_pass(folder: Path, tmp_path: Path) -> str:
    """The mathlib fix, plus a change to mean() that breaks test_mean (a PASS_TO_PASS test)."""
    task = _tasks(folder)["fixture__mathlib-1"]
    repo = tmp_path / "broken"
    materialise(task, folder, repo)
    stats = repo / "mathlib" / "stats.py"
    text = FIXTURES[0].fix["mathlib/stats.py"]
    stats.write_text(text.replace("sum(xs) / len(xs)", "sum(xs) / (len(xs) + 1)"))
    return _git(repo, "diff")


def test_fixture_tasks_load(fixture_dir: Path) -> None:
    tasks = _tasks(fixture_dir)
    assert sorted(tasks) == sorted(f.instance_id for f in FIXTURES)
    parsers = {t.install_config.log_parser for t in tasks.values()}
    assert parsers == {"parse_log_unittest", "parse_log_node_test"}
    for task in tasks.values():
        mirror = fixture_dir / "swe" / "repos" / task.repo.replace("/", "__")
        # the mirror has later history (the fix) after the base commit
        assert _git(mirror, "rev-parse", "HEAD~1").strip() == task.base_commit


def test_materialised_repo_has_only_the_base_commit(fixture_dir: Path, tmp_path: Path) -> None:
    for task in _tasks(fixture_dir).values():
        dest = tmp_path / task.instance_id
        sha = materialise(task, fixture_dir, dest)
        assert _git(dest, "log", "--all", "--format=%H %s").split("\n")[:-1] == [f"{sha} base"]
        mirror = fixture_dir / "swe" / "repos" / task.repo.replace("/", "__")
        base_tree = _git(mirror, "rev-parse", f"{task.base_commit}^{{tree}}")
        assert _git(dest, "rev-parse", "HEAD^{tree}") == base_tree
        assert _git(dest, "status", "--porcelain") == ""


def test_materialise_without_a_mirror_names_the_path(fixture_dir: Path, tmp_path: Path) -> None:
    task = _tasks(fixture_dir)["fixture__mathlib-1"]
    mirror = fixture_dir / "swe" / "repos" / "fixture__mathlib"
    mirror.rename(tmp_path / "moved")
    with pytest.raises(RepoUnavailableError) as caught:
        materialise(task, fixture_dir, tmp_path / "dest")
    assert str(mirror) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_extract_patch_strips_a_diff_fence() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert extract_patch(f"Here it is:\n```diff\n{diff}```\nDone.") == diff
    assert extract_patch(diff.rstrip("\n")) == diff
    assert extract_patch("") == ""


@pytest.mark.usefixtures("needs_bwrap")
def test_runner_outcomes(fixture_dir: Path, tmp_path: Path) -> None:
    task = _tasks(fixture_dir)["fixture__intervals-12"]
    repo = tmp_path / "repo"
    materialise(task, fixture_dir, repo)
    # a candidate that deletes the test file the test patch edits: the file is restored from
    # the base (test infrastructure is the task's), the test patch applies, the tests fail
    (repo / "tests" / "test_merge.py").unlink()
    deletes_tests = _git(repo, "diff")
    _git(repo, "checkout", "--", ".")

    async def go() -> tuple:
        async with bwrap_sandbox(BwrapConfig(timeout=120)) as box:
            await copy_into_sandbox(box, repo)
            log = await box.exec(["git", "log", "--all", "--format=%s"], cwd="/work")
            gold = await run_candidate(box, task, task.patch)
            empty = await run_candidate(box, task, "")
            garbage = await run_candidate(box, task, "this is not a diff\n")
            bad_test = await run_candidate(box, task, deletes_tests)
            again = await run_candidate(box, task, task.patch)
            return log.stdout, gold, empty, garbage, bad_test, again

    log, gold, empty, garbage, bad_test, again = asyncio.run(go())
    assert log.split() == ["base"]
    assert gold.score.resolved and gold.score.reason is None
    assert not empty.score.resolved
    assert empty.score.failed == tuple(sorted(task.fail_to_pass))
    assert empty.score.p2p_rate == 1.0
    assert garbage.score.reason == "patch_apply_failed"
    assert bad_test.score.reason is None and not bad_test.score.resolved
    assert bad_test.flags == ("touches test infrastructure (restored): tests/test_merge.py",)
    assert again.score.resolved  # runs leave nothing behind that changes the next one


@pytest.mark.usefixtures("needs_bwrap")
def test_validate_passes_on_the_fixtures(fixture_dir: Path) -> None:
    rows = validate_tasks(fixture_dir, timeout=120)
    assert [r.instance_id for r in rows] == [f.instance_id for f in FIXTURES]
    for row in rows:
        assert (row.ok, row.gold_resolved, row.empty_resolved, row.reason) == (
            True,
            True,
            False,
            None,
        ), row.summary()


@pytest.mark.usefixtures("needs_bwrap")
def test_validate_command_lists_a_missing_repo_and_runs_the_rest(fixture_dir: Path) -> None:
    tasks_file = fixture_dir / "swe" / "fixture-tasks.jsonl"
    row = json.loads(tasks_file.read_text().splitlines()[0])
    row.update(instance_id="nowhere__gone-1", repo="harness-fixture-absent/gone")
    with open(tasks_file, "a") as out:
        out.write(json.dumps(row) + "\n")
    result = CliRunner().invoke(
        validate, ["--suite", "swe-rebench", "--data-dir", str(fixture_dir), "--timeout", "120"]
    )
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[-1] == f"{len(FIXTURES)}/{len(FIXTURES) + 1} tasks passed"
    (missing,) = [line for line in lines if line.startswith("FAIL")]
    assert "nowhere__gone-1" in missing and "harness-fixture-absent__gone" in missing
    assert sum(line.startswith("ok") for line in lines) == len(FIXTURES)


@pytest.mark.usefixtures("needs_bwrap")
def test_eval_gold_resolves_all_and_empty_none(fixture_dir: Path, tmp_path: Path) -> None:
    tasks = _tasks(fixture_dir)
    gold = _eval(
        fixture_dir, tmp_path / "gold", {k: f"```diff\n{t.patch}```" for k, t in tasks.items()}
    )
    assert {s.id: s.scores["swe_resolved"].value for s in gold} == dict.fromkeys(tasks, 1)
    meta = gold[0].scores["swe_resolved"].metadata
    assert meta["criterion"] == "standard" and meta["f2p_rate"] == 1.0
    assert set(meta) == {"f2p_rate", "p2p_rate", "missing", "failed", "reason", "criterion",
                         "integrity", "integrity_flags", "results_source",
                         "results_reason", "canaries"}  # fmt: skip
    assert meta["integrity_flags"] == [] and meta["integrity"] == "strict"
    assert all(  # the canaries came out as they must, and only the python tasks have them
        s.scores["swe_resolved"].metadata["canaries"]
        == ({} if s.id == "fixture__jsrange-3" else
            {"pass": "PASSED", "fail": "FAILED", "error": "FAILED", "skip": "SKIPPED"})
        for s in gold
    )  # fmt: skip
    empty = _eval(fixture_dir, tmp_path / "empty", dict.fromkeys(tasks, ""), criterion="strict")
    assert {s.id: s.scores["swe_resolved"].value for s in empty} == dict.fromkeys(tasks, 0)
    assert all(s.scores["swe_resolved"].metadata["criterion"] == "strict" for s in empty)


@pytest.mark.usefixtures("needs_bwrap")
def test_eval_fix_that_breaks_pass_to_pass_is_not_resolved(
    fixture_dir: Path, tmp_path: Path
) -> None:
    patch = _breaks_pass_to_pass(fixture_dir, tmp_path)
    samples = _eval(
        fixture_dir, tmp_path, {"fixture__mathlib-1": patch}, instances="fixture__mathlib-1"
    )
    (sample,) = samples
    score = sample.scores["swe_resolved"]
    assert score.value == 0
    assert score.metadata["f2p_rate"] == 1.0 and score.metadata["p2p_rate"] == 0.5
    assert score.metadata["failed"] == ["test_mean (tests.test_stats.TestStats.test_mean)"]


def test_shared_sample_becomes_a_sample(data_dir: Path) -> None:
    task = swe_rebench(data_dir=str(data_dir), instances="unidata__netcdf-c-1925")
    (sample,) = task.dataset
    source = json.loads((data_dir / "swe" / "swe-rebench-v2-sample.json").read_text())[0]
    assert sample.id == "unidata__netcdf-c-1925"
    prompt = sample.input
    assert isinstance(prompt, str)
    assert "Unidata/netcdf-c" in prompt and "/work" in prompt
    assert source["problem_statement"].strip()[:200] in prompt
    assert source["pr_description"].strip()[:200] not in prompt
    assert task.metadata["criterion"] == "standard"
    assert "patch" not in sample.metadata  # the gold fix stays out of the log


def test_agent_solver_builds_and_bad_options_are_usage_errors(fixture_dir: Path) -> None:
    # builds only: the react() agent is not run by any test (it needs a tool-calling model)
    task = swe_rebench(data_dir=str(fixture_dir), solver="agent")
    assert task.metadata["solver"] == "agent"
    assert "bash tool" in task.dataset[0].input
    for bad in ({"solver": "chat"}, {"criterion": "loose"}, {"instances": "nope-1"}):
        with pytest.raises(HarnessUsageError):
            swe_rebench(data_dir=str(fixture_dir), **bad)


def test_quality_filters(data_dir: Path, fixture_dir: Path) -> None:
    from harness.suites.swe_rebench.task import filter_quality

    shipped = load_swe_tasks(str(data_dir))
    kept, meta = filter_quality(shipped, "authors")  # the authors code the shipped task "A"
    assert [t.instance_id for t in kept] == ["unidata__netcdf-c-1925"] and meta["dropped"] == 0
    fixtures = load_swe_tasks(str(fixture_dir))
    kept, meta = filter_quality(fixtures, "authors")  # our fixtures carry no authors' code
    assert kept == [] and meta["dropped"] == len(fixtures)
    # judges that answer nothing parseable abstain: every task is unjudged, and dropped
    kept, meta = filter_quality(fixtures, "judges:scripted/j1,scripted/j2")
    assert kept == [] and meta["judges"] == ["scripted/j1", "scripted/j2"]
    assert set(meta["majority"].values()) == {None}
    with pytest.raises(HarnessUsageError, match="unknown quality filter"):
        filter_quality(fixtures, "judges:")


def test_suite_runs_through_harness_eval(fixture_dir: Path, tmp_path: Path) -> None:
    from harness.eval import EvalRequest, run

    tasks = _tasks(fixture_dir)
    replay = tmp_path / "gold.jsonl"
    replay.write_text("".join(json.dumps({"id": i, "output": t.patch}) + "\n"
                              for i, t in tasks.items()))  # fmt: skip
    ok, rows, _ = run(EvalRequest(suite="swe-rebench", models=(f"replay/{replay}",),
                                    data_dir=str(fixture_dir), log_dir=str(tmp_path / "logs"),
                                    display="none"))  # fmt: skip
    assert ok and rows[0].n == len(tasks) and rows[0].errors == 0 and rows[0].value == 1.0


def test_docker_without_an_engine_names_bwrap_and_samples_get_their_image(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.sandbox import doctor
    from harness.suites.swe_rebench.task import task_sample, with_docker_image

    monkeypatch.setattr(doctor, "docker_available", lambda: "no docker engine runs here (test)")
    with pytest.raises(HarnessUsageError, match="use the bwrap sandbox instead"):
        swe_rebench(data_dir=str(fixture_dir), sandbox="docker")
    with pytest.raises(HarnessUsageError, match="unknown sandbox"):
        swe_rebench(data_dir=str(fixture_dir), sandbox="vm")
    task = load_swe_tasks(str(fixture_dir))[0]
    sample = with_docker_image(task_sample(task), task)
    assert sample.sandbox.type == "docker"
    compose = Path(sample.sandbox.config).read_text()
    assert f"image: {task.image_name}" in compose and "network_mode: none" in compose
