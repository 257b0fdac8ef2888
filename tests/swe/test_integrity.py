"""Candidates that make the test runner lie: restored where they touch the tests, flagged, and
unresolved under -T integrity=strict (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from harness.suites.swe_rebench.integrity import infrastructure_paths, integrity_flags
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.task import swe_rebench
from tests.swe.test_suite import _eval, _git, _tasks, fixture_dir, needs_bwrap  # noqa: F401

ALWAYS_PASS = """
import unittest


def _always_pass(self, result=None):
    result.startTest(self)
    result.addSuccess(self)
    result.stopTest(self)


unittest.TestCase.run = _always_pass
"""


def _patch(folder: Path, tmp_path: Path, name: str, path: str, text: str) -> str:
    repo = tmp_path / name
    materialise(_tasks(folder)["fixture__mathlib-1"], folder, repo)
    target = repo / path
    target.write_text(target.read_text() + text if target.exists() else text)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached")


def test_flags_name_what_was_found():
    test_patch = (
        "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n"
        "+++ b/tests/test_x.py\n"
    )
    candidate = (
        "diff --git a/pkg/__init__.py b/pkg/__init__.py\n--- a/pkg/__init__.py\n"
        "+++ b/pkg/__init__.py\n+unittest.TestCase.run = lambda self, r=None: None\n"
        "diff --git a/conftest.py b/conftest.py\n--- /dev/null\n+++ b/conftest.py\n"
        "+def pytest_runtest_makereport(item, call): ...\n"
        "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n+++ b/pyproject.toml\n"
    )
    assert infrastructure_paths(candidate, test_patch) == ("conftest.py",)
    flags = "\n".join(integrity_flags(candidate, test_patch))
    assert "conftest.py" in flags and "TestCase.run" in flags and "pytest hooks" in flags
    assert "pyproject.toml" in flags
    honest = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n+x = sorted(x)\n"
    assert integrity_flags(honest, test_patch) == ()


@pytest.mark.usefixtures("needs_bwrap")
def test_a_patched_test_runner_is_flagged_and_strict_scores_it_unresolved(
    fixture_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    in_package = _patch(fixture_dir, tmp_path, "pkg", "mathlib/__init__.py", ALWAYS_PASS)
    in_tests = _patch(fixture_dir, tmp_path, "tst", "tests/__init__.py", ALWAYS_PASS)
    outputs = {"fixture__mathlib-1": in_package}
    flagged = _eval(fixture_dir, tmp_path / "flag", outputs, instances="fixture__mathlib-1",
                    integrity="flag")  # fmt: skip
    [score] = flagged[0].scores.values()
    # every test "passes", the canaries too (issue 31): the runner lied, so even under `flag`
    # the run is not resolved, and the flags name both the spelling and the canaries
    flags = " ".join(score.metadata["integrity_flags"])
    assert score.value == 0 and "TestCase.run" in flags and "canary" in flags, flags
    assert score.metadata["canaries"]["fail"] == "PASSED"
    # strict, the default: unresolved, and the `flagged` metric counts it beside accuracy
    replay = tmp_path / "strict.jsonl"
    replay.write_text(json.dumps({"id": "fixture__mathlib-1", "output": in_package}) + "\n")
    (log,) = inspect_eval(
        swe_rebench(data_dir=str(fixture_dir), instances="fixture__mathlib-1"),
        model=f"replay/{replay}", display="none", log_dir=str(tmp_path / "strict"),
        score_on_error=True,
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples[0].scores["swe_resolved"].value == 0
    metrics = log.results.scores[0].metrics
    assert metrics["accuracy"].value == 0 and metrics["flagged"].value == 1, metrics
    # in the tests' own package, the patch is undone before the tests run: not resolved at all
    restored = _eval(fixture_dir, tmp_path / "restored", {"fixture__mathlib-1": in_tests},
                     instances="fixture__mathlib-1")  # fmt: skip
    [score] = restored[0].scores.values()
    assert score.value == 0 and "tests/__init__.py" in " ".join(score.metadata["integrity_flags"])
