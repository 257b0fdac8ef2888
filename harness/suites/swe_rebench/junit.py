"""JUnit XML test reports: a hardened reader, and the map from their test cases to task test ids.

A report is written by the test runner itself, so a candidate cannot forge it by printing lines
that look like results, as it can forge stdout (see `swe_rebench.test_outcomes` for where the report
is written and how it is read back). Two runners write one with an option we can pass without
installing anything:

- pytest (`parse_log_pytest` tasks): `--junitxml=PATH -o junit_family=xunit1`, through the
  `PYTEST_ADDOPTS` environment variable, so that any pytest invocation takes it. A test case
  is `<testcase classname="tests.test_x.TestY" name="test_z[p]">`: the node id's file path
  with "/" as "." and without ".py", then its classes, joined by "."; the name keeps its
  parameters. xunit1 adds the `file` attribute, xunit2 (pytest's default) does not; both are
  read.
- `node --test` (`parse_log_node_test` tasks, Node 20.10 and later): `--test-reporter=junit`
  through `NODE_OPTIONS`, with the TAP reporter kept on stdout for the transcript. A test case
  sits inside one `<testsuite>` per enclosing `describe` block or parent test.

Statuses, as the stdout parsers give them (`swe_rebench.log_parsers`): a `<failure>` or
`<error>` child is FAILED (pytest records a setup or teardown error on the test's own case); a
`<skipped>` child is SKIPPED, pytest's xfail (`type="pytest.xfail"`) too, as pytest's XFAIL
line is: an expected failure is a failure, never a pass (issue 31: a candidate that marks the
tests xfail would pass them); no such child is PASSED (an XPASS that is not strict, too). A
name seen twice keeps its worst status.

The reader refuses any document type declaration, so no entity is ever defined or expanded (no
billion laughs, no external entity), reads no character data, and takes at most
`MAX_REPORT_BYTES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final
from xml.parsers import expat

from harness.suites.swe_rebench.log_parsers import (
    FAILED,
    NESTED_SEPARATOR,
    PASSED,
    SKIPPED,
    normalise_test_name,
)

MAX_REPORT_BYTES: Final = 32 * 1024 * 1024
"""The largest report read; a larger one is refused."""

_RANK: Final = {SKIPPED: 0, PASSED: 1, FAILED: 2}
_ROOTS: Final = ("testsuites", "testsuite")


class JunitReportError(ValueError):
    """A report that is refused: a DTD or entity, malformed XML, or not a JUnit document."""


@dataclass(frozen=True, slots=True)
class JunitCase:
    """One `<testcase>` of a report."""

    suites: tuple[str, ...]  # names of the enclosing <testsuite> elements, outermost first
    classname: str  # its classname attribute ("" when absent)
    name: str  # its name attribute
    file: str | None  # its file attribute (pytest's xunit1), None when absent
    status: str  # PASSED, FAILED or SKIPPED


def _refuse(*_: object) -> None:
    raise JunitReportError("the report declares a document type or an entity; a report has none")


def parse_junit(data: bytes) -> tuple[JunitCase, ...]:
    """Read the test cases of a JUnit XML report.

    Raises:
        JunitReportError: The report is over `MAX_REPORT_BYTES`, holds a document type or
            entity declaration, references an entity it does not define, is not well-formed,
            or its root is neither `<testsuites>` nor `<testsuite>`.

    """
    if len(data) > MAX_REPORT_BYTES:
        raise JunitReportError(f"the report is {len(data)} bytes, over {MAX_REPORT_BYTES}")
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.UnparsedEntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse
    depth = 0
    suites: list[str] = []
    cases: list[JunitCase] = []
    case: dict[str, str] | None = None  # the attributes of the open <testcase>
    case_depth = 0
    children: list[str] = []  # the statuses its children give

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal depth, case, case_depth
        depth += 1
        if depth == 1 and tag not in _ROOTS:
            raise JunitReportError(f"the root element is <{tag}>, not <testsuites>")
        if case is not None:
            if depth == case_depth + 1 and (status := _child_status(tag, attrs)) is not None:
                children.append(status)
        elif tag == "testsuite":
            suites.append(attrs.get("name", ""))
        elif tag == "testcase":
            case, case_depth = attrs, depth
            children.clear()

    def end(tag: str) -> None:
        nonlocal depth, case
        if case is not None and depth == case_depth:
            status = FAILED if FAILED in children else SKIPPED if SKIPPED in children else PASSED
            cases.append(
                JunitCase(tuple(suites), case.get("classname", ""), case.get("name", ""),
                          case.get("file"), status)
            )  # fmt: skip
            case = None
        elif case is None and tag == "testsuite":
            suites.pop()
        depth -= 1

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as ex:
        raise JunitReportError(f"the report is not well-formed XML: {ex}") from None
    return tuple(cases)


def _child_status(tag: str, attrs: dict[str, str]) -> str | None:
    if tag in ("failure", "error"):
        return FAILED
    if tag == "skipped":
        return SKIPPED  # pytest's xfail (type="pytest.xfail") included: not a pass
    return None


def _collect(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Name → status, each name normalised; the worst status of a name wins."""
    results: dict[str, str] = {}
    for raw, status in pairs:
        name = normalise_test_name(raw)
        if name and _RANK[status] >= _RANK[results.get(name, SKIPPED)]:
            results[name] = status
    return results


