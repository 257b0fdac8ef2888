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

What this cannot catch (ours, a heuristic; see docs/validation/swe-rebench.md): code that reaches
the framework indirectly (`getattr` on a built string, an import hook installed by a `.pth` file
the tests never name). Output forged on stdout is beaten where the runner writes a JUnit report
(`swe_rebench.reports`); code that goes after that report is flagged when it names it.
"""

from __future__ import annotations

import re
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
    (  # the JUnit report the results come from, or the options that place it (`reports.py`)
        re.compile(r"junit|xunit|PYTEST_ADDOPTS|NODE_OPTIONS|test-reporter", re.IGNORECASE),
        "the test report",
    ),
)

_DIFF_PATH = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


def touched_paths(diff: str) -> tuple[str, ...]:
    """Every path a unified diff touches (old and new names of a rename), sorted."""
    paths: set[str] = set()
    for old, new in _DIFF_PATH.findall(diff):
        paths.update((old, new))
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                paths.add(name.removeprefix("a/").removeprefix("b/"))
    return tuple(sorted(paths))


def is_infrastructure(path: str) -> bool:
    """Whether a repository path is part of the tests or their configuration."""
    return PurePosixPath(path).name in INFRA_NAMES or any(p.search(path) for p in INFRA_PATTERNS)


def infrastructure_paths(candidate: str, test_patch: str) -> tuple[str, ...]:
    """Paths of the candidate that are test infrastructure or that the test patch touches."""
    protected = set(touched_paths(test_patch))
    return tuple(p for p in touched_paths(candidate) if p in protected or is_infrastructure(p))


def integrity_flags(candidate: str, test_patch: str) -> tuple[str, ...]:
    """Why a candidate is suspect, one reason each; empty when nothing was found."""
    restored = infrastructure_paths(candidate, test_patch)
    flags = [f"touches test infrastructure (restored): {p}" for p in restored]
    flags += [
        f"touches a file holding test configuration: {p}"
        for p in touched_paths(candidate)
        if PurePosixPath(p).name in SHARED_CONFIG and p not in restored
    ]
    added = [line[1:] for line in candidate.splitlines() if line.startswith("+")
             and not line.startswith("+++")]  # fmt: skip
    for pattern, what in INTERNALS:
        if any(pattern.search(line) for line in added):
            flags.append(f"names the test framework's internals: {what}")
    return tuple(flags)
