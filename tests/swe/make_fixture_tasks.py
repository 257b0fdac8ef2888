"""Make four tiny executable SWE-rebench V2 tasks, with local git mirrors of their repositories.

`make_fixture_tasks(DATA_DIR)` writes `DATA_DIR/swe/fixture-tasks.jsonl` and one git repository
per task in `DATA_DIR/swe/repos/<owner>__<name>/`. Each mirror holds the base commit and, after
it, a "fix" commit with the gold patch and the new tests, as a real repository's history would:
the isolation check is that a materialised repository shows no trace of it.

Three tasks are pure Python tested with unittest (the sandbox's python3 has no pytest) and one
is Node.js tested with `node --test`. Run as a script: `python tests/swe/make_fixture_tasks.py DIR`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "fixture",
    "GIT_AUTHOR_EMAIL": "fixture@localhost",
    "GIT_COMMITTER_NAME": "fixture",
    "GIT_COMMITTER_EMAIL": "fixture@localhost",
    "GIT_AUTHOR_DATE": "2024-01-02T03:04:05Z",
    "GIT_COMMITTER_DATE": "2024-01-02T03:04:05Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_UNITTEST = {"test_cmd": ["python3 -m unittest -v"], "log_parser": "parse_log_unittest"}
_NODE = {"test_cmd": ["node --test"], "log_parser": "parse_log_node_test"}


@dataclass(frozen=True)
class FixtureRepo:
    """One fixture task: the repository's files at base, the fix, and the new tests."""

    repo: str  # owner/name
    number: int  # the "PR" number in the instance id
    language: str
    runner: dict[str, object]  # test_cmd and log_parser
    base: dict[str, str]  # path -> text at the base commit
    fix: dict[str, str]  # path -> text after the gold fix
    tests: dict[str, str]  # path -> text after the test patch
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    problem: str
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def instance_id(self) -> str:
        """`owner__name-NUMBER`."""
        return f"{self.repo.replace('/', '__')}-{self.number}"


def _u(module: str, cls: str, name: str) -> str:
    return f"{name} ({module}.{cls}.{name})"


_STATS_BASE = '''"""Small statistics helpers."""


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    xs = list(xs)
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2
'''
_STATS_TEST_BASE = """import unittest

from mathlib.stats import mean, median


class TestStats(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_sorted_odd(self):
        self.assertEqual(median([1, 2, 3]), 2)
"""
_STATS_TEST_NEW = (
    _STATS_TEST_BASE
    + """
    def test_median_unsorted(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_median_unsorted_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
"""
)

_SLUG_BASE = '''"""Text to URL slugs."""

import re


def slugify(text):
    text = text.lower()
    return re.sub(r"[^a-z0-9]+", "-", text)
'''
_SLUG_FIX = _SLUG_BASE.replace(
    'return re.sub(r"[^a-z0-9]+", "-", text)', 'return re.sub(r"[^a-z0-9]+", "-", text).strip("-")'
)
_SLUG_TEST_BASE = """import unittest

from textkit.slug import slugify


class TestSlugify(unittest.TestCase):
    def test_lowercase(self):
        self.assertEqual(slugify("Hello"), "hello")

    def test_spaces(self):
        self.assertEqual(slugify("hello big world"), "hello-big-world")

    def test_punctuation_inside(self):
        self.assertEqual(slugify("a, b"), "a-b")
"""
_SLUG_TEST_NEW = (
    _SLUG_TEST_BASE
    + """
    def test_strip_edges(self):
        self.assertEqual(slugify("  Hello, World!  "), "hello-world")
"""
)

