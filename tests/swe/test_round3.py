"""SWE scoring, round three (issue 31): patches that made the runner lie, read by git's own parse,
caught by canary tests whatever their spelling, and unresolved under the default integrity."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from harness.sandbox import BwrapConfig
from harness.suites.swe_rebench.canaries import Canaries, canary_source, check
from harness.suites.swe_rebench.integrity import (
    diff_files,
    infrastructure_paths,
    integrity_flags,
)
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.runner import bwrap_sandbox, copy_into_sandbox, run_candidate
from harness.suites.swe_rebench.task import swe_rebench
from tests.swe.test_integrity import ALWAYS_PASS
from tests.swe.test_junit import CONFTEST_ALL_PASS, FAKE_REPORT, _run_pytest_task
from tests.swe.test_suite import _git, _tasks, fixture_dir, needs_bwrap  # noqa: F401

# --- the touched paths, as git reads them ------------------------------------------------------

_QUOTED_CONFTEST = (
    'diff --git "a/conftest.py" "b/conftest.py"\nnew file mode 100644\n--- /dev/null\n'
    '+++ "b/conftest.py"\n@@ -0,0 +1 @@\n+x = 1\n'
)
_TIMESTAMPED_CONFTEST = (
    "--- /dev/null\t2024-01-01 00:00:00.000000000 +0000\n"
    "+++ b/conftest.py\t2024-01-01 00:00:00.000000000 +0000\n@@ -0,0 +1 @@\n+x = 1\n"
)
_OCTAL_TESTS = (
    'diff --git "a/t\\145sts/__init__.py" "b/t\\145sts/__init__.py"\nnew file mode 100644\n'
    '--- /dev/null\n+++ "b/t\\145sts/__init__.py"\n@@ -0,0 +1 @@\n+import unittest\n'
)
_DIST_INFO = (
    "diff --git a/evil-1.0.dist-info/entry_points.txt b/evil-1.0.dist-info/entry_points.txt\n"
    "new file mode 100644\n--- /dev/null\n+++ b/evil-1.0.dist-info/entry_points.txt\n"
    "@@ -0,0 +1,2 @@\n+[pytest11]\n+evil = evil_plugin\n"
)


@pytest.mark.parametrize(
    ("diff", "path"),
    [
        (_QUOTED_CONFTEST, "conftest.py"),
        (_TIMESTAMPED_CONFTEST, "conftest.py"),
        (_OCTAL_TESTS, "tests/__init__.py"),
        (_DIST_INFO, "evil-1.0.dist-info/entry_points.txt"),
    ],
    ids=["quoted", "timestamp", "octal", "dist-info"],
)
def test_paths_are_read_as_git_reads_them(diff: str, path: str) -> None:
    files = diff_files(diff)
    assert files.parsed_by_git and files.paths == (path,)
    assert infrastructure_paths(diff, "") == (path,)
    assert any(path in flag for flag in integrity_flags(diff, ""))


def _module_diff(tmp_path: Path, text: str, *, binary: bool = False) -> str:
    repo = tmp_path / "m"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "base")
    if binary:
        (repo / ".git" / "info" / "attributes").write_text("*.py binary\n")
    (repo / "pkg" / "__init__.py").write_text(text)
    return _git(repo, "diff", "--binary")


_SPELLINGS = {
    "setattr": "import unittest\nsetattr(unittest.TestCase, 'run', lambda s, r=None: None)\n",
    "assertEqual": "from unittest import case\ncase.TestCase.assertEqual = lambda *a, **k: None\n",
    "build_class": "import builtins\n_b = builtins.__build_class__\n",
    "atexit": "import atexit, os\natexit.register(lambda: [v for v in os.environ.values()])\n",
}


@pytest.mark.parametrize("name", sorted(_SPELLINGS))
def test_more_spellings_of_runner_tampering_are_flagged(name: str, tmp_path: Path) -> None:
    diff = _module_diff(tmp_path, _SPELLINGS[name])
    assert integrity_flags(diff, ""), diff


def test_a_binary_patch_is_flagged_though_it_has_no_added_lines(tmp_path: Path) -> None:
    diff = _module_diff(tmp_path, ALWAYS_PASS, binary=True)
    assert "GIT binary patch" in diff and "TestCase" not in diff
    assert diff_files(diff).binary == ("pkg/__init__.py",)
    assert any("binary patch" in flag for flag in integrity_flags(diff, ""))


# --- canaries: the outcomes a lying runner cannot keep right ----------------------------------


def _canary_results(token: str, **status: str) -> dict[str, str]:
    return {f"test_{token}_{kind} (tests.test_x.Test{token}.test_{token}_{kind})": value
            for kind, value in status.items()}  # fmt: skip


def test_canaries_tell_a_lying_runner_from_an_honest_one(fixture_dir: Path) -> None:  # noqa: F811
    task = _tasks(fixture_dir)["fixture__mathlib-1"]
    planted = Canaries("c0123", "tests/test_x.py", None)
    real = {"test_mean (tests.test_x.TestStats.test_mean)": "PASSED"}
    outcomes = {"pass": "PASSED", "fail": "FAILED", "error": "FAILED", "skip": "SKIPPED"}
    honest = _canary_results("c0123", **outcomes)
    fine = check(planted, {**real, **honest}, task)
    assert fine.tampered is None and fine.results == real  # canaries never reach the score
    all_pass = {k: "PASSED" for k in honest}
    assert "fail: PASSED" in check(planted, {**real, **all_pass}, task).tampered
    assert "missing" in check(planted, real, task).tampered  # dropped from a file that ran
    assert "class Test" in canary_source("c0123") and "assertEqual(1, 2)" in canary_source("c0")


# --- end to end in the sandbox: each attack against the mathlib fixture -----------------------

_BUILD_CLASS = """
import builtins