# --- pytest ----------------------------------------------------------------------------------


def pytest_junit_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pair pytest's JUnit report gives the test with this node id.

    The part before the first "[" is split at "::"; its first piece, a file path, becomes
    dotted and loses ".py"; every piece but the last, joined by ".", is the classname; the last
    piece, with the parameters put back, is the name. So
    `tests/a/test_b.py::TestC::test_d[x::y]` is `("tests.a.test_b.TestC", "test_d[x::y]")`.
    """
    path, bracket, params = node_id.partition("[")
    pieces = path.split("::")
    pieces[0] = re.sub(r"\.py$", "", pieces[0].replace("/", "."))
    return ".".join(pieces[:-1]), pieces[-1] + bracket + params


def _pytest_node_id(case: JunitCase) -> str:
    """A node id for a case that no listed test matches, from its file where it has one."""
    if case.file and case.file.endswith(".py"):
        module = case.file[: -len(".py")].replace("/", ".")
        if case.classname == module or case.classname.startswith(module + "."):
            classes = [c for c in case.classname[len(module) :].split(".") if c]
            return "::".join([case.file, *classes, case.name])
    return f"{case.classname}::{case.name}"


def pytest_results(cases: Sequence[JunitCase], listed: Iterable[str]) -> dict[str, str]:
    """Map pytest's test cases to node ids → status.

    A case takes the listed node id (FAIL_TO_PASS or PASS_TO_PASS) whose `pytest_junit_key`
    it matches, so that listed ids come back exactly as the task spells them, parameters and
    all. A case no listed id matches gets a node id built from its `file` (xunit1) or, without
    one, `classname::name`; it can only count as an extra test. A case with no classname is a
    collection error, which names a file rather than a test, and is left out, as the stdout
    parser leaves it out.
    """
    by_key: dict[tuple[str, str], list[str]] = {}
    for test_id in listed:
        name = normalise_test_name(test_id)
        by_key.setdefault(pytest_junit_key(name), []).append(name)
    pairs: list[tuple[str, str]] = []
    for case in cases:
        if not case.classname:
            continue
        ids = by_key.get((case.classname, case.name)) or [_pytest_node_id(case)]
        pairs += [(test_id, case.status) for test_id in ids]
    return _collect(pairs)


# --- node --test -----------------------------------------------------------------------------


def _node_name(text: str) -> str:
    # Node 20's reporter escapes '"' as "&quot;" and then escapes its "&" again
    return text.replace("&quot;", '"')


def node_results(cases: Sequence[JunitCase], listed: Iterable[str] = ()) -> dict[str, str]:
    """Map `node --test` test cases to "Suite › test" → status, as `parse_log_node_test` names.

    Each enclosing suite (a `describe` block or a parent test) is also a name, with the worst
    status of the tests inside it, as TAP reports it with its own line.

    Notes:
        Node 20's reporter records no status for a parent test itself: one whose own body
        fails after its subtests pass reads as passed here, while TAP says "not ok".

    """
    pairs: list[tuple[str, str]] = []
    for case in cases:
        names = [_node_name(n) for n in (*case.suites, case.name)]
        for depth in range(1, len(names) + 1):
            pairs.append((NESTED_SEPARATOR.join(names[:depth]), case.status))
    return _collect(pairs)


# --- the runners that write a report ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JunitRunner:
    """How one test runner is asked for a JUnit report, and how its cases become test ids."""

    env: Callable[[str], dict[str, str]]  # report path → environment for one test line
    results: Callable[[Sequence[JunitCase], Iterable[str]], dict[str, str]]  # cases, listed ids
    conflicts: tuple[str, ...]  # text in a test line that sets the report itself: none expected


def _pytest_env(path: str) -> dict[str, str]:
    return {"PYTEST_ADDOPTS": f"--junitxml={path} -o junit_family=xunit1"}


def _node_env(path: str) -> dict[str, str]:
    return {
        "NODE_OPTIONS": f"--test-reporter=junit --test-reporter-destination={path} "
        "--test-reporter=tap --test-reporter-destination=stdout"
    }


JUNIT_RUNNERS: Final[Mapping[str, JunitRunner]] = MappingProxyType(
    {
        "parse_log_pytest": JunitRunner(
            _pytest_env,
            pytest_results,
            ("PYTEST_ADDOPTS", "--junitxml", "--junit-xml", "no:junitxml", "--junitprefix"),
        ),
        "parse_log_node_test": JunitRunner(
            _node_env, node_results, ("NODE_OPTIONS", "--test-reporter")
        ),
    }
)
"""The runners that write a JUnit report, by the log parser a task names (read-only)."""