_MERGE_BASE = '''"""Merging closed integer intervals."""


def merge(intervals):
    out = []
    for start, end in intervals:
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
'''
_MERGE_FIX = _MERGE_BASE.replace(
    "for start, end in intervals:", "for start, end in sorted(intervals):"
).replace("out[-1] = (out[-1][0], end)", "out[-1] = (out[-1][0], max(out[-1][1], end))")
_MERGE_TEST_BASE = """import unittest

from intervals.merge import merge


class TestMerge(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(merge([]), [])

    def test_disjoint(self):
        self.assertEqual(merge([(1, 2), (4, 5)]), [(1, 2), (4, 5)])

    def test_overlapping_sorted(self):
        self.assertEqual(merge([(1, 3), (2, 6)]), [(1, 6)])
"""
_MERGE_TEST_NEW = (
    _MERGE_TEST_BASE
    + """
    def test_unsorted(self):
        self.assertEqual(merge([(4, 5), (1, 2)]), [(1, 2), (4, 5)])

    def test_contained(self):
        self.assertEqual(merge([(1, 10), (2, 3)]), [(1, 10)])
"""
)

_RANGE_BASE = """'use strict';

function range(start, end, step = 1) {
  const out = [];
  for (let i = start; i <= end; i += step) out.push(i);
  return out;
}

function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}

module.exports = { range, sum };
"""
_RANGE_FIX = _RANGE_BASE.replace("i <= end", "i < end")
_RANGE_TEST_BASE = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { range, sum } = require('../src/range.js');

test('sum adds numbers', () => {
  assert.strictEqual(sum([1, 2, 3]), 6);
});

test('sum of nothing is zero', () => {
  assert.strictEqual(sum([]), 0);
});

test('empty range when start is past end', () => {
  assert.deepStrictEqual(range(5, 1), []);
});
"""
_RANGE_TEST_NEW = (
    _RANGE_TEST_BASE
    + """
test('range excludes its end', () => {
  assert.deepStrictEqual(range(0, 3), [0, 1, 2]);
});