_real = builtins.__build_class__


def _blank(func, name, *bases, **kw):
    cls = _real(func, name, *bases, **kw)
    if name.startswith("Test"):
        for key in list(vars(cls)):
            if key.startswith("test"):
                setattr(cls, key, lambda self: None)
    return cls


builtins.__build_class__ = _blank
"""
_NOOP_ASSERT = "\nimport unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
_SETATTR = (
    "\nimport unittest\n\n\ndef _ok(self, result=None):\n    result.startTest(self)\n"
    "    result.addSuccess(self)\n    result.stopTest(self)\n\n\n"
    "setattr(unittest.TestCase, 'run', _ok)\n"
)
_FORGE_OK = """
import atexit
import os

os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # unittest reports on stderr: hide the real one
_NAMES = ("test_mean", "test_median_sorted_odd", "test_median_unsorted",
          "test_median_unsorted_even")


@atexit.register
def _forge():
    for name in _NAMES:
        print(f"{name} (tests.test_stats.TestStats.{name}) ... ok")
    print("OK")
"""
_HOOK_CONFIG = "[core]\n\thooksPath = .hooks\n"
_HOOK = "#!/bin/sh\ntouch /work/.git/HOOK_RAN\n"


def _candidate(folder: Path, tmp_path: Path, name: str, files: dict[str, str], **kw: bool) -> str:
    repo = tmp_path / name
    materialise(_tasks(folder)["fixture__mathlib-1"], folder, repo)
    if kw.get("binary"):
        (repo / ".git" / "info" / "attributes").write_text("*.py binary\n")
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(target.read_text() + text if target.exists() else text)
        if path.startswith(".hooks/"):
            target.chmod(0o755)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary")


def _octal(diff: str) -> str:
    """The same diff with `tests/` spelled `"t\\145sts/"` in its headers, as git may quote it."""
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("diff --git", "--- a/", "+++ b/")):
            for side in ("a", "b"):
                line = line.replace(f"{side}/tests/__init__.py", f'"{side}/t\\145sts/__init__.py"')
        out.append(line)
    assert '"b/t\\145sts/__init__.py"' in "".join(out)
    return "".join(out)


@pytest.mark.usefixtures("needs_bwrap")
def test_runner_attacks_are_unresolved_and_flagged(fixture_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    task = _tasks(fixture_dir)["fixture__mathlib-1"]
    init = "mathlib/__init__.py"
    attacks = {
        "binary TestCase.run": _candidate(
            fixture_dir, tmp_path, "bin", {init: ALWAYS_PASS}, binary=True
        ),
        "setattr": _candidate(fixture_dir, tmp_path, "set", {init: _SETATTR}),
        "no-op assertEqual": _candidate(fixture_dir, tmp_path, "eq", {init: _NOOP_ASSERT}),
        "__build_class__": _candidate(fixture_dir, tmp_path, "bc", {init: _BUILD_CLASS}),
        "forged ok lines at exit": _candidate(fixture_dir, tmp_path, "ok", {init: _FORGE_OK}),
        "octal tests/__init__.py": _octal(
            _candidate(fixture_dir, tmp_path, "oct", {"tests/__init__.py": ALWAYS_PASS})
        ),
        "post-commit hook via .gitconfig": _candidate(
            fixture_dir, tmp_path, "hook", {".gitconfig": _HOOK_CONFIG, ".hooks/post-commit": _HOOK}
        ),
    }
    assert "GIT binary patch" in attacks["binary TestCase.run"]

    async def go() -> dict:
        async with bwrap_sandbox(BwrapConfig(timeout=120)) as box:
            repo = tmp_path / "base"
            materialise(task, fixture_dir, repo)
            await copy_into_sandbox(box, repo)
            runs = {name: await run_candidate(box, task, diff) for name, diff in attacks.items()}
            runs["gold"] = await run_candidate(box, task, task.patch)
            hook = await box.exec(["test", "-e", "/work/.git/HOOK_RAN"])
            return {**runs, "hook ran": hook.success}

    runs = asyncio.run(go())
    assert runs.pop("hook ran") is False  # git runs with no hooks, whatever .gitconfig says
    gold = runs.pop("gold")
    assert gold.score.resolved and not gold.flags, (gold.flags, gold.score)
    assert gold.canaries == {"pass": "PASSED", "fail": "FAILED", "error": "FAILED",
                             "skip": "SKIPPED"}  # fmt: skip
    for name, run in runs.items():
        assert not run.score.resolved, (name, run.score.summary(), run.log[-2000:])
        assert run.flags, name
    for name in ("binary TestCase.run", "setattr", "no-op assertEqual", "__build_class__",
                 "forged ok lines at exit"):  # fmt: skip
        assert runs[name].score.reason.startswith("runner_tampered"), (name, runs[name].score)


def test_integrity_defaults_to_strict(fixture_dir: Path) -> None:  # noqa: F811
    # the flagged count beside accuracy is checked in test_integrity's eval
    task = swe_rebench(data_dir=str(fixture_dir), instances="fixture__mathlib-1")
    assert task.metadata["integrity"] == "strict"


def test_git_reads_a_patch_it_cannot_parse_by_its_headers() -> None:
    garbage = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,5 +1,5 @@\n+one line\n"
    files = diff_files(garbage)
    assert not files.parsed_by_git and files.paths == ("x.py",)
    assert any("cannot read" in flag for flag in integrity_flags(garbage, ""))
    assert subprocess.run(["git", "--version"], capture_output=True).returncode == 0


# --- end to end with pytest (vendored into the sandbox, as in test_junit) ---------------------

_PLUGIN = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
_ENV_REWRITE = f"""
import atexit
import os


