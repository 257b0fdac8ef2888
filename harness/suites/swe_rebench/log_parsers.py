"""Test-log parsers for SWE-rebench V2: the output of a test run to a map of test name to status.

A task names its parser in `install_config.log_parser`. The scorer runs the task's test commands,
passes their combined stdout and stderr to that parser, and checks the result against the task's
FAIL_TO_PASS and PASS_TO_PASS lists (`specs/swe-rebench.md`, section 2, steps 4 and 5).

Every parser returns a dict that maps a test name to "PASSED", "FAILED" or "SKIPPED":

- A test that errored is FAILED. This covers an exception outside an assertion, a failing fixture
  or set-up, and a panic.
- A test reported as skipped, or as a to-do, is SKIPPED. The reward counts it as not passed.
- A test missing from the log has no entry. The reward counts it as not passed too.
- A name reported more than once keeps its worst status, in any order: FAILED beats PASSED, and
  PASSED beats SKIPPED. So a pytest test that passes and then errors in teardown is FAILED.

Every name goes through `normalise_test_name`, so no ANSI colour code or timing suffix reaches the
comparison. ANSI codes are also stripped from the whole log before its lines are matched. A line
that a parser does not recognise is ignored, so a log may hold anything else, such as build output
or a comment saying how it was captured.

Formats:

`parse_log_pytest`
    Both of pytest's per-test formats, in any mix. The short summary (`-rA`) looks like
    `PASSED tests/t.py::test_a` or `FAILED tests/t.py::test_b[x y] - assert 1 == 2`. It also
    prints `ERROR`, `XFAIL` and `XPASS` lines. The verbose lines (`-v`) look like
    `tests/t.py::test_a PASSED  [ 50%]` or `... SKIPPED (reason)`. A name is a node id and must
    contain "::". Parametrized ids may contain spaces, brackets and " - ": the id ends at the
    first "]" that is followed by " - " or by the end of the line. A collection error names a
    file, not a test, so it is left out, and the tests in that file are missing. XFAIL is
    SKIPPED (an expected failure is not a pass; the authors' parser read it as PASSED); an
    XPASS that is not strict is PASSED; pytest reports a strict XPASS as FAILED itself.
    `-rA` names no skipped test, because it prints `SKIPPED [1] file:line: reason`.
`parse_log_unittest`
    The `-v` output of Python's unittest (and of Django's runner), for example
    `test_a (pkg.tests.TestX.test_a) ... ok`. The other results are `FAIL`, `ERROR`,
    `skipped 'why'`, `expected failure` (PASSED) and `unexpected success` (FAILED). The name is
    the text before " ... ", kept as printed: Python 3.11+ prints `test_a (module.Class.test_a)`
    and older versions print `test_a (module.Class)`. The status may also come on a later line:
    after the first line of the test's docstring (`Docstring line. ... ok`), or after output the
    test printed. A failing subtest (`test_a (m.C.test_a) (i=1) ... FAIL`) fails its test. The
    headers of the failure details (`FAIL: <name>`, `ERROR: <name>`, `UNEXPECTED SUCCESS: <name>`)
    count as FAILED too. They matter because Python 3.11 can leave a result unnamed: after an
    unexpected success, the next error prints a bare `ERROR` line. A failing `setUpClass` gets
    its own entry, `setUpClass (module.Class)`, and the tests of that class are missing.
`parse_log_node_test`
    The built-in runner of Node.js (`node --test`). Node 20 prints TAP when its output is not a
    terminal: `ok 1 - name`, `not ok 2 - name`, `# SKIP` and `# TODO` directives (both SKIPPED),
    YAML diagnostics between `---` and `...`, and nested subtests indented under
    `# Subtest: name` lines. The spec reporter (`--test-reporter=spec`) prints `✔ name (1.2ms)`,
    `✖ name`, `﹣ name # reason` (SKIPPED), and `▶ suite` above nested tests. Its closing list
    of failing tests repeats earlier lines, and is skipped.
`parse_log_jest`
    Jest's per-test lines, printed with `--verbose` (and by default when one test file runs):
    `✓ name (3 ms)`, `✕ name`, `○ skipped name` and `✎ todo name` (both SKIPPED). The name is
    the bare title (see "Nested names" below). Jest's failure headers, such as
    `● Outer › inner › name`, also count as FAILED, for `name`. These headers are all that Jest's
    default output shows when several files run, so passing tests are missing from such a log.
`parse_log_go_test`
    `go test -v ./...`: `--- PASS: TestX (0.00s)`, `--- FAIL: TestY (0.01s)`,
    `--- SKIP: TestZ (0.00s)`. Subtests are indented and named as Go names them, `TestX/sub_case`.
    Names are not qualified by their package, as in the authors' `parse_log_gotest`. That name is
    registered too, for the same parser.
`parse_log_jq`
    Lines that read `PASS: name` or `FAIL: name` once surrounding whitespace is trimmed. Automake's
    `make check` prints these, and the shipped C fixture uses them. Automake's other results
    (`SKIP`, `XFAIL`, `XPASS`, `ERROR`) are not recorded, so those tests are missing.

Nested names: the node parser joins the names of enclosing suites and parent tests to the test's
own name with " › ". Jest tests are named by their bare title, without their describe blocks, as
the authors' V2 parsers name them (the dataset's FAIL_TO_PASS lists come from those), so equal
titles in two describe blocks share one entry; a failure header `● Outer › inner › name` counts
for `name`. Go already prints full subtest names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

PASSED: Final = "PASSED"
FAILED: Final = "FAILED"
SKIPPED: Final = "SKIPPED"

NESTED_SEPARATOR: Final = " › "
"""What joins the names of enclosing suites or describe blocks to a nested test's name."""

