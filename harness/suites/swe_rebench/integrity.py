"""Candidates that could make the test runner lie: restore what they may not change, flag more.

A candidate controls the repository the tests run in. It can edit the tests' own files or their
configuration (a `conftest.py`, `pytest.ini`, a test package's `__init__.py`), or monkeypatch
the test framework from package code (`unittest.TestCase.run = ...`). So:

- `infrastructure_paths`: files of the candidate that are test infrastructure, or that the test
  patch touches. The runner restores each from the base commit before the test patch applies,
  so the tests and their configuration are the task's, whatever the candidate did.
- `integrity_flags`: one reason per finding: a test-infrastructure file touched, or an added
  line naming the test framework's internals (`TestCase.run`, pytest hooks, `sys.modules`
  surgery, the test runner's entry points). The score's metadata carries them;
  `-T integrity=strict` scores a flagged candidate as unresolved.

The paths a candidate touches are git's own reading of it (`git apply --numstat -z`), so a
quoted name (`"b/conftest.py"`), an octal escape in a test folder's name, or a timestamp after
a name is read as `git apply` reads it, never from the diff's header text. A binary hunk has no `+`
lines to read, so it is flagged. A `*.dist-info` or `*.egg-info` folder (pytest loads plugins
from their entry points) is infrastructure, and removed.

The flag patterns are one spelling at a time and cannot be complete. The generic defence is
`swe_rebench.canaries`: tests inserted at run time, under random names, whose outcomes a
runner that lies cannot keep right.

What this cannot catch (ours, a heuristic; see docs/validation/swe-rebench.md): code that reaches
the framework indirectly (`getattr` on a built string, an import hook installed by a `.pth` file
the tests never name). Output forged on stdout is beaten where the runner writes a JUnit report
(`swe_rebench.test_outcomes`); code that goes after that report is flagged when it names it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import PurePosixPath

# file names that configure or are the test run, wherever they are: restored from the base
INFRA_NAMES = frozenset(
    {"conftest.py", "pytest.ini", "tox.ini", "noxfile.py", ".mocharc.js", ".mocharc.json",
     ".mocharc.yml", "sitecustomize.py", "usercustomize.py"}
)  # fmt: skip
# files that hold test configuration beside what a fix may need (dependencies, build settings):
# flagged when touched, not restored, so that a fix adding a dependency still runs
SHARED_CONFIG = frozenset({"setup.cfg", "pyproject.toml", "package.json"})
INFRA_PATTERNS = (
    re.compile(r"(^|/)(tests?|testing|__tests__)/"),  # a test folder
    re.compile(r"(^|/)test_[^/]*\.py$|_test\.(py|go)$|\.(test|spec)\.[jt]sx?$"),
    re.compile(r"(^|/)jest\.config\.[^/]*$|(^|/)vitest\.config\.[^/]*$|\.pth$"),
    # installed-package metadata: pytest loads plugins from any entry_points.txt on sys.path
    re.compile(r"\.(dist|egg)-info(/|$)|(^|/)entry_points\.txt$"),
    # git's own settings: with HOME at the work folder, a .gitconfig there would be read
    re.compile(r"(^|/)\.gitconfig$|(^|/)\.gitattributes$"),
)
INTERNALS = (
    (re.compile(r"\bTestCase\s*\.\s*(run|__call__|debug|_callTestMethod)\b"), "TestCase.run"),
    (re.compile(r"\bTestResult\b|\bTextTestRunner\b|\bunittest\.main\b"), "unittest runner"),
    (re.compile(r"\bdef\s+pytest_\w+|\b_pytest\b|\bpytest\.main\b"), "pytest hooks"),
    (re.compile(r"\bsys\s*\.\s*modules\s*\["), "sys.modules surgery"),
    (
        re.compile(r"\bbuiltins\s*\.\s*__import__\b|\bimportlib\.abc\b|\bsys\.meta_path\b"),
        "import machinery",
    ),  # fmt: skip
    (  # the JUnit report the results come from, or the options that place it (`test_outcomes.py`)
        re.compile(r"junit|xunit|PYTEST_ADDOPTS|NODE_OPTIONS|test-reporter", re.IGNORECASE),
        "the test report",
    ),
    (re.compile(r"\bsetattr\s*\(\s*(unittest|TestCase|_?pytest)\b"), "TestCase.run"),
    (re.compile(r"\.\s*(assert[A-Z]\w*|fail\w*)\s*=(?!=)"), "unittest assertions replaced"),
    (re.compile(r"__build_class__|\bbuiltins\s*\.\s*\w+\s*=(?!=)"), "builtins replaced"),
    (re.compile(r"\batexit\b|\bsys\s*\.\s*exitfunc\b"), "an exit hook"),
    (
        re.compile(r"\benviron\s*\.\s*(values|items)\s*\(|\bos\.environb?\b\s*\)"),
        "the environment's values",
    ),
    (re.compile(r"\bpytest11\b|\bentry_points\b"), "plugin entry points"),
    (re.compile(r"^\s*(import|from)\s+unittest\b(?!\.mock)"), "unittest imported"),
)

_DIFF_PATH = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class DiffFiles:
    """The files a diff touches, as `git apply` reads it."""

    paths: tuple[str, ...]  # every path touched (old and new names of a rename), sorted
    binary: tuple[str, ...]  # paths changed by a binary hunk, whose content no pattern reads
    parsed_by_git: bool  # False: git could not read the diff; `paths` is from its headers


def _numstat(diff: str) -> str | None:
    """`git apply --numstat -z` of `diff` (no repository needed), or None if git refuses it."""
    try:
        done = subprocess.run(
            ["git", "apply", "--numstat", "-z", "-"],
            input=diff.encode("utf-8", errors="surrogateescape"),
            capture_output=True,
            timeout=60,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "HOME": "/nonexistent",
            },  # fmt: skip
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", errors="surrogateescape") if done.returncode == 0 else None


def diff_files(diff: str) -> DiffFiles:
    """The files `diff` touches, read by git itself (`git apply --numstat -z`).

    Git unquotes C-quoted names and octal escapes and ignores what follows a tab (a
    timestamp), exactly as it does when it applies the patch. A diff git cannot read gives
    the names in its headers instead, with `parsed_by_git` False.
    """
    if not diff.strip():
        return DiffFiles((), (), True)
    out = _numstat(diff)
    if out is None:
        return DiffFiles(_header_paths(diff), (), False)
    paths: set[str] = set()
    binary: set[str] = set()
    tokens = out.split("\0")
    i = 0
    while i < len(tokens):
        fields = tokens[i].split("\t")
        if len(fields) != 3:
            i += 1
            continue
        added, deleted, name = fields
        names = [name] if name else tokens[i + 1 : i + 3]  # a rename: old, then new
        i += 1 if name else 3
        paths.update(names)
        if added == "-" and deleted == "-":
            binary.update(names)
    return DiffFiles(tuple(sorted(paths)), tuple(sorted(binary)), True)


def _header_paths(diff: str) -> tuple[str, ...]:
    paths: set[str] = set()
    for old, new in _DIFF_PATH.findall(diff):
        paths.update((old, new))
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                paths.add(name.removeprefix("a/").removeprefix("b/"))
    return tuple(sorted(paths))


def touched_paths(diff: str) -> tuple[str, ...]:
    """Every path a unified diff touches (old and new names of a rename), as git reads them."""
    return diff_files(diff).paths


def is_infrastructure(path: str) -> bool:
    """Whether a repository path is part of the tests or their configuration."""
    return PurePosixPath(path).name in INFRA_NAMES or any(p.search(path) for p in INFRA_PATTERNS)


def infrastructure_paths(candidate: str, test_patch: str) -> tuple[str, ...]:
    """Paths of the candidate that are test infrastructure or that the test patch touches."""
    protected = set(touched_paths(test_patch))
    return tuple(p for p in touched_paths(candidate) if p in protected or is_infrastructure(p))


def integrity_flags(candidate: str, test_patch: str) -> tuple[str, ...]:
    """Why a candidate is suspect, one reason each; empty when nothing was found."""
    files = diff_files(candidate)
    restored = infrastructure_paths(candidate, test_patch)
    flags = [f"touches test infrastructure (restored): {p}" for p in restored]
    flags += [
        f"touches a file holding test configuration: {p}"
        for p in files.paths
        if PurePosixPath(p).name in SHARED_CONFIG and p not in restored
    ]
    flags += [f"a binary patch, whose content is not checked: {p}" for p in files.binary]
    if not files.parsed_by_git:
        flags.append("git cannot read the patch; its file names are the headers' own")
    added = [line[1:] for line in candidate.splitlines() if line.startswith("+")
             and not line.startswith("+++")]  # fmt: skip
    for pattern, what in INTERNALS:
        if what not in " ".join(flags) and any(pattern.search(line) for line in added):
            flags.append(f"names the test framework's internals: {what}")
    return tuple(flags)
