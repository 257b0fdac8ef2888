"""Results from the runner's JUnit report, not from stdout (issue 20, SWE scoring).

The parser on hand-written reports and on reports the real runners (pytest 9.2.0, node 20.20.2)
write here, checked against the stdout parsers; hostile XML refused; hostile report files
refused without blocking; and, in the bwrap sandbox, a candidate that forges stdout (resolved
on the stdout path, not on the report), one that plants reports where it guesses they go, and
one that goes after the real report (flagged: the limit of this defence).

The sandbox's python3 has no pytest, so the pytest runs in the sandbox use this environment's
own pytest, copied beside the repository's git data (`.git/pyvendor`), where no candidate diff
reaches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment
from harness.suites.swe_rebench.integrity import integrity_flags
from harness.suites.swe_rebench.junit import (
    JUNIT_RUNNERS,
    MAX_REPORT_BYTES,
    JunitReportError,
    node_results,
    parse_junit,
    pytest_junit_key,
    pytest_results,
)
from harness.suites.swe_rebench.log_parsers import (
    FAILED,
    PASSED,
    SKIPPED,
    parse_log,
    parse_log_node_test,
    parse_log_pytest,
)
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.runner import (
    CandidateRun,
    bwrap_sandbox,
    copy_into_sandbox,
    run_candidate,
)
from harness.suites.swe_rebench.scoring import score_run
from harness.suites.swe_rebench.task_format import SweTask, parse_task
from harness.suites.swe_rebench.test_outcomes import read_report
from tests.swe.make_fixture_tasks import FIXTURES, _diff, _git, _write
from tests.swe.rows import task_row
from tests.swe.test_suite import _eval, _tasks, fixture_dir, needs_bwrap  # noqa: F401

# --- the parser on hand-written reports ------------------------------------------------------

XUNIT1 = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="2" failures="1" skipped="1"
tests="11">
<testcase classname="tests.sub.test_a" name="test_pass" file="tests/sub/test_a.py" line="2"/>
<testcase classname="tests.sub.test_a" name="test_fail" file="tests/sub/test_a.py" line="4">
  <failure message="assert 1 == 2">def test_fail(): &gt; assert 1 == 2</failure></testcase>
<testcase classname="tests.sub.test_a" name="test_teardown" file="tests/sub/test_a.py">
  <error message="failed on teardown with &quot;RuntimeError&quot;">RuntimeError</error>
</testcase>
<testcase classname="tests.sub.test_a" name="test_skip" file="tests/sub/test_a.py">
  <skipped type="pytest.skip" message="no">tests/sub/test_a.py:5: no</skipped></testcase>
<testcase classname="tests.sub.test_a" name="test_xfail" file="tests/sub/test_a.py">
  <skipped type="pytest.xfail" message="" /></testcase>
<testcase classname="tests.sub.test_a" name="test_param[a b]" file="tests/sub/test_a.py"/>
<testcase classname="tests.sub.test_a" name="test_param[c::d]" file="tests/sub/test_a.py"/>
<testcase classname="tests.sub.test_a" name="test_param[e/f]" file="tests/sub/test_a.py">
  <failure message="e/f">boom</failure></testcase>
<testcase classname="tests.sub.test_a.TestOuter.TestInner" name="test_n"
  file="tests/sub/test_a.py"><system-out>print output</system-out></testcase>
<testcase classname="tests.sub.test_a" name="test_unlisted" file="tests/sub/test_a.py"/>
<testcase classname="" name="tests.test_broken" file="tests/test_broken.py">
  <error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>
"""
LISTED = (
    "tests/sub/test_a.py::test_pass",
    "tests/sub/test_a.py::test_fail",
    "tests/sub/test_a.py::test_teardown",
    "tests/sub/test_a.py::test_skip",
    "tests/sub/test_a.py::test_xfail",
    "tests/sub/test_a.py::test_param[a b]",
    "tests/sub/test_a.py::test_param[c::d]",
    "tests/sub/test_a.py::test_param[e/f]",
    "tests/sub/test_a.py::TestOuter::TestInner::test_n",
)
EXPECTED = {
    "tests/sub/test_a.py::test_pass": PASSED,
    "tests/sub/test_a.py::test_fail": FAILED,
    "tests/sub/test_a.py::test_teardown": FAILED,  # an error is a failure, as on stdout
    "tests/sub/test_a.py::test_skip": SKIPPED,
    "tests/sub/test_a.py::test_xfail": SKIPPED,  # an expected failure is not a pass (issue 31)
    "tests/sub/test_a.py::test_param[a b]": PASSED,
    "tests/sub/test_a.py::test_param[c::d]": PASSED,
    "tests/sub/test_a.py::test_param[e/f]": FAILED,
    "tests/sub/test_a.py::TestOuter::TestInner::test_n": PASSED,
}


