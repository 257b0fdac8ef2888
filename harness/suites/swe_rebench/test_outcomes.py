"""Where a run's test results come from: the runner's JUnit report where it writes one, else stdout.

Stdout is the candidate's to write: code it adds can print lines in the log parser's format and
hide the runner's own, so a forged log can read as all passed. A JUnit report is written by the
runner itself (`swe_rebench.junit`). So, for a task whose runner can write one:

1. `plan_reports` makes a fresh folder with a random name after the install lines (which run
   the candidate's code too) and just before the test lines run,
   `/work/.git/harness-junit-<128 random bits>`. It is outside the repository's tracked tree: a
   candidate diff cannot create it (`git apply` refuses paths in `.git`), `git clean` leaves it
   alone, and nothing planted before the run (an agent's `bash`, say) can know its name.
   Each test line gets its own report path, `report-<line>.xml`, through the environment.
2. `read_results` reads each report back from the host: for a bwrap sandbox beneath the work
   folder with `O_NOFOLLOW` on every component, as a regular file only, never blocking
   (`harness.sandbox.beneath`), and at most `MAX_REPORT_BYTES`; then through the hardened
   parser. The reports that were read are the per-test results; stdout is kept only for the
   transcript. A test line that wrote no report contributes no results, so its tests are
   missing, and missing tests do not pass.

When a report was expected, the run counts as an error (never as a pass) if no test line wrote
one ("junit_report_missing") or if any report that is there is refused: a link, a FIFO, a
folder, too large, or not a JUnit document ("junit_report_refused"). The stdout parser is
still run on the log, for the names in the diagnosis only.

No report is expected, and the stdout parser gives the results as before, when the task's
parser names a runner with no JUnit option that needs no new package (unittest, Jest, go test,
automake), when node has no JUnit reporter (before Node 20.10), or when a test line sets the
runner's report options itself (its own `--junitxml`, `PYTEST_ADDOPTS`, `--test-reporter`,
`NODE_OPTIONS`), which would take the place of ours. The score's metadata says which source
gave the results, and why not the report.

What this cannot stop: the candidate's code runs inside the test process, which must be able to
write its report. Such code can read the path from the environment and rewrite the report as
the process exits, or patch the runner's report writer. `swe_rebench.integrity` flags a
candidate that names these (`junit`, `PYTEST_ADDOPTS`, `NODE_OPTIONS`, pytest's internals), and
`-T integrity=strict` scores it as unresolved; code that reaches them indirectly is caught by
neither.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final, Literal

from inspect_ai.util import SandboxEnvironment

from harness.sandbox import BwrapSandboxEnvironment
from harness.sandbox.beneath import read_beneath
from harness.suites.swe_rebench.junit import (
    JUNIT_RUNNERS,
    MAX_REPORT_BYTES,
    JunitCase,
    JunitReportError,
    JunitRunner,
    parse_junit,
)
from harness.suites.swe_rebench.log_parsers import parse_log
from harness.suites.swe_rebench.task_format import SweTask

ResultsSource = Literal["junit", "stdout", "none"]

JUNIT_REPORT_MISSING: Final = "junit_report_missing"
JUNIT_REPORT_REFUSED: Final = "junit_report_refused"
REPORT_FOLDER: Final = ".git/harness-junit-"
"""The report folder's name beneath the work folder, before its random part."""

_NODE_JUNIT_PROBE: Final = ["node", "-p", "typeof require('node:test/reporters').junit"]
# what is at a path, for a sandbox other than bwrap: "link", "file", "other", or nothing
_KIND: Final = (
    'if [ -L "$1" ]; then echo link; elif [ -f "$1" ]; then echo file; '
    'elif [ -e "$1" ]; then echo other; fi'
)


@dataclass(frozen=True, slots=True)
class ReportPlan:
    """How a run's test lines write their JUnit reports, or why they write none."""

    runner: JunitRunner | None  # None: no report is expected and stdout gives the results
    folder: str | None  # the report folder in the sandbox, made for this run; None without one
    why_not: str | None  # why no report is expected, or why the folder could not be made

    def env(self, line: int) -> dict[str, str]:
        """The environment for test line `line` (from 0): its report path, or nothing."""
        if self.runner is None or self.folder is None:
            return {}
        return self.runner.env(self.path(line))

    def path(self, line: int) -> str:
        """The report path of test line `line` in the sandbox."""
        return f"{self.folder}/report-{line}.xml"


@dataclass(frozen=True, slots=True)
class RunResults:
    """The per-test results of one run, and where they came from."""

    results: dict[str, str]  # test name → PASSED, FAILED or SKIPPED
    source: ResultsSource  # "junit": the runner's reports; "stdout": the log parser
    why_not_junit: str | None  # why stdout gave the results; None when the reports did
    error: str | None  # a report was expected and is unusable: the run's failure reason