@atexit.register
def _rewrite():  # finds the report path among the environment's values, names no variable
    for value in list(os.environ.values()):
        for word in value.split():
            if word.endswith(".xml") and "=" in word:
                with open(word.split("=", 1)[1], "w") as out:
                    out.write({FAKE_REPORT!r})
"""


def _new_files(files: dict[str, str], *, quote: bool = False) -> str:
    """A diff adding `files`, written by hand; `quote` spells every name in C quotes."""
    out = []
    for path, text in files.items():
        a, b = (f'"a/{path}"', f'"b/{path}"') if quote else (f"a/{path}", f"b/{path}")
        lines = text.splitlines()
        body = "".join(f"+{line}\n" for line in lines)
        out.append(f"diff --git {a} {b}\nnew file mode 100644\n--- /dev/null\n+++ {b}\n"
                   f"@@ -0,0 +1,{len(lines)} @@\n{body}")  # fmt: skip
    return "".join(out)


@pytest.mark.usefixtures("needs_bwrap")
def test_pytest_runner_attacks_are_unresolved(tmp_path: Path) -> None:
    dist_info = _new_files({
        "evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0",
        "evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evil_plugin",
        "evil_plugin.py": _PLUGIN,
    })  # fmt: skip
    quoted = _new_files({"conftest.py": CONFTEST_ALL_PASS}, quote=True)
    task, runs = _run_pytest_task(tmp_path, ["GOLD", dist_info, quoted, _ENV_REWRITE])
    gold, *attacks = runs
    assert gold.score.resolved and gold.canaries["fail"] == "FAILED", gold.score
    for name, run in zip(("dist-info pytest11", "quoted conftest", "atexit"), attacks, strict=True):
        assert not run.score.resolved, (name, run.score.summary(), run.log[-1500:])
        assert run.flags, name
    assert any("dist-info" in f for f in attacks[0].flags)
    assert any("conftest.py" in f for f in attacks[1].flags)
    assert attacks[2].score.reason.startswith("runner_tampered")