LogParser = Callable[[str], dict[str, str]]

# The worst status a name was reported with wins.
_RANK: Final = {SKIPPED: 0, PASSED: 1, FAILED: 2}

# CSI sequences (colours, cursor moves), OSC sequences (titles, links), then two-byte escapes.
_ANSI_RE: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
_DURATION: Final = r"\d+(?:\.\d+)?\s*(?:msec|ms|sec|s)"
# The spec's three patterns. The bracketed and parenthesised ones must end the name and follow
# whitespace, so that a pytest id such as `test_wait[1s]` keeps its parameter.
_TIMING_RES: Final = (
    re.compile(rf"\s+\[\s*{_DURATION}\s*\]\s*$", re.IGNORECASE),
    re.compile(rf"\s+in\s+{_DURATION}\b", re.IGNORECASE),
    re.compile(rf"\s+\(\s*{_DURATION}\s*\)\s*$", re.IGNORECASE),
)


@dataclass(frozen=True, slots=True)
class _Frame:
    """An enclosing suite, describe block or parent test while nested lines are read."""

    indent: int  # the column its header line starts at
    name: str  # its name, already unescaped


def normalise_test_name(name: str) -> str:
    """Strip ANSI escape codes, timing suffixes and surrounding whitespace from a test name.

    The timing patterns are the spec's three: a bracketed duration (`"t1 [1.34 ms]"`), an inline
    one (`"t2 in 29.08 msec"`) and a parenthesised one (`"t3 (1.2s)"`). Each accepts the units
    ms, msec, s and sec, in any case, with or without spaces inside.

    Notes:
        A bracketed or parenthesised duration is stripped only at the end of the name, after
        whitespace. An inline one is stripped anywhere. The patterns are applied until the name
        stops changing, so `"t (1 ms) [2 ms]"` becomes `"t"`. Apply this to the expected names as
        well as to the parsed ones, so that both sides match.

    """
    text = _ANSI_RE.sub("", name)
    previous = None
    while text != previous:
        previous = text
        for pattern in _TIMING_RES:
            text = pattern.sub("", text)
    return text.strip()


def _lines(log: str) -> list[str]:
    """Split a log into lines without ANSI codes or trailing whitespace."""
    return [line.rstrip() for line in _ANSI_RE.sub("", log).splitlines()]