async def plan_reports(sandbox: SandboxEnvironment, task: SweTask, work: str) -> ReportPlan:
    """Decide whether the task's test lines write JUnit reports and make their folder.

    Args:
        sandbox: The sandbox the tests will run in.
        task: The task; its parser and test lines decide.
        work: The repository's folder in the sandbox.

    """
    parser = task.install_config.log_parser
    runner = JUNIT_RUNNERS.get(parser)
    if runner is None:
        return ReportPlan(None, None, f"{parser}: the runner writes no JUnit report here")
    for line in task.install_config.test_cmd:
        if any(option in line for option in runner.conflicts):
            return ReportPlan(None, None, f"the test line sets its own report options: {line}")
    if parser == "parse_log_node_test":
        probe = await sandbox.exec(_NODE_JUNIT_PROBE, cwd=work, timeout=60)
        if probe.stdout.strip() != "function":
            return ReportPlan(None, None, "node has no JUnit reporter (Node 20.10 or later has)")
    folder = f"{work}/{REPORT_FOLDER}{secrets.token_hex(16)}"
    made = await sandbox.exec(["mkdir", "-m", "700", "--", folder], cwd=work, timeout=60)
    if not made.success:
        why = (made.stderr.strip().splitlines() or [f"exit code {made.returncode}"])[-1]
        return ReportPlan(runner, None, f"the report folder could not be made: {why}")
    return ReportPlan(runner, folder, None)


async def read_report(sandbox: SandboxEnvironment, path: str, work: str) -> bytes | None:
    """The bytes of the report at `path` in the sandbox; None when there is none.

    Raises:
        JunitReportError: Something other than a regular file is there (a link on the way, a
            FIFO, a folder), or it is over `MAX_REPORT_BYTES`, or it cannot be read.

    """
    try:  # inside an eval, inspect hands out a proxy; as_type finds the sandbox behind it
        bwrap: BwrapSandboxEnvironment | None = sandbox.as_type(BwrapSandboxEnvironment)
    except TypeError:
        bwrap = None
    if bwrap is not None:
        relative = PurePosixPath(path).relative_to(work)
        try:
            return await asyncio.to_thread(read_beneath, bwrap.work_dir, relative, MAX_REPORT_BYTES)
        except FileNotFoundError:
            return None
        except OverflowError:
            raise JunitReportError(f"the report is over {MAX_REPORT_BYTES} bytes") from None
        except OSError as ex:  # PermissionError (a link, a FIFO), IsADirectoryError, ...
            raise JunitReportError(f"the report cannot be read: {ex}") from None
    # another sandbox (docker): its own read_file, after a check that it is a plain file
    kind = await sandbox.exec(["sh", "-c", _KIND, "sh", path], timeout=60)
    if not kind.stdout.strip():
        return None
    if kind.stdout.strip() != "file":
        raise JunitReportError(f"the report is not a regular file ({kind.stdout.strip()})")
    try:
        data = await sandbox.read_file(path, text=False)
    except FileNotFoundError:
        return None
    except Exception as ex:  # the sandbox's own limits and errors: the report is unusable
        raise JunitReportError(f"the report cannot be read: {ex}") from None
    if len(data) > MAX_REPORT_BYTES:
        raise JunitReportError(f"the report is over {MAX_REPORT_BYTES} bytes")
    return data


async def read_results(
    sandbox: SandboxEnvironment, plan: ReportPlan, task: SweTask, log: str, lines: int, work: str
) -> RunResults:
    """The run's per-test results: from its reports when `plan` expects them, else from `log`.

    Args:
        sandbox: The sandbox the tests ran in.
        plan: What `plan_reports` decided before the run.
        task: The task; its parser and test lists are used.
        log: The install and test lines' combined output.
        lines: How many test lines ran (their reports are read).
        work: The repository's folder in the sandbox.

    """
    parsed = parse_log(task.install_config.log_parser, log)
    if plan.runner is None:
        return RunResults(parsed, "stdout", plan.why_not, None)
    if plan.folder is None:
        why = f"{JUNIT_REPORT_MISSING}: {plan.why_not}"
        return RunResults(parsed, "stdout", why, why)
    cases: list[JunitCase] = []
    found = 0
    try:
        for line in range(lines):
            data = await read_report(sandbox, plan.path(line), work)
            if data is not None:
                cases += parse_junit(data)
                found += 1
    except JunitReportError as ex:
        why = f"{JUNIT_REPORT_REFUSED}: report-{line}.xml: {ex}"
        return RunResults(parsed, "stdout", why, why)
    finally:
        await sandbox.exec(["rm", "-rf", "--", plan.folder], cwd=work, timeout=60)
    if not found:
        why = f"{JUNIT_REPORT_MISSING}: no test line wrote its report"
        return RunResults(parsed, "stdout", why, why)
    listed = (*task.fail_to_pass, *task.pass_to_pass)
    return RunResults(plan.runner.results(cases, listed), "junit", None, None)
