"""The SWE-rebench V2 log parsers, on logs the real tools wrote and on the spec's examples.

The logs in `captured_logs/` come from `capture_logs.py`, which runs pytest 9.2.0 and unittest
(Python 3.11.7), node v20.20.2 (`node --test`), Jest 29.7.0 and go 1.19.8 on the small projects
it writes. Each expected mapping below was worked out by hand from those projects' sources,
not copied from a parser's output. Nothing here runs node, npm, Jest or go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.suites.swe_rebench.log_parsers import (
    FAILED,
    PARSERS,
    PASSED,
    SKIPPED,
    get_parser,
    normalise_test_name,
    parse_log,
    parse_log_go_test,
    parse_log_jest,
    parse_log_jq,
    parse_log_node_test,
    parse_log_pytest,
    parse_log_unittest,
)

LOGS = Path(__file__).parent / "captured_logs"

# --- expected mappings, from the projects in capture_logs.py ----------------------------------

_CALC = "tests/test_calc.py::"
# In both pytest runs. The xfail test fails as marked (XFAIL) and the non-strict xfail test
# passes (XPASS): SKIPPED and PASSED. The set-up error is FAILED. The teardown error gives a
# PASSED line and then an ERROR line, so FAILED. The parametrized case "p - q" fails its assertion.
PYTEST_RAN = {
    _CALC + "test_add": PASSED,
    _CALC + "test_add_wrong": FAILED,
    _CALC + "test_xfail": SKIPPED,  # an expected failure is not a pass (issue 31)
    _CALC + "test_xpass": PASSED,
    _CALC + "test_setup_error": FAILED,
    _CALC + "test_teardown_error": FAILED,
    _CALC + "test_param[a b]": PASSED,
    _CALC + "test_param[x[1]]": PASSED,
    _CALC + "test_param[p - q]": FAILED,
    _CALC + "test_param[plain]": PASSED,
    _CALC + "TestGroup::test_inner": PASSED,
    _CALC + "TestGroup::test_inner_fail": FAILED,
}
# -rA prints "SKIPPED [1] tests/test_calc.py:16: not today", which names no test.
PYTEST_RA = PYTEST_RAN
PYTEST_V = {**PYTEST_RAN, _CALC + "test_skipped": SKIPPED}


def _ut(method: str, cls: str = "TestMath") -> str:
    return f"{method} (pkg.tests.test_things.{cls}.{method})"


# Python 3.11 names. test_subtests fails for i=1; every subtest of test_subtests_pass passes.
# setUpClass fails, so TestSetupFails.test_never_runs never runs and is missing.
UNITTEST_V = {
    _ut("test_add"): PASSED,
    _ut("test_add_wrong"): FAILED,
    _ut("test_raises"): FAILED,
    _ut("test_skipped"): SKIPPED,
    _ut("test_documented"): PASSED,
    _ut("test_expected_failure"): PASSED,
    _ut("test_unexpected_success"): FAILED,
    _ut("test_subtests"): FAILED,
    _ut("test_subtests_pass"): PASSED,
    _ut("test_prints"): PASSED,
    "setUpClass (pkg.tests.test_things.TestSetupFails)": FAILED,
}

# Suites and parent tests are results too. A suite fails when a child fails. The todo test is
# SKIPPED. The "(1.5s)" inside a name stays, because it does not end the name.
NODE_TEST = {
    "adds numbers": PASSED,
    "fails to add": FAILED,
    "skipped test": SKIPPED,
    "todo test": SKIPPED,
    "outer suite › inner passes": PASSED,
    "outer suite › inner fails": FAILED,
    "outer suite › nested suite › deep passes": PASSED,
    "outer suite › nested suite": PASSED,
    "outer suite": FAILED,
    "parent with subtests › child one": PASSED,
    "parent with subtests › child two": FAILED,
    "parent with subtests": FAILED,
    "name with # hash and \\ backslash": PASSED,
    "takes (1.5s) literally": PASSED,
}

# test.each: 1*2 == 2 passes, 2*2 == 5 fails. "slow test" loses its "(30 ms)" timing.
JEST_VERBOSE = {  # bare titles, as the authors' parsers name Jest tests (describe blocks dropped)
    "adds numbers": PASSED,
    "subtracts wrongly": FAILED,
    "divides evenly": PASSED,
    "divides by zero": SKIPPED,
    "doubles 1 to 2": PASSED,
    "doubles 2 to 5": FAILED,
    "top-level passes": PASSED,
    "write more tests": SKIPPED,
    "slow test": PASSED,
    "works": PASSED,
    "also fails": FAILED,
    "prints": PASSED,
}
# Without --verbose and with three files, Jest prints only the failures' headers.
JEST_DEFAULT = {name: status for name, status in JEST_VERBOSE.items() if status == FAILED}

# Go rewrites spaces in subtest names to "_". TestPanics panics and ends its package's binary, so
# TestAfter never runs and is missing. A parent fails when a subtest fails.
GO_TEST_V = {
    "TestAdd": PASSED,
    "TestAddWrong": FAILED,
    "TestSkipped": SKIPPED,
    "TestTable": FAILED,
    "TestTable/small_numbers": PASSED,
    "TestTable/negative": PASSED,
    "TestTable/wrong_want": FAILED,
    "TestTable/nested": PASSED,
    "TestTable/nested/deep_pass": PASSED,
    "TestTable/nested/deep_skip": SKIPPED,
    "TestParallel": PASSED,
    "TestParallel/p1": PASSED,
    "TestParallel/p2": PASSED,
    "TestBefore": PASSED,
    "TestPanics": FAILED,
}

# log file -> (registered parser name, tool named in its first line, expected mapping)
CASES = {
    "pytest_ra.log": ("parse_log_pytest", "pytest 9.", PYTEST_RA),
    "pytest_v.log": ("parse_log_pytest", "pytest 9.", PYTEST_V),
    "unittest_v.log": ("parse_log_unittest", "python 3.11", UNITTEST_V),
    "node_test_tap.log": ("parse_log_node_test", "node v20", NODE_TEST),
    "node_test_spec.log": ("parse_log_node_test", "node v20", NODE_TEST),
    "jest_verbose.log": ("parse_log_jest", "jest 29.", JEST_VERBOSE),
    "jest_default.log": ("parse_log_jest", "jest 29.", JEST_DEFAULT),
    "go_test_v.log": ("parse_log_go_test", "go1.19", GO_TEST_V),
}


def read_log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


# --- the real logs --------------------------------------------------------------------------


@pytest.mark.parametrize("log_name", sorted(CASES))
def test_parser_reads_real_log(log_name: str) -> None:
    parser_name, _, expected = CASES[log_name]
    assert parse_log(parser_name, read_log(log_name)) == expected


@pytest.mark.parametrize("log_name", sorted(CASES))
def test_log_records_how_it_was_captured(log_name: str) -> None:
    first = read_log(log_name).splitlines()[0]
    assert first.startswith("# captured with: ")
    assert CASES[log_name][1] in first
    assert "hand-written" not in first


def test_every_log_in_the_folder_is_checked() -> None:
    assert sorted(path.name for path in LOGS.glob("*.log")) == sorted(CASES)


def test_colour_codes_in_a_real_log_do_not_reach_names() -> None:
    log = read_log("pytest_v.log")
    assert "\x1b[32mPASSED" in log  # captured with --color=yes
    assert all("\x1b" not in name for name in parse_log_pytest(log))


# Each parser finds nothing in the other formats' logs. The one exception is by the spec's design:
# unittest's failure-detail headers ("FAIL: test_x (...)") have the jq format.
CROSS_MATCHES = {
    ("parse_log_jq", "unittest_v.log"): {
        _ut("test_add_wrong"): FAILED,
        _ut("test_subtests") + " (i=1)": FAILED,
    },
}


@pytest.mark.parametrize("parser_name", ["parse_log_jq", *sorted({c[0] for c in CASES.values()})])
def test_parsers_ignore_other_formats(parser_name: str) -> None:
    for log_name, (own_parser, _, _) in CASES.items():
        if own_parser == parser_name:
            continue
        expected = CROSS_MATCHES.get((parser_name, log_name), {})
        assert parse_log(parser_name, read_log(log_name)) == expected, log_name


# --- normalise_test_name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # the spec's three examples (section 5, acceptance check 4)
        ("t1 [1.34 ms]", "t1"),
        ("t2 in 29.08 msec", "t2"),
        ("t3 (1.2s)", "t3"),
        # spacing and unit variants
        ("t4 (12 ms)", "t4"),
        ("t5 (0.5 s)", "t5"),
        ("t6 [2.1s]", "t6"),
        ("t7 [ 123 MS ]", "t7"),
        ("t8 in 1 sec", "t8"),
        ("AES-128 ran 17370 tests in 34.33 msec all ok", "AES-128 ran 17370 tests all ok"),
        ("t9 (1 ms) [2 ms]", "t9"),
        ("t10 [2 ms] (1 ms)", "t10"),
        # ANSI codes and surrounding whitespace
        ("\x1b[32mgreen test\x1b[0m", "green test"),
        ("\x1b[1;31mbold red\x1b[39;49m (3 ms)", "bold red"),
        ("\x1b]8;;file:///x\x07linked\x1b]8;;\x07", "linked"),
        ("  padded\t", "padded"),
        # kept: a pytest parameter, a duration inside the name, a word that is not a duration
        ("tests/t.py::test_wait[1s]", "tests/t.py::test_wait[1s]"),
        ("takes (1.5s) literally", "takes (1.5s) literally"),
        ("runs (fast)", "runs (fast)"),
        ("in 5 minutes", "in 5 minutes"),
    ],
)
def test_normalise_test_name(raw: str, expected: str) -> None:
    assert normalise_test_name(raw) == expected


def test_parsers_normalise_names() -> None:
    log = "\x1b[0;32mPASS\x1b[m: tst_a [1.34 ms]\n--- PASS: TestX (0.00s)\n"
    assert parse_log_jq(log) == {"tst_a": PASSED}
    assert parse_log_go_test(log) == {"TestX": PASSED}


# --- the jq parser: the spec's acceptance check 4 ---------------------------------------------


def test_jq_acceptance_check() -> None:
    log = "\n".join(
        [
            "make  check-TESTS",
            "PASS: a",
            "  FAIL: b",
            "PASS:",
            "passing: not a result",
            "# PASS:  1",
            "# FAIL:  1",
            "XFAIL: c",
            "make: *** [Makefile:1: check] Error 1",
        ]
    )
    assert parse_log_jq(log) == {"a": PASSED, "b": FAILED}


# --- the registry ----------------------------------------------------------------------------


def test_unknown_parser_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="parse_log_nope") as info:
        get_parser("parse_log_nope")
    for name in PARSERS:
        assert name in str(info.value)


def test_registry_holds_the_parsers() -> None:
    assert get_parser("parse_log_jq") is parse_log_jq
    assert get_parser("parse_log_gotest") is parse_log_go_test  # the authors' name for it
    assert {
        "parse_log_pytest",
        "parse_log_unittest",
        "parse_log_node_test",
        "parse_log_jest",
    } < set(PARSERS)
    with pytest.raises(TypeError):
        PARSERS["parse_log_new"] = parse_log_jq  # type: ignore[index]


# --- duplicates: the worst status wins, in either order ---------------------------------------


@pytest.mark.parametrize(
    ("parser", "passed", "failed", "name"),
    [
        (parse_log_pytest, "PASSED t.py::test_a", "FAILED t.py::test_a - boom", "t.py::test_a"),
        (parse_log_pytest, "t.py::test_a PASSED", "ERROR t.py::test_a - boom", "t.py::test_a"),
        (parse_log_go_test, "--- PASS: TestA (0.00s)", "--- FAIL: TestA (0.00s)", "TestA"),
        (parse_log_jq, "PASS: a", "FAIL: a", "a"),
        (parse_log_node_test, "ok 1 - a", "not ok 1 - a", "a"),
        (parse_log_jest, "PASS a.test.js\n  ✓ a (1 ms)", "\n  ● a", "a"),
    ],
)
def test_failed_beats_passed(parser, passed: str, failed: str, name: str) -> None:
    assert parser(f"{passed}\n{failed}\n") == {name: FAILED}
    assert parser(f"{failed}\n{passed}\n") == {name: FAILED}


def test_passed_beats_skipped() -> None:
    log = "--- SKIP: TestA (0.00s)\n--- PASS: TestA (0.00s)\n--- SKIP: TestA (0.00s)\n"
    assert parse_log_go_test(log) == {"TestA": PASSED}


# --- formats not in the captured logs: small hand-written inputs ------------------------------


def test_unittest_before_python_3_11() -> None:
    """Hand-written: older Pythons print "test_a (module.Class)"; only 3.11 is installed here."""
    log = "\n".join(
        [
            "test_a (pkg.tests.TestX) ... ok",
            "test_b (pkg.tests.TestX) ... FAIL",
            "test_c (pkg.tests.TestX) ... skipped 'no network'",
            "test_d (pkg.tests.TestX)",
            "Docstring line of test_d. ... ERROR",
            "test_e (pkg.tests.TestX) ... ok (0.001s)",
        ]
    )
    assert parse_log_unittest(log) == {
        "test_a (pkg.tests.TestX)": PASSED,
        "test_b (pkg.tests.TestX)": FAILED,
        "test_c (pkg.tests.TestX)": SKIPPED,
        "test_d (pkg.tests.TestX)": FAILED,
        "test_e (pkg.tests.TestX)": PASSED,
    }


def test_pytest_verbose_count_style_and_collection_error() -> None:
    """Hand-written: the `console_output_style=count` progress, and a collection error."""
    log = "\n".join(
        [
            "tests/t.py::test_a PASSED                                 [1/2]",
            "tests/t.py::test_b[1-2] FAILED                            [2/2]",
            "ERROR tests/test_broken.py - ImportError: no module named x",
            "FAILED (failures=1)",
        ]
    )
    assert parse_log_pytest(log) == {
        "tests/t.py::test_a": PASSED,
        "tests/t.py::test_b[1-2]": FAILED,
    }


def test_node_tap_yaml_block_is_not_read_as_results() -> None:
    """Hand-written: a TAP diagnostic whose text looks like a result line."""
    log = "\n".join(
        [
            "TAP version 13",
            "# Subtest: a",
            "not ok 1 - a",
            "  ---",
            "  error: |-",
            "    ok 2 - not a test",
            "  ...",
            "1..1",
        ]
    )
    assert parse_log_node_test(log) == {"a": FAILED}


def test_jest_suite_that_failed_to_run_is_not_a_test() -> None:
    """Hand-written: a test file that cannot be loaded gives a header that names no test."""
    log = "FAIL __tests__/broken.test.js\n  ● Test suite failed to run\n\n    SyntaxError: x\n"
    assert parse_log_jest(log) == {}