test('range with a step', () => {
  assert.deepStrictEqual(range(0, 6, 2), [0, 2, 4]);
});
"""
)

FIXTURES: tuple[FixtureRepo, ...] = (
    FixtureRepo(
        repo="fixture/mathlib",
        number=1,
        language="python",
        runner=_UNITTEST,
        base={
            "mathlib/__init__.py": "",
            "mathlib/stats.py": _STATS_BASE,
            "tests/__init__.py": "",
            "tests/test_stats.py": _STATS_TEST_BASE,
        },
        fix={"mathlib/stats.py": _STATS_BASE.replace("xs = list(xs)", "xs = sorted(xs)")},
        tests={"tests/test_stats.py": _STATS_TEST_NEW},
        fail_to_pass=(
            _u("tests.test_stats", "TestStats", "test_median_unsorted"),
            _u("tests.test_stats", "TestStats", "test_median_unsorted_even"),
        ),
        pass_to_pass=(
            _u("tests.test_stats", "TestStats", "test_mean"),
            _u("tests.test_stats", "TestStats", "test_median_sorted_odd"),
        ),
        problem="`mathlib.stats.median` gives the wrong answer when its input is not sorted: "
        "`median([3, 1, 2])` returns 1, not 2.",
    ),
    FixtureRepo(
        repo="fixture/textkit",
        number=7,
        language="python",
        runner=_UNITTEST,
        base={
            "textkit/__init__.py": "",
            "textkit/slug.py": _SLUG_BASE,
            "tests/__init__.py": "",
            "tests/test_slug.py": _SLUG_TEST_BASE,
        },
        fix={"textkit/slug.py": _SLUG_FIX},
        tests={"tests/test_slug.py": _SLUG_TEST_NEW},
        fail_to_pass=(_u("tests.test_slug", "TestSlugify", "test_strip_edges"),),
        pass_to_pass=(
            _u("tests.test_slug", "TestSlugify", "test_lowercase"),
            _u("tests.test_slug", "TestSlugify", "test_spaces"),
            _u("tests.test_slug", "TestSlugify", "test_punctuation_inside"),
        ),
        problem='`textkit.slug.slugify("  Hello, World!  ")` returns "-hello-world-"; slugs '
        "should not start or end with a hyphen.",
    ),
    FixtureRepo(
        repo="fixture/intervals",
        number=12,
        language="python",
        runner=_UNITTEST,
        base={
            "intervals/__init__.py": "",
            "intervals/merge.py": _MERGE_BASE,
            "tests/__init__.py": "",
            "tests/test_merge.py": _MERGE_TEST_BASE,
        },
        fix={"intervals/merge.py": _MERGE_FIX},
        tests={"tests/test_merge.py": _MERGE_TEST_NEW},
        fail_to_pass=(
            _u("tests.test_merge", "TestMerge", "test_unsorted"),
            _u("tests.test_merge", "TestMerge", "test_contained"),
        ),
        pass_to_pass=(
            _u("tests.test_merge", "TestMerge", "test_empty"),
            _u("tests.test_merge", "TestMerge", "test_disjoint"),
            _u("tests.test_merge", "TestMerge", "test_overlapping_sorted"),
        ),
        problem="`intervals.merge.merge` assumes its input is sorted, and an interval inside "
        "another one shrinks the merged interval: `merge([(1, 10), (2, 3)])` gives "
        "`[(1, 3)]`.",
    ),
    FixtureRepo(
        repo="fixture/jsrange",
        number=3,
        language="javascript",
        runner=_NODE,
        base={
            "package.json": '{\n  "name": "jsrange",\n  "version": "1.0.0",\n'
            '  "scripts": {"test": "node --test"}\n}\n',
            "src/range.js": _RANGE_BASE,
            "test/range.test.js": _RANGE_TEST_BASE,
        },
        fix={"src/range.js": _RANGE_FIX},
        tests={"test/range.test.js": _RANGE_TEST_NEW},
        fail_to_pass=("range excludes its end", "range with a step"),
        pass_to_pass=(
            "sum adds numbers",
            "sum of nothing is zero",
            "empty range when start is past end",
        ),
        problem="`range(start, end)` in src/range.js includes `end`; like Python's range it "
        "should stop before it (`range(0, 3)` is `[0, 1, 2]`).",
    ),
)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **_GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _diff(repo: Path, files: dict[str, str]) -> str:
    """The diff that writing `files` over the base makes; the tree is reset afterwards."""
    _write(repo, files)
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached")
    _git(repo, "reset", "-q", "--hard", "HEAD")
    return diff


def _make_repo(fixture: FixtureRepo, root: Path) -> dict[str, object]:
    repo = root / fixture.repo.replace("/", "__")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, fixture.base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base_commit = _git(repo, "rev-parse", "HEAD").strip()
    patch = _diff(repo, fixture.fix)
    test_patch = _diff(repo, fixture.tests)
    # later history, as upstream has it: the fix itself, which a solver must never see
    _write(repo, {**fixture.fix, **fixture.tests})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"Fix #{fixture.number}")
    return {
        "instance_id": fixture.instance_id,
        "repo": fixture.repo,
        "base_commit": base_commit,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": fixture.problem,
        "pr_description": f"Fixes #{fixture.number}. (Never shown to the solver.)",
        "language": fixture.language,
        "created_at": 1704164645000,
        "FAIL_TO_PASS": list(fixture.fail_to_pass),
        "PASS_TO_PASS": list(fixture.pass_to_pass),
        "install_config": {"install": [], **fixture.runner, "base_image_name": None},
        # task_format requires a non-empty image_name; no image exists for a fixture
        "image_name": "none (runs in the bwrap sandbox)",
        "meta": {},
    }


def make_fixture_tasks(data_dir: Path) -> list[str]:
    """Write the fixture tasks and their mirrors under `data_dir/swe/`; return the instance ids.

    Raises:
        FileExistsError: A mirror folder is already there.

    """
    swe = Path(data_dir) / "swe"
    repos = swe / "repos"
    repos.mkdir(parents=True, exist_ok=True)
    rows = [_make_repo(fixture, repos) for fixture in FIXTURES]
    with open(swe / "fixture-tasks.jsonl", "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return [str(row["instance_id"]) for row in rows]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixture_tasks.py DATA_DIR")
    print("\n".join(make_fixture_tasks(Path(sys.argv[1]))))
