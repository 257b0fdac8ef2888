"""A task's repository at its base commit, in a folder, with no later history.

The source is the local mirror `DATA_DIR/swe/repos/<owner>__<name>/` (any git repository that
holds the base commit) when it exists, else a clone of `https://github.com/<repo>`. Either way
the folder gets only the tree at `base_commit`, committed once as "base" in a fresh repository,
so the fix, which upstream history holds, cannot be reached from it (`specs/swe-rebench.md`,
section 5, acceptance check 5).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Final

from harness.data import resolve_data_dir
from harness.errors import HarnessUsageError
from harness.suites.swe_rebench.task_format import TASK_DIR, SweTask

MIRROR_DIR: Final = "repos"
"""The folder inside `DATA_DIR/swe/` that holds the repository mirrors."""

BASE_MESSAGE: Final = "base"
"""The message of the one commit a materialised repository has."""

_GIT_ENV: Final = {
    "GIT_AUTHOR_NAME": "harness",
    "GIT_AUTHOR_EMAIL": "harness@localhost",
    "GIT_COMMITTER_NAME": "harness",
    "GIT_COMMITTER_EMAIL": "harness@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


class RepoUnavailableError(HarnessUsageError):
    """The task's repository or its base commit could not be had; the message says why."""


def mirror_path(task: SweTask, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """Where the task's local mirror would be, or None when no data folder is set."""
    folder = resolve_data_dir(data_dir)
    if folder is None:
        return None
    return folder / TASK_DIR / MIRROR_DIR / task.repo.replace("/", "__")


def _git(cwd: Path, *args: str, stdout_bytes: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=not stdout_bytes,
        timeout=600,
    )


def _last_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
    return (err.strip().splitlines() or [f"exit code {done.returncode}"])[-1]


def _archive(source: Path, commit: str, dest: Path, task: SweTask) -> None:
    """Unpack the tree of `commit` in the repository `source` into `dest`."""
    done = _git(source, "archive", "--format=tar", commit, stdout_bytes=True)
    if done.returncode != 0:
        raise RepoUnavailableError(
            f"{task.instance_id}: base commit {commit} is not in '{source}' "
            f"({_last_line(done)}); refresh the mirror"
        )
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(dest, filter="tar")


def _clone(task: SweTask, work: Path, looked_for: Path | None) -> Path:
    """Fetch `base_commit` from GitHub into a fresh repository under `work`; return it."""
    url = f"https://github.com/{task.repo}"
    clone = work / "clone"
    clone.mkdir()
    _git(clone, "init", "-q")
    done = _git(clone, "fetch", "-q", "--depth", "1", url, task.base_commit)
    if done.returncode != 0:
        where = f"no mirror at '{looked_for}'" if looked_for else "no data folder set"
        raise RepoUnavailableError(
            f"{task.instance_id}: {where}, and fetching {task.base_commit[:12]} from {url} "
            f"failed ({_last_line(done)}); put a git mirror of {task.repo} at that path"
        )
    return clone


def materialise(
    task: SweTask, data_dir: str | os.PathLike[str] | None, dest: str | os.PathLike[str]
) -> str:
    """Put the task's repository at `base_commit` into `dest`, with one commit and no history.

    Args:
        task: The task whose repository is wanted.
        data_dir: The data folder holding `swe/repos/`; None means `HARNESS_DATA_DIR`.
        dest: An empty or missing folder; it becomes a git repository whose only commit, on
            branch `main`, holds the base commit's tree.

    Returns:
        The sha of the new "base" commit (not `task.base_commit`: history differs).

    Raises:
        RepoUnavailableError: There is no mirror and the clone failed, or the mirror lacks the
            base commit. The message is one line and names the mirror path looked for.
        FileExistsError: `dest` exists and is not empty.

    """
    target = Path(dest)
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"'{target}' is not empty; materialise into an empty folder")
    target.mkdir(parents=True, exist_ok=True)
    mirror = mirror_path(task, data_dir)
    with tempfile.TemporaryDirectory(prefix="harness-swe-clone-") as scratch:
        if mirror is not None and mirror.is_dir():
            source = mirror
        else:
            source = _clone(task, Path(scratch), mirror)
        _archive(source, task.base_commit, target, task)
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A", "-f"),
        ("commit", "-q", "--no-verify", "--allow-empty", "-m", BASE_MESSAGE),
    ):
        done = _git(target, *args)
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed in '{target}': {_last_line(done)}")
    return _git(target, "rev-parse", "HEAD").stdout.strip()