def _collect(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Build the name-to-status map from parsed pairs, so that the worst status wins."""
    results: dict[str, str] = {}
    for raw_name, status in pairs:
        name = normalise_test_name(raw_name)
        if not name:
            continue
        old = results.get(name)
        if old is None or _RANK[status] > _RANK[old]:
            results[name] = status
    return results


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _close_frames(stack: list[_Frame], indent: int) -> None:
    """Close the frames that start at column `indent` or deeper: a line there ends them."""
    while stack and stack[-1].indent >= indent:
        stack.pop()


def _nested_name(stack: list[_Frame], indent: int, name: str) -> str:
    """Close the frames at `indent` or deeper, and join the open ones to `name`."""
    _close_frames(stack, indent)
    return NESTED_SEPARATOR.join([*(frame.name for frame in stack), name])


# --- pytest ----------------------------------------------------------------------------------

_PYTEST_OUTCOMES: Final = {
    "PASSED": PASSED,
    "FAILED": FAILED,
    "ERROR": FAILED,
    "SKIPPED": SKIPPED,
    "XFAIL": SKIPPED,  # an expected failure is not a pass
    "XPASS": PASSED,
}
_PYTEST_SUMMARY_RE: Final = re.compile(
    r"^(?P<outcome>PASSED|FAILED|ERROR|XFAIL|XPASS) (?P<rest>\S.*)$"
)
_PYTEST_VERBOSE_RE: Final = re.compile(
    r"^(?P<name>\S.*?::.*?) (?P<outcome>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    r"(?: \(.*\))?(?:\s+\[\s*\d+(?:%|/\d+)\s*\])?$"
)
_PYTEST_PARAM_END_RE: Final = re.compile(r"\](?= - |$)")


def _pytest_summary_node_id(rest: str) -> str:
    """Take the node id from a short-summary line, without its " - message" tail."""
    dash = rest.find(" - ")
    bracket = rest.find("[")
    if bracket != -1 and (dash == -1 or bracket < dash):
        end = _PYTEST_PARAM_END_RE.search(rest, bracket)
        if end is not None:
            return rest[: end.end()]
    return rest if dash == -1 else rest[:dash]


def _pytest_pairs(log: str) -> Iterable[tuple[str, str]]:
    for line in _lines(log):
        if match := _PYTEST_SUMMARY_RE.match(line):
            node_id = _pytest_summary_node_id(match["rest"])
            if "::" in node_id:
                yield node_id, _PYTEST_OUTCOMES[match["outcome"]]
        elif match := _PYTEST_VERBOSE_RE.match(line):
            yield match["name"], _PYTEST_OUTCOMES[match["outcome"]]


def parse_log_pytest(log: str) -> dict[str, str]:
    """Parse pytest's `-rA` short summary and `-v` lines into node id → status."""
    return _collect(_pytest_pairs(log))


# --- unittest --------------------------------------------------------------------------------

_UNITTEST_ID: Final = r"(?P<id>[A-Za-z_]\w* \([A-Za-z_][\w.]*\))"
_UNITTEST_LINE_RE: Final = re.compile(
    rf"^\s*{_UNITTEST_ID}(?P<sub> [\[(].*?)? \.\.\.(?: (?P<rest>.*))?$"
)
_UNITTEST_ID_ONLY_RE: Final = re.compile(rf"^{_UNITTEST_ID}$")
_UNITTEST_DETAIL_RE: Final = re.compile(
    rf"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): {_UNITTEST_ID}(?: [\[(].*)?$"
)
_UNITTEST_END_PREFIXES: Final = ("=" * 20, "-" * 20, "Ran ")


def _unittest_status(text: str) -> str | None:
    """Map a unittest result word to a status, or None when `text` is not one."""
    word = normalise_test_name(text)  # Python 3.12's --durations appends "(0.001s)"
    if word in ("ok", "expected failure"):
        return PASSED
    if word in ("FAIL", "ERROR", "unexpected success"):
        return FAILED
    if word == "skipped" or word.startswith(("skipped '", 'skipped "')):
        return SKIPPED
    return None


def _unittest_pairs(log: str) -> Iterable[tuple[str, str]]:
    pending: str | None = None  # a test whose status has not been printed yet
    for line in _lines(log):
        if match := _UNITTEST_LINE_RE.match(line):
            status = _unittest_status(match["rest"] or "")
            if match["sub"]:
                if status == FAILED:
                    yield match["id"], FAILED
                pending = match["id"]
            elif status is not None:
                yield match["id"], status
                pending = None
            else:
                pending = match["id"]
        elif match := _UNITTEST_ID_ONLY_RE.match(line):
            pending = match["id"]
        elif match := _UNITTEST_DETAIL_RE.match(line):
            yield match["id"], FAILED
        elif line.startswith(_UNITTEST_END_PREFIXES):
            pending = None
        elif pending is not None:
            status = _unittest_status(line)
            if status is None and " ... " in line:
                status = _unittest_status(line.rsplit(" ... ", 1)[1])
            if status is not None:
                yield pending, status
                pending = None


def parse_log_unittest(log: str) -> dict[str, str]:
    """Parse Python unittest's `-v` output into "test (module.Class.test)" → status."""
    return _collect(_unittest_pairs(log))


# --- node --test -----------------------------------------------------------------------------

_TAP_RESULT_RE: Final = re.compile(
    r"^(?P<indent>\s*)(?P<ok>not ok|ok)\b(?: +\d+)?(?: +-)?(?: +(?P<description>.*))?$"
)
_TAP_SUBTEST_RE: Final = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<description>.*)$")
_SPEC_LINE_RE: Final = re.compile(r"^(?P<indent>\s*)(?P<mark>[✔✖﹣▶]) (?P<rest>.*)$")
_SPEC_RESULT_RE: Final = re.compile(
    r"^(?P<name>.*) \(\d+(?:\.\d+)?\s*m?s\)(?: # (?P<directive>.*))?$"
)
_SPEC_FAILING_HEADER: Final = "failing tests:"


