"""An agent's candidate taken from a copy of its tree, and scored in a fresh checkout.

In agent mode the agent owns `/work`, `.git` included: a `post-commit` hook, `git replace` of the
base commit, or a nested repository hidden by `.git/info/exclude` each made an empty candidate
score as resolved when the scorer reused that `.git` (issue 31). So nothing of the agent's `.git`
is used:

- `worktree_candidate`: the host copies the agent's tree out of the bwrap work folder (regular
  files, folders and symlinks, never following one; no `.git` at any depth; nothing that could
  block), lays it over a freshly materialised base with a `.git` of our own, and takes
  `git diff --binary` there with no hooks, no replace objects and no user or system config.
  A nested repository or a special file is named in the findings.
- `fresh_checkout`: the sandbox's `/work` is emptied and the freshly materialised base copied in,
  so the candidate's diff is applied, as text, to the base commit and nothing else.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from inspect_ai.util import SandboxEnvironment

from harness.sandbox import BwrapSandboxEnvironment
from harness.suites.swe_rebench.repos import materialise
from harness.suites.swe_rebench.task_format import SweTask

MAX_DEPTH: Final = 128  # folders deeper than this in an agent's tree are left out (and named)

# git run by the host on a tree the agent wrote: no config but ours, no hooks, no replacements
_GIT_ENV: Final = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "HOME": "/nonexistent",
}
_GIT_OPTIONS: Final = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class WorktreeCandidate:
    """An agent's candidate diff, and what the copy of its tree found on the way."""

    diff: str  # `git diff --binary` of the agent's tree against the base; "" for no change
    findings: tuple[str, ...]  # nested repositories, special files, parts left out


def _copy_file(source: Path, dest: Path, mode: int) -> None:
    fd = os.open(source, _FILE_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"{source}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
    finally:
        os.close(fd)
    os.chmod(dest, 0o755 if mode & 0o111 else 0o644)


def copy_tree(source: Path, dest: Path) -> tuple[str, ...]:
    """Copy an untrusted tree: files, folders and symlinks (as links), no `.git` anywhere.

    Returns what was left out and why: nested repositories, special files (FIFOs, sockets,
    devices), folders deeper than `MAX_DEPTH`, entries that could not be read.
    """
    findings: list[str] = []
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        relative, depth = stack.pop()
        folder = source / relative if relative else source
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as ex:
            findings.append(f"left out {relative or '.'}: {ex.strerror}")
            continue
        for entry in entries:
            rel = f"{relative}/{entry.name}" if relative else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
                if entry.name == ".git":
                    if relative:
                        findings.append(f"a nested git repository at {relative} (left out)")
                elif stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(entry.path), dest / rel)
                elif stat.S_ISDIR(info.st_mode):
                    if depth + 1 > MAX_DEPTH:
                        findings.append(f"left out {rel}: nested deeper than {MAX_DEPTH}")
                        continue
                    (dest / rel).mkdir()
                    stack.append((rel, depth + 1))
                elif stat.S_ISREG(info.st_mode):
                    _copy_file(Path(entry.path), dest / rel, info.st_mode)
                else:
                    findings.append(f"a special file at {rel} (left out)")
            except OSError as ex:
                findings.append(f"left out {rel}: {ex.strerror or ex}")
    return tuple(findings)


def _git(repo: Path, work_tree: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *_GIT_OPTIONS, f"--git-dir={repo / '.git'}", f"--work-tree={work_tree}", *args],
        cwd=work_tree,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV},
        capture_output=True,
        timeout=600,
    )


def worktree_candidate(task: SweTask, data_dir: str | None, work: Path) -> WorktreeCandidate:
    """The diff of the agent's tree at `work` against a fresh base, from a host-side copy."""
    with tempfile.TemporaryDirectory(prefix="harness-swe-candidate-") as scratch:
        repo, copy = Path(scratch) / "base", Path(scratch) / "copy"
        materialise(task, data_dir, repo)
        copy.mkdir()
        findings = copy_tree(work, copy)
        added = _git(repo, copy, "add", "-A")
        if added.returncode != 0:
            why = added.stderr.decode(errors="replace").strip().splitlines()[-1:]
            return WorktreeCandidate("", (*findings, f"git add failed on the copy: {why}"))
        done = _git(repo, copy, "diff", "--cached", "--binary", "HEAD")
        return WorktreeCandidate(done.stdout.decode("utf-8", errors="replace"), findings)


def _empty(work: Path) -> None:
    """Delete everything in `work`, the folder itself kept (it may be a mount point)."""
    from harness.sandbox.workfs import remove_tree

    for entry in os.scandir(work):
        if entry.is_dir(follow_symlinks=False):
            remove_tree(Path(entry.path))
        else:
            os.unlink(entry.path)


async def fresh_checkout(sandbox: SandboxEnvironment, task: SweTask, data_dir: str | None) -> None:
    """Replace the sandbox's `/work` with a freshly materialised base (a `.git` of our own)."""
    import asyncio

    from harness.suites.swe_rebench.runner import WORK, copy_into_sandbox

    try:
        box: BwrapSandboxEnvironment | None = sandbox.as_type(BwrapSandboxEnvironment)
    except TypeError:
        box = None
    if box is not None:
        await asyncio.to_thread(_empty, box.work_dir)
    else:
        done = await sandbox.exec(["find", WORK, "-mindepth", "1", "-delete"], timeout=600)
        if not done.success:
            raise RuntimeError(f"/work could not be emptied for scoring: {done.stderr.strip()}")
    with tempfile.TemporaryDirectory(prefix="harness-swe-fresh-") as scratch:
        repo = Path(scratch) / "repo"
        await asyncio.to_thread(materialise, task, data_dir, repo)
        await copy_into_sandbox(sandbox, repo)