def test_pytest_junit_key_follows_pytest() -> None:
    assert pytest_junit_key("tests/a/test_b.py::TestC::test_d[x::y/z]") == (
        "tests.a.test_b.TestC",
        "test_d[x::y/z]",
    )
    assert pytest_junit_key("test_top.py::test_e") == ("test_top", "test_e")


def test_xunit1_statuses_and_ids() -> None:
    results = pytest_results(parse_junit(XUNIT1), LISTED)
    # the unlisted case gets a node id from its file; the collection error is left out
    assert results == {**EXPECTED, "tests/sub/test_a.py::test_unlisted": PASSED}


def test_xunit2_has_no_file_and_still_maps_every_listed_id() -> None:
    xunit2 = XUNIT1.replace(b' file="tests/sub/test_a.py"', b"").replace(b' line="2"', b"")
    assert b"file=" not in xunit2.replace(b'file="tests/test_broken.py"', b"")
    results = pytest_results(parse_junit(xunit2), LISTED)
    assert results == {**EXPECTED, "tests.sub.test_a::test_unlisted": PASSED}


NODE_REPORT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites>
\t<testcase name="a b" time="0.01" classname="test"/>
\t<testcase name="c" time="0.01" classname="test" failure="1 == 2">
\t\t<failure type="testCodeFailure" message="1 == 2">[Error: 1 == 2]</failure>
\t</testcase>
\t<testcase name="s" classname="test"><skipped type="skipped" message="true"/></testcase>
\t<testcase name="todo one" classname="test"><skipped type="todo" message="true"/></testcase>
\t<testcase name="say &amp;quot;hi&amp;quot; &lt;&amp;>" classname="test"/>
\t<testsuite name="parent" tests="2" failures="1">
\t\t<testcase name="child ok" classname="test"/>
\t\t<testcase name="child bad" classname="test" failure="x"><failure message="x"/></testcase>
\t</testsuite>
\t<testsuite name="d1"><testsuite name="d2">
\t\t<testcase name="deep" classname="test"/>
\t</testsuite></testsuite>
\t<!-- tests 8 -->
</testsuites>
"""


def test_node_report_names_nested_tests_as_the_tap_parser_does() -> None:
    assert node_results(parse_junit(NODE_REPORT)) == {
        "a b": PASSED,
        "c": FAILED,
        "s": SKIPPED,
        "todo one": SKIPPED,
        'say "hi" <&>': PASSED,  # node escapes '"' twice; the name is read back as TAP has it
        "parent": FAILED,  # a suite takes the worst status inside it, as its TAP line does
        "parent › child ok": PASSED,
        "parent › child bad": FAILED,
        "d1": PASSED,
        "d1 › d2": PASSED,
        "d1 › d2 › deep": PASSED,
    }


# --- the parser on the real runners' reports, against their stdout ---------------------------

PYTEST_MODULE = """import pytest


def test_pass():
    pass


def test_fail():
    assert 1 == 2


@pytest.mark.xfail
def test_xfail():
    assert 0


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


@pytest.mark.parametrize("x", ["a b", "c::d", "e/f", "g[h]", "i - j", "\\u00fc"])
def test_param(x):
    assert x != "e/f"


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown")