def _tap_description(text: str) -> tuple[str, str | None]:
    """Split a TAP description into its unescaped name and its directive (after "#")."""
    chars: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            chars.append(text[index + 1])
            index += 2
            continue
        if char == "#":
            return "".join(chars).strip(), text[index + 1 :].strip()
        chars.append(char)
        index += 1
    return "".join(chars).strip(), None


def _is_skip_directive(directive: str | None) -> bool:
    return directive is not None and directive.upper().startswith(("SKIP", "TODO"))


def _node_tap_pairs(lines: list[str]) -> Iterable[tuple[str, str]]:
    stack: list[_Frame] = []
    yaml_end: str | None = None  # the line that closes the open YAML block
    after_result = False
    for line in lines:
        if yaml_end is not None:
            if line == yaml_end:
                yaml_end = None
            continue
        if after_result and line.strip() == "---":
            yaml_end, after_result = line.replace("---", "..."), False
            continue
        after_result = False
        if match := _TAP_SUBTEST_RE.match(line):
            indent = len(match["indent"])
            _close_frames(stack, indent)
            stack.append(_Frame(indent, _tap_description(match["description"])[0]))
        elif match := _TAP_RESULT_RE.match(line):
            after_result = True
            name, directive = _tap_description(match["description"] or "")
            if _is_skip_directive(directive):
                status = SKIPPED
            else:
                status = PASSED if match["ok"] == "ok" else FAILED
            yield _nested_name(stack, len(match["indent"]), name), status


def _node_spec_pairs(lines: list[str]) -> Iterable[tuple[str, str]]:
    stack: list[_Frame] = []
    in_failing_list = False
    for line in lines:
        match = _SPEC_LINE_RE.match(line)
        if match is None:
            continue
        mark, rest, indent = match["mark"], match["rest"], len(match["indent"])
        if mark == "✖" and rest == _SPEC_FAILING_HEADER:
            in_failing_list = True
            continue
        if in_failing_list and mark == "✖":
            continue
        in_failing_list = False
        if mark == "▶":
            _close_frames(stack, indent)
            stack.append(_Frame(indent, rest.strip()))
            continue
        result = _SPEC_RESULT_RE.match(rest)
        name = result["name"] if result else rest
        directive = result["directive"] if result else None
        if mark == "﹣" or _is_skip_directive(directive):
            status = SKIPPED
        else:
            status = PASSED if mark == "✔" else FAILED
        yield _nested_name(stack, indent, name), status


def parse_log_node_test(log: str) -> dict[str, str]:
    """Parse `node --test` output, TAP or spec reporter, into "Suite › test" → status."""
    lines = _lines(log)
    return _collect([*_node_tap_pairs(lines), *_node_spec_pairs(lines)])


