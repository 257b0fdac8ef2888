"""Run one candidate patch for one SWE-rebench task in a sandbox and score it.

The sandbox holds the task's repository at `/work` (see `swe_rebench.repos`). `run_candidate`
follows the authors' scoring procedure (`specs/swe-rebench.md`, section 2):

1. Reset the tree to the base (`git reset --hard`, `git clean -fdx`).
2. Apply the candidate patch, then the test patch, trying each of `git_apply_commands` in turn
   and resetting the tree between failed attempts. A candidate that applies with no command
   gives "patch_apply_failed"; a test patch, "test_patch_apply_failed". An empty candidate
   applies nothing.
3. Run each `install` line, then each `test_cmd` line, with `bash -c` and a timeout. Where the
   task's runner can write a JUnit report (pytest, `node --test`), each test line is told to
   write one into a fresh folder with a random name (`swe_rebench.test_outcomes`).
4. Take the per-test results from those reports, or, for a runner with none, from the combined
   stdout and stderr through the task's parser, and score them with `score_run`. A report that
   was expected and is missing or refused fails the run with that reason; stdout, which the
   candidate can forge, is then not trusted to pass it.

Before the test lines run, canary tests under random names go into a test file of the test
patch (`swe_rebench.canaries`); if their outcomes come out wrong, the runner was tampered with,
and the run fails with "runner_tampered" and a flag. Every git command runs with no hooks, no
replace objects and no user or system config (the candidate could add `/work/.gitconfig`, and
HOME is `/work`).

It takes any inspect `SandboxEnvironment`: `inspect_ai.util.sandbox()` inside an eval, or one
made by `bwrap_sandbox()` outside one (as `harness validate` does).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from inspect_ai.util import ExecResult, SandboxEnvironment

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment, limit_reason
from harness.suites.swe_rebench.canaries import check, plant
from harness.suites.swe_rebench.integrity import infrastructure_paths, integrity_flags
from harness.suites.swe_rebench.scoring import (
    PATCH_APPLY_FAILED,
    TEST_PATCH_APPLY_FAILED,
    Criterion,
    SweScore,
    git_apply_commands,
    score_run,
)
from harness.suites.swe_rebench.task_format import SweTask
from harness.suites.swe_rebench.test_outcomes import ResultsSource, plan_reports, read_results

WORK: Final = "/work"
CANDIDATE_FILE: Final = ".git/harness-candidate.diff"
TEST_PATCH_FILE: Final = ".git/harness-test.diff"
INSTALL_FAILED: Final = "install_failed"

RUNNER_TAMPERED: Final = "runner_tampered"

# identity for the commit that records the applied candidate, so a failed test-patch attempt
# can be undone with a plain reset; and no hooks, whatever the repository's config says
_GIT_ID: Final = ("-c", "user.name=harness", "-c", "user.email=harness@localhost",
                  "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")  # fmt: skip
# no config but the repository's own (which no diff can write), and no replaced objects
GIT_ENV: Final = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


@dataclass(frozen=True, slots=True)
class CandidateRun:
    """What one run of one candidate gave."""

    score: SweScore  # the verdict, rates and reason
    log: str  # the install and test lines' combined output; "" when a patch did not apply
    flags: tuple[str, ...] = ()  # integrity findings about the candidate (`integrity.py`)
    results_source: ResultsSource = "none"  # "junit", "stdout", or "none" when no test ran
    results_reason: str | None = None  # why stdout gave the results; None for "junit" or "none"
    canaries: dict[str, str] | None = None  # canary kind → status found; empty without any


async def _git(sandbox: SandboxEnvironment, *args: str) -> ExecResult[str]:
    return await sandbox.exec(["git", *_GIT_ID, *args], cwd=WORK, env=GIT_ENV, timeout=300)


async def _reset(sandbox: SandboxEnvironment, ref: str) -> None:
    for args in (("reset", "-q", "--hard", ref), ("clean", "-q", "-fdx")):
        done = await _git(sandbox, *args)
        if not done.success:
            raise RuntimeError(f"git {args[0]} failed in the sandbox: {done.stderr.strip()}")


async def _apply(sandbox: SandboxEnvironment, patch: str, file: str, ref: str) -> bool:
    """Apply `patch` over `ref`, resetting to `ref` after each failed attempt."""
    await sandbox.write_file(f"{WORK}/{file}", patch if patch.endswith("\n") else patch + "\n")
    for git, *argv in git_apply_commands(file):
        done = await sandbox.exec([git, *_GIT_ID, *argv], cwd=WORK, env=GIT_ENV, timeout=300)
        if done.success:
            return True
        await _reset(sandbox, ref)
    return False


async def root_commit(sandbox: SandboxEnvironment) -> str:
    """The sha of the first commit of the repository at `/work`."""
    done = await _git(sandbox, "rev-list", "--max-parents=0", "HEAD")
    if not done.success or not done.stdout.strip():
        raise RuntimeError(f"no git repository at {WORK} in the sandbox: {done.stderr.strip()}")
    return done.stdout.split()[-1]


async def _shell(
    sandbox: SandboxEnvironment, line: str, timeout: int, env: dict[str, str]
) -> ExecResult[str] | str:
    """Run one shell line; return its result, or the reason a limit gives for it."""
    try:
        done = await sandbox.exec(["bash", "-c", line], cwd=WORK, env=env, timeout=timeout)
    except TimeoutError as ex:
        return limit_reason(ex) or "timeout"
    return done


async def _run_line(
    sandbox: SandboxEnvironment,
    line: str,
    timeout: int,
    env: dict[str, str],
    log: list[str],
    *,
    install: bool,
) -> str | None:
    """Run one install or test line and add its output to `log`; why it failed, or None."""
    done = await _shell(sandbox, line, timeout, env)
    if isinstance(done, str):
        log.append(f"$ {line}\n[{done}]\n")
        return done
    log.append(f"$ {line}\n{done.stdout}{done.stderr}")
    reason = limit_reason(done)
    if reason is None and install and not done.success:
        reason = f"{INSTALL_FAILED}: exit code {done.returncode}"
    return reason


async def run_candidate(
    sandbox: SandboxEnvironment,
    task: SweTask,
    candidate: str,
    *,
    criterion: Criterion = "standard",
    timeout: int = 600,
    base_ref: str | None = None,
) -> CandidateRun:
    """Apply `candidate` and the task's test patch in `sandbox`, run the tests, score them.

    Args:
        sandbox: A sandbox holding the task's repository at `/work`.
        task: The task; its test patch, commands, parser and test lists are used.
        candidate: A unified diff; empty (or whitespace) applies nothing.
        criterion: "standard" or "strict" (see `harness.suites.swe_rebench.scoring`).
        timeout: Wall-clock seconds for each install and test line.
        base_ref: The commit the tree is reset to first; None means the repository's root
            commit, which is the "base" commit of a materialised repository.

    Returns:
        The score; the combined output of the install and test lines, for diagnosis; the
        integrity flags; and where the per-test results came from, with the reason when it
        was not the runner's JUnit report.

    Notes:
        Where the task's runner writes a JUnit report (`swe_rebench.test_outcomes`), the results
        are the report's, never stdout's. A report that was expected but that no test line
        wrote, or one that is refused (a link, a FIFO, too large, malformed, a DTD), fails
        the run with the reason "junit_report_missing: ..." or "junit_report_refused: ...":
        it is not resolved and earns no credit, even if stdout reads as all passed, because
        a candidate that can forge stdout can also stop the report from being written. Its
        `results_source` is then "stdout", since the stdout parser still names the tests in
        the diagnosis.

        Leaves the tree with the candidate committed on top of `base_ref` and the test patch
        applied; reset it before reusing the sandbox (`run_candidate` does so itself).

    """
    if base_ref is None:
        base_ref = await root_commit(sandbox)
    await _reset(sandbox, base_ref)
    if candidate.strip():
        if not await _apply(sandbox, candidate, CANDIDATE_FILE, base_ref):
            return CandidateRun(score_run(task, {}, criterion, reason=PATCH_APPLY_FAILED), "")
    # the tests and their configuration are the task's: restore what the candidate changed
    for path in infrastructure_paths(candidate, task.test_patch):
        in_base = await _git(sandbox, "cat-file", "-e", f"{base_ref}:{path}")
        if in_base.success:
            await _git(sandbox, "checkout", base_ref, "--", path)
        else:
            await _git(sandbox, "rm", "-q", "-f", "--ignore-unmatch", "--", path)
    flags = integrity_flags(candidate, task.test_patch)
    # record the candidate so that a failed test-patch attempt resets to it
    await _git(sandbox, "add", "-A")
    await _git(sandbox, "commit", "-q", "--no-verify", "--allow-empty", "-m", "candidate")
    if not await _apply(sandbox, task.test_patch, TEST_PATCH_FILE, "HEAD"):
        failed = score_run(task, {}, criterion, reason=TEST_PATCH_APPLY_FAILED)
        return CandidateRun(failed, "", flags)
    canaries = await plant(sandbox, task, WORK)
    log: list[str] = []
    reason: str | None = None
    for line in task.install_config.install:
        if (reason := await _run_line(sandbox, line, timeout, {}, log, install=True)) is not None:
            break
    # the report folder is made after the install lines, which run the candidate's code too
    plan = await plan_reports(sandbox, task, WORK)
    ran = 0  # test lines run; each writes its own report, where there is one
    for line in task.install_config.test_cmd if reason is None else ():
        reason = await _run_line(sandbox, line, timeout, plan.env(ran), log, install=False)
        ran += 1
        if reason is not None:
            break
    text = "".join(log)
    got = await read_results(sandbox, plan, task, text, ran, WORK)
    checked = check(canaries, got.results, task)
    reason = reason or got.error
    if checked.tampered is not None:
        flags = (*flags, f"the test runner was tampered with: {checked.tampered}")
        reason = reason or f"{RUNNER_TAMPERED}: {checked.tampered}"
    score = score_run(task, checked.results, criterion, reason=reason)
    return CandidateRun(score, text, flags, got.source, got.why_not_junit, checked.outcomes)


async def copy_into_sandbox(sandbox: SandboxEnvironment, source: Path) -> None:
    """Copy the folder `source` (a materialised repository, `.git` included) to `/work`.

    A bwrap sandbox's work folder is on this host, so the tree is copied straight into it and
    given the work folder's owner; any other sandbox gets one `write_file` per file.
    """
    if isinstance(sandbox, BwrapSandboxEnvironment):
        work = sandbox.work_dir
        shutil.copytree(source, work, symlinks=True, dirs_exist_ok=True)
        owner = os.stat(work)
        if owner.st_uid != os.geteuid() or owner.st_gid != os.getegid():
            for root, dirs, files in os.walk(work):
                for name in [*dirs, *files]:
                    os.lchown(os.path.join(root, name), owner.st_uid, owner.st_gid)
        return
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(source).as_posix()
            await sandbox.write_file(f"{WORK}/{rel}", path.read_bytes())


@asynccontextmanager
async def bwrap_sandbox(
    config: BwrapConfig, name: str = "swe-rebench"
) -> AsyncIterator[SandboxEnvironment]:
    """A bwrap sandbox outside an inspect eval, cleaned up on exit."""
    envs = await BwrapSandboxEnvironment.sample_init(name, config, {})
    try:
        yield envs["default"]
    finally:
        await BwrapSandboxEnvironment.sample_cleanup(name, config, envs, False)
