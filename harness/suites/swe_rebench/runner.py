"""Run one candidate patch for one SWE-rebench task in a sandbox and score it.

The sandbox holds the task's repository at `/work` (see `swe_rebench.repos`). `run_candidate`
follows the authors' scoring procedure (`specs/swe-rebench.md`, section 2):

1. Reset the tree to the base (`git reset --hard`, `git clean -fdx`).
2. Apply the candidate patch, then the test patch, trying each of `git_apply_commands` in turn
   and resetting the tree between failed attempts. A candidate that applies with no command
   gives "patch_apply_failed"; a test patch, "test_patch_apply_failed". An empty candidate
   applies nothing.
3. Run each `install` line, then each `test_cmd` line, with `bash -c` and a timeout.
4. Parse the combined stdout and stderr with the task's parser and score it with `score_run`.

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
from harness.suites.swe_rebench.integrity import infrastructure_paths, integrity_flags
from harness.suites.swe_rebench.log_parsers import parse_log
from harness.suites.swe_rebench.scoring import (
    PATCH_APPLY_FAILED,
    TEST_PATCH_APPLY_FAILED,
    Criterion,
    SweScore,
    git_apply_commands,
    score_run,
)
from harness.suites.swe_rebench.task_format import SweTask

WORK: Final = "/work"
CANDIDATE_FILE: Final = ".git/harness-candidate.diff"
TEST_PATCH_FILE: Final = ".git/harness-test.diff"
INSTALL_FAILED: Final = "install_failed"

# identity for the commit that records the applied candidate, so a failed test-patch attempt
# can be undone with a plain reset
_GIT_ID: Final = ("-c", "user.name=harness", "-c", "user.email=harness@localhost")


@dataclass(frozen=True, slots=True)
class CandidateRun:
    """What one run of one candidate gave."""

    score: SweScore  # the verdict, rates and reason
    log: str  # the install and test lines' combined output; "" when a patch did not apply
    flags: tuple[str, ...] = ()  # integrity findings about the candidate (`integrity.py`)


async def _git(sandbox: SandboxEnvironment, *args: str) -> ExecResult[str]:
    return await sandbox.exec(["git", *_GIT_ID, *args], cwd=WORK, timeout=300)


async def _reset(sandbox: SandboxEnvironment, ref: str) -> None:
    for args in (("reset", "-q", "--hard", ref), ("clean", "-q", "-fdx")):
        done = await _git(sandbox, *args)
        if not done.success:
            raise RuntimeError(f"git {args[0]} failed in the sandbox: {done.stderr.strip()}")


async def _apply(sandbox: SandboxEnvironment, patch: str, file: str, ref: str) -> bool:
    """Apply `patch` over `ref`, resetting to `ref` after each failed attempt."""
    await sandbox.write_file(f"{WORK}/{file}", patch if patch.endswith("\n") else patch + "\n")
    for argv in git_apply_commands(file):
        done = await sandbox.exec(list(argv), cwd=WORK, timeout=300)
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


async def _shell(sandbox: SandboxEnvironment, line: str, timeout: int) -> ExecResult[str] | str:
    """Run one shell line; return its result, or the reason a limit gives for it."""
    try:
        done = await sandbox.exec(["bash", "-c", line], cwd=WORK, timeout=timeout)
    except TimeoutError as ex:
        return limit_reason(ex) or "timeout"
    return done


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
        The score, and the combined output of the install and test lines, for diagnosis.

    Notes:
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
    parser = task.install_config.log_parser
    log: list[str] = []
    for phase, lines in (
        ("install", task.install_config.install),
        ("test", task.install_config.test_cmd),
    ):
        for line in lines:
            done = await _shell(sandbox, line, timeout)
            if isinstance(done, str):
                log.append(f"$ {line}\n[{done}]\n")
                reason: str | None = done
            else:
                log.append(f"$ {line}\n{done.stdout}{done.stderr}")
                reason = limit_reason(done)
                if reason is None and phase == "install" and not done.success:
                    reason = f"{INSTALL_FAILED}: exit code {done.returncode}"
            if reason is not None:
                text = "".join(log)
                return CandidateRun(
                    score_run(task, parse_log(parser, text), criterion, reason=reason), text, flags
                )
    text = "".join(log)
    return CandidateRun(score_run(task, parse_log(parser, text), criterion), text, flags)


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