# --- Jest ------------------------------------------------------------------------------------

_JEST_FILE_RE: Final = re.compile(r"^(?:PASS|FAIL) +\S")
_JEST_FAILURE_RE: Final = re.compile(r"^ {2}● (?P<name>.+)$")
_JEST_TEST_RE: Final = re.compile(r"^(?P<indent> +)(?P<mark>[✓✕○✎√×]) (?P<title>.*)$")
_JEST_MARKS: Final = {"✓": PASSED, "√": PASSED, "✕": FAILED, "×": FAILED}
# Headers in the same style that name no test: a file that failed to load, and (in the default
# output) the console output of a passing file.
_JEST_NOT_TESTS: Final = frozenset({"Test suite failed to run", "Console"})


def _jest_pairs(log: str) -> Iterable[tuple[str, str]]:
    in_results = False  # inside the indented per-test block under a PASS or FAIL file line
    for line in _lines(log):
        if _JEST_FILE_RE.match(line):
            in_results = True
            continue
        if match := _JEST_FAILURE_RE.match(line):
            in_results = False
            if match["name"] not in _JEST_NOT_TESTS:  # "Outer › inner › title": the title
                yield match["name"].rsplit(NESTED_SEPARATOR, 1)[-1], FAILED
            continue
        if not line.strip():
            in_results = False
        if in_results and (match := _JEST_TEST_RE.match(line)):
            title, mark = match["title"], match["mark"]
            if mark in _JEST_MARKS:
                status = _JEST_MARKS[mark]
            else:
                status = SKIPPED
                title = title.removeprefix("skipped " if mark == "○" else "todo ")
            yield title, status


def parse_log_jest(log: str) -> dict[str, str]:
    """Parse Jest's verbose lines and failure headers into test title → status."""
    return _collect(_jest_pairs(log))


# --- go test ---------------------------------------------------------------------------------

_GO_RESULT_RE: Final = re.compile(
    r"^\s*--- (?P<outcome>PASS|FAIL|SKIP): (?P<name>\S+)(?: \([^)]*\))?$"
)
_GO_OUTCOMES: Final = {"PASS": PASSED, "FAIL": FAILED, "SKIP": SKIPPED}


def parse_log_go_test(log: str) -> dict[str, str]:
    """Parse `go test -v` result lines into "TestX" or "TestX/sub_case" → status."""
    return _collect(
        (match["name"], _GO_OUTCOMES[match["outcome"]])
        for line in _lines(log)
        if (match := _GO_RESULT_RE.match(line))
    )


# --- jq (automake) ---------------------------------------------------------------------------

_JQ_RE: Final = re.compile(r"^(?P<outcome>PASS|FAIL):\s+(?P<name>.+)$")


def parse_log_jq(log: str) -> dict[str, str]:
    """Parse lines that read "PASS: name" or "FAIL: name" once trimmed into name → status."""
    return _collect(
        (match["name"], PASSED if match["outcome"] == "PASS" else FAILED)
        for line in _lines(log)
        if (match := _JQ_RE.match(line.strip()))
    )


# --- registry --------------------------------------------------------------------------------

PARSERS: Final[Mapping[str, LogParser]] = MappingProxyType(
    {
        "parse_log_pytest": parse_log_pytest,
        "parse_log_unittest": parse_log_unittest,
        "parse_log_node_test": parse_log_node_test,
        "parse_log_jest": parse_log_jest,
        "parse_log_go_test": parse_log_go_test,
        "parse_log_gotest": parse_log_go_test,  # the authors' name for the same format
        "parse_log_jq": parse_log_jq,
    }
)
"""Each parser by the name a task gives in `install_config.log_parser` (read-only)."""


def get_parser(name: str) -> LogParser:
    """Return the parser registered under `name`.

    Raises:
        ValueError: If no parser has that name; the message lists the registered names.

    """
    try:
        return PARSERS[name]
    except KeyError:
        known = ", ".join(sorted(PARSERS))
        raise ValueError(f"unknown log parser {name!r}; registered parsers: {known}") from None


def parse_log(name: str, log: str) -> dict[str, str]:
    """Parse `log` with the parser registered under `name`, giving test name → status."""
    return get_parser(name)(log)