def test_teardown_error(bad_teardown):
    pass


class TestOuter:
    def test_m(self):
        pass

    class TestInner:
        def test_n(self):
            pass
"""


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_a_real_pytest_report_agrees_with_the_stdout_parser(tmp_path: Path, family: str) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "sub" / "test_a.py").write_text(PYTEST_MODULE)
    report = tmp_path / "out" / "report.xml"
    env = {**os.environ, **JUNIT_RUNNERS["parse_log_pytest"].env(str(report))}
    # a later -o wins over the one in PYTEST_ADDOPTS: xunit2 is pytest's own default
    argv = [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-o",
            f"junit_family={family}", "tests"]  # fmt: skip
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout[-2000:]
    on_stdout = parse_log_pytest(done.stdout)
    assert len(on_stdout) == 13 and on_stdout["tests/sub/test_a.py::test_param[e/f]"] == FAILED
    assert (b'file="' in report.read_bytes()) == (family == "xunit1")
    assert pytest_results(parse_junit(report.read_bytes()), on_stdout) == on_stdout


NODE_TESTS = """'use strict';
const test = require('node:test');
const assert = require('node:assert');

test('a b', () => {});
test('c', () => { assert.strictEqual(1, 2); });
test('s', { skip: true }, () => {});
test('say "hi"', () => {});
test('parent', async (t) => {
  await t.test('child ok', () => {});
  await t.test('child bad', () => { assert.ok(false); });
});
test.describe('d1', () => {
  test.describe('d2', () => { test.it('deep', () => {}); });
  test.it('shallow', () => { assert.ok(false); });
});
"""


def test_a_real_node_report_agrees_with_the_tap_parser(tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "a.test.js").write_text(NODE_TESTS)
    report = tmp_path / "report.xml"
    env = {**os.environ, **JUNIT_RUNNERS["parse_log_node_test"].env(str(report))}
    done = subprocess.run(
        ["node", "--test"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    on_stdout = parse_log_node_test(done.stdout)
    assert len(on_stdout) == 11 and on_stdout["d1 › shallow"] == FAILED, done.stdout[-2000:]
    assert node_results(parse_junit(report.read_bytes())) == on_stdout


# --- hostile XML -----------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuites><testcase classname="t" name="&lol9;"/></testsuites>
"""
HOSTILE = {
    "billion laughs": BILLION_LAUGHS,
    "external entity": b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">'
    b']><testsuites><testcase classname="t" name="&x;"/></testsuites>',
    "parameter entity": b'<!DOCTYPE r [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]>'
    b"<testsuites/>",
    "external DTD": b'<!DOCTYPE testsuites SYSTEM "file:///etc/passwd"><testsuites/>',
    "undeclared entity": b'<testsuites><testcase classname="t" name="&x;"/></testsuites>',
    "not XML": b"PASSED tests/t.py::test_a\n",
    "cut short": b'<testsuites><testcase classname="t" name="a">',
    "another root": b'<html><testcase classname="t" name="a"/></html>',
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_xml_is_refused_without_expanding_anything(name: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(JunitReportError):
            parse_junit(HOSTILE[name])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024  # the billion laughs would need about 3 GB


def test_an_oversized_report_is_refused_before_parsing() -> None:
    with pytest.raises(JunitReportError, match="over"):
        parse_junit(b" " * (MAX_REPORT_BYTES + 1))


# --- hostile report files, read from the host ------------------------------------------------


def test_the_report_reader_refuses_links_fifos_folders_and_huge_files(tmp_path: Path) -> None:
    box = BwrapSandboxEnvironment(tmp_path, BwrapConfig())
    folder = tmp_path / ".git" / "harness-junit-x"
    folder.mkdir(parents=True)
    (folder / "good.xml").write_bytes(b"<testsuites/>")
    (folder / "link.xml").symlink_to("/etc/passwd")
    os.mkfifo(folder / "fifo.xml")  # opened for reading, a FIFO would block forever
    (folder / "dir.xml").mkdir()
    with open(folder / "huge.xml", "wb") as huge:
        huge.truncate(MAX_REPORT_BYTES + 1)  # sparse: no disk used
    (tmp_path / ".git" / "linked").symlink_to(folder)

    def read(name: str) -> bytes | None:
        return asyncio.run(read_report(box, f"/work/.git/{name}", "/work"))

    assert read("harness-junit-x/good.xml") == b"<testsuites/>"
    assert read("harness-junit-x/absent.xml") is None
    for name in ("link.xml", "fifo.xml", "dir.xml", "huge.xml"):
        with pytest.raises(JunitReportError):
            read(f"harness-junit-x/{name}")
    with pytest.raises(JunitReportError):  # a link on the way, not only at the end
        read("linked/good.xml")


def test_a_candidate_naming_the_report_is_flagged() -> None:
    candidate = (
        "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n"
        '+path = os.environ["PYTEST_ADDOPTS"].split("=")[1]\n'
    )
    assert "names the test framework's internals: the test report" in integrity_flags(candidate, "")


# --- in the sandbox: the mathlib fixture run by pytest ---------------------------------------

_STATS = "tests/test_stats.py::TestStats::"
PYTEST_LINE = "PYTHONPATH=/work/.git/pyvendor python3 -m pytest -rA -p no:cacheprovider tests"
_VENDORED = ("pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments")

FORGE_STDOUT = f"""
import fcntl
import os
import stat

_LIES = "".join(f"PASSED {_STATS}{{name}}\\n" for name in (
    "test_mean", "test_median_sorted_odd", "test_median_unsorted", "test_median_unsorted_even"))
for _fd in range(3, 256):  # the runner's own stdout and stderr, which it saved: write-end pipes
    try:
        if not stat.S_ISFIFO(os.fstat(_fd).st_mode):
            continue
        if fcntl.fcntl(_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            continue
    except OSError:
        continue
    os.write(_fd, _LIES.encode())
    _LIES = ""
    os.dup2(os.open(os.devnull, os.O_WRONLY), _fd)  # and what the runner prints goes nowhere
"""

_ALL_PASS = "".join(
    f'<testcase classname="tests.test_stats.TestStats" name="{name}"/>'
    for name in ("test_mean", "test_median_sorted_odd", "test_median_unsorted",
                 "test_median_unsorted_even")
)  # fmt: skip
FAKE_REPORT = f"<testsuites><testsuite name='pytest'>{_ALL_PASS}</testsuite></testsuites>"

PLANT_GUESSES = f"""
import os

for _path in ("/work/report.xml", "/work/junit.xml", "/work/.git/report-0.xml",
              "/work/.git/harness-junit/report-0.xml", "/tmp/report.xml", "/tmp/junit.xml",
              "/work/.git/harness-junit-" + "0" * 32 + "/report-0.xml"):
    try:
        os.makedirs(os.path.dirname(_path), exist_ok=True)
        with open(_path, "w") as _out:
            _out.write({FAKE_REPORT!r})
    except OSError:
        pass
"""

REWRITE_REAL = f"""
import atexit
import os


@atexit.register
def _rewrite():  # after pytest has written the real report
    path = os.environ["PYTEST_ADDOPTS"].split()[0].split("=", 1)[1]
    with open(path, "w") as out:
        out.write({FAKE_REPORT!r})
"""

SWAP_REAL = """
import atexit
import os


@atexit.register
def _swap():
    path = os.environ["PYTEST_ADDOPTS"].split()[0].split("=", 1)[1]
    os.unlink(path)
    {how}
"""


def _pytest_task(tmp_path: Path) -> tuple[SweTask, Path]:
    """The mathlib fixture as a repository whose tests pytest runs, and its task."""
    fixture = FIXTURES[0]
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, fixture.base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    row = task_row(
        instance_id="fixture__mathlib-1",
        repo=fixture.repo,
        patch=_diff(repo, fixture.fix),
        test_patch=_diff(repo, fixture.tests),
        FAIL_TO_PASS=[f"{_STATS}test_median_unsorted", f"{_STATS}test_median_unsorted_even"],
        PASS_TO_PASS=[f"{_STATS}test_mean", f"{_STATS}test_median_sorted_odd"],
        install_config={"install": [], "test_cmd": [PYTEST_LINE], "log_parser": "parse_log_pytest"},
    )
    return parse_task(row, "pytest fixture"), repo


def _in_package(repo: Path, text: str) -> str:
    """A candidate that adds `text` to the package's own `__init__.py` (not test code)."""
    return _diff(repo, {"mathlib/__init__.py": text})


def _run_pytest_task(
    tmp_path: Path, candidates: list[str | tuple[str, str]]
) -> tuple[SweTask, list[CandidateRun]]:
    """Run each candidate: "GOLD", "" (empty), text for the package's `__init__.py`, a
    (path, text) pair for a file of its own, or a diff as it is (text starting "diff --git")."""
    task, repo = _pytest_task(tmp_path)
    texts = [
        _diff(repo, dict([c])) if isinstance(c, tuple)
        else c if c in ("", "GOLD") or c.startswith("diff --git") else _in_package(repo, c)
        for c in candidates
    ]  # fmt: skip

    async def go() -> list[CandidateRun]:
        async with bwrap_sandbox(BwrapConfig(timeout=120)) as box:
            await copy_into_sandbox(box, repo)
            vendor = box.as_type(BwrapSandboxEnvironment).work_dir / ".git" / "pyvendor"
            for name in _VENDORED:
                source = Path(__import__(name).__file__)
                if source.name == "__init__.py":
                    ignore = shutil.ignore_patterns("__pycache__")
                    shutil.copytree(source.parent, vendor / name, ignore=ignore)
                else:
                    shutil.copy(source, vendor / source.name)
                for info in source.parent.parent.glob(f"{name}-*.dist-info"):  # versions
                    shutil.copytree(info, vendor / info.name)
            runs = []
            for text in texts:
                patch = task.patch if text == "GOLD" else text
                runs.append(await run_candidate(box, task, patch, timeout=120))
            return runs

    return task, asyncio.run(go())


@pytest.mark.usefixtures("needs_bwrap")
def test_forged_stdout_passes_on_the_stdout_path_and_fails_on_the_report(tmp_path: Path) -> None:
    task, (gold, empty, forged) = _run_pytest_task(tmp_path, ["GOLD", "", FORGE_STDOUT])
    assert gold.score.resolved and gold.results_source == "junit" and gold.results_reason is None
    assert not empty.score.resolved and empty.score.failed == tuple(sorted(task.fail_to_pass))
    # the forged log: only the lies are left on stdout, and it reads as resolved there
    assert "PASSED tests/test_stats.py::TestStats::test_median_unsorted" in forged.log
    assert "FAILED" not in forged.log
    assert score_run(task, parse_log("parse_log_pytest", forged.log)).resolved
    # the runner's report says what happened: the bug is not fixed. No flag names the attack
    assert forged.results_source == "junit" and forged.flags == ()
    assert not forged.score.resolved and forged.score.reason is None
    assert forged.score.failed == tuple(sorted(task.fail_to_pass))


@pytest.mark.usefixtures("needs_bwrap")
def test_reports_planted_where_a_candidate_guesses_change_nothing(tmp_path: Path) -> None:
    task, (empty, planted) = _run_pytest_task(tmp_path, ["", PLANT_GUESSES])
    assert planted.results_source == "junit" and not planted.score.resolved
    assert planted.score.failed == empty.score.failed == tuple(sorted(task.fail_to_pass))


@pytest.mark.usefixtures("needs_bwrap")
def test_a_candidate_that_goes_after_the_real_report(tmp_path: Path) -> None:
    swaps = [SWAP_REAL.format(how=how) for how in (
        'os.symlink("/etc/passwd", path)', "os.mkfifo(path)", "os.mkdir(path)")]  # fmt: skip
    task, (rewritten, *swapped) = _run_pytest_task(tmp_path, [REWRITE_REAL, *swaps])
    # code in the test process can rewrite the report it writes. It names the report, so it
    # is flagged; and the canaries are missing from the forged report (issue 31), so the run
    # is unresolved whatever the integrity mode
    assert "the test report" in " ".join(rewritten.flags)
    assert not rewritten.score.resolved and rewritten.score.reason.startswith("runner_tampered")
    # a link, a FIFO or a folder where the report should be: refused, an error, no hang
    for run in swapped:
        assert not run.score.resolved and run.results_source == "stdout"
        assert run.score.reason is not None and run.score.reason.startswith("junit_report_refused")


CONFTEST_ALL_PASS = """
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"  # every failure reported as a pass
"""


@pytest.mark.usefixtures("needs_bwrap")
def test_a_conftest_that_makes_every_test_pass_is_removed_and_flagged(tmp_path: Path) -> None:
    # the attack of issue 20: a new conftest.py at the root rewrites every report as passed.
    # It is the task's test configuration, so it is removed before the tests run, and flagged
    task, (alone, with_runner_patch) = _run_pytest_task(
        tmp_path, [("conftest.py", CONFTEST_ALL_PASS), ("tests/conftest.py", CONFTEST_ALL_PASS)]
    )
    for run in (alone, with_runner_patch):
        assert run.results_source == "junit" and not run.score.resolved, run.score
        assert run.score.failed == tuple(sorted(task.fail_to_pass))
        flags = " ".join(run.flags)
        assert "conftest.py" in flags and "pytest hooks" in flags, run.flags


# --- in the sandbox: the node fixture, and the eval's metadata -------------------------------


@pytest.mark.usefixtures("needs_bwrap")
def test_a_missing_report_is_an_error_not_a_pass(fixture_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    task = _tasks(fixture_dir)["fixture__jsrange-3"]
    lies = "".join(f"ok {i} - {name}\n" for i, name in
                   enumerate((*task.fail_to_pass, *task.pass_to_pass), 1))  # fmt: skip
    # a test line that never runs node: it prints a log that reads as all passed
    forged = dataclasses.replace(
        task,
        install_config=dataclasses.replace(task.install_config, test_cmd=(f"printf '{lies}'",)),
    )
    repo = tmp_path / "repo"
    materialise(task, fixture_dir, repo)

    async def go() -> tuple[CandidateRun, CandidateRun]:
        async with bwrap_sandbox(BwrapConfig(timeout=120)) as box:
            await copy_into_sandbox(box, repo)
            return (
                await run_candidate(box, task, task.patch, timeout=120),
                await run_candidate(box, forged, "", timeout=120),
            )

    gold, missing = asyncio.run(go())
    assert gold.score.resolved and gold.results_source == "junit"
    assert score_run(forged, parse_log("parse_log_node_test", missing.log)).resolved
    assert not missing.score.resolved and missing.results_source == "stdout"
    assert missing.score.reason == "junit_report_missing: no test line wrote its report"


@pytest.mark.usefixtures("needs_bwrap")
def test_the_score_says_where_its_results_came_from(fixture_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    tasks = _tasks(fixture_dir)
    ids = ("fixture__jsrange-3", "fixture__mathlib-1")
    samples = _eval(
        fixture_dir, tmp_path, {i: tasks[i].patch for i in ids}, instances=",".join(ids)
    )
    meta = {s.id: next(iter(s.scores.values())).metadata for s in samples}
    assert {i: m["results_source"] for i, m in meta.items()} == {
        "fixture__jsrange-3": "junit",
        "fixture__mathlib-1": "stdout",
    }
    assert meta["fixture__jsrange-3"]["results_reason"] is None
    assert "no JUnit report" in meta["fixture__mathlib-1"]["results_reason"]
    assert all(next(iter(s.scores.values())).value == 1 for s in samples)
