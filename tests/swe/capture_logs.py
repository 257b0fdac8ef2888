"""Capture the real test-runner logs that `tests/swe/test_log_parsers.py` reads.

Usage: `python tests/swe/capture_logs.py tests/swe/captured_logs`, from the repository root with
the venv's python.

The script writes tiny test projects into a temporary folder: pytest, unittest, `node --test`,
Jest and Go. Each project has passing, failing and skipped tests, and nested groups where the
framework has them. The script runs the real tools on them and writes one log per format to
OUTDIR. Each log holds the combined stdout and stderr, verbatim, below one first line such as
`# captured with: pytest 9.2.0, python 3.11.7; command: ...`.

The tools it needs:
- pytest and unittest, from this interpreter;
- node 20 and npm, with `npm install --no-save jest@29` run in the Jest project, so the npm
  registry must be reachable;
- go (Debian: `apt-get install -y golang-go`).

If a tool is missing, its logs are not written, the reason is printed, and the exit status is 1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

PYTEST_PROJECT = {
    "tests/__init__.py": "",
    "tests/test_calc.py": """\
import pytest


def add(a, b):
    return a + b


def test_add():
    assert add(1, 2) == 3


def test_add_wrong():
    assert add(1, 2) == 4


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert add(1, 1) == 3


@pytest.mark.xfail(reason="fixed since")
def test_xpass():
    assert add(1, 1) == 2


@pytest.fixture
def broken():
    raise RuntimeError("fixture setup fails")


def test_setup_error(broken):
    pass


@pytest.fixture
def bad_teardown():
    yield 1
    raise RuntimeError("teardown fails")


def test_teardown_error(bad_teardown):
    assert bad_teardown == 1


@pytest.mark.parametrize("text", ["a b", "x[1]", "p - q", "plain"])
def test_param(text):
    assert text != "p - q"


class TestGroup:
    def test_inner(self):
        assert add(0, 0) == 0

    def test_inner_fail(self):
        assert [add(1, 0)] == [2]
""",
}

UNITTEST_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/tests/__init__.py": "",
    "pkg/tests/test_things.py": '''\
import unittest


class TestMath(unittest.TestCase):
    def test_add(self):
        self.assertEqual(1 + 1, 2)

    def test_add_wrong(self):
        self.assertEqual(1 + 1, 3)

    def test_raises(self):
        raise KeyError("boom")

    @unittest.skip("not today")
    def test_skipped(self):
        pass

    def test_documented(self):
        """Check that the first docstring line is printed.

        Only the first line appears in the -v output.
        """
        self.assertTrue(True)

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        self.assertEqual(1, 1)

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_subtests_pass(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertGreaterEqual(i, 0)

    def test_prints(self):
        print("some output from the test")


class TestSetupFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup fails")

    def test_never_runs(self):
        pass
''',
}

NODE_PROJECT = {
    "package.json": '{"name": "node-test-sample", "version": "1.0.0", "private": true}\n',
    "math.test.mjs": """\
import { test, describe, it } from 'node:test';
import assert from 'node:assert/strict';

test('adds numbers', () => {
  assert.equal(1 + 1, 2);
});

test('fails to add', () => {
  assert.equal(1 + 1, 3);
});

test('skipped test', { skip: 'not today' }, () => {});

test('todo test', { todo: true }, () => {});

describe('outer suite', () => {
  it('inner passes', () => {
    console.log('output from inner passes');
    assert.ok(true);
  });
  it('inner fails', () => {
    assert.ok(false);
  });
  describe('nested suite', () => {
    it('deep passes', () => {});
  });
});

test('parent with subtests', async (t) => {
  await t.test('child one', () => {});
  await t.test('child two', () => {
    throw new Error('child fails');
  });
});

test('name with # hash and \\\\ backslash', () => {});

test('takes (1.5s) literally', () => {});
""",
}

JEST_PROJECT = {
    "package.json": '{"name": "jest-sample", "version": "1.0.0", "private": true}\n',
    "__tests__/math.test.js": """\
describe('Calculator', () => {
  test('adds numbers', () => {
    expect(1 + 1).toBe(2);
  });
  test('subtracts wrongly', () => {
    expect(2 - 1).toBe(3);
  });
  describe('division', () => {
    test('divides evenly', () => {
      expect(4 / 2).toBe(2);
    });
    test.skip('divides by zero', () => {});
    test.each([
      [1, 2],
      [2, 5],
    ])('doubles %i to %i', (a, b) => {
      expect(a * 2).toBe(b);
    });
  });
});

test('top-level passes', () => {});
test.todo('write more tests');
test('slow test', async () => {
  await new Promise((resolve) => setTimeout(resolve, 30));
});
""",
    "__tests__/other.test.js": """\
describe('Other', () => {
  it('works', () => {});
  it('also fails', () => {
    throw new Error('nope');
  });
});
""",
    "__tests__/log.test.js": """\
describe('Logger', () => {
  test('prints', () => {
    console.log('hello from a test');
  });
});
""",
}

GO_PROJECT = {
    "go.mod": "module example.com/sample\n\ngo 1.19\n",
    "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    "calc/calc_test.go": """\
package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("wrong")
	}
}

func TestAddWrong(t *testing.T) {
	if Add(1, 2) != 4 {
		t.Errorf("Add(1, 2) = %d, want 4", Add(1, 2))
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not today")
}

func TestTable(t *testing.T) {
	cases := []struct {
		name string
		a, b int
		want int
	}{
		{"small numbers", 1, 2, 3},
		{"negative", -1, -2, -3},
		{"wrong want", 2, 2, 5},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.want {
				t.Errorf("got %d, want %d", got, c.want)
			}
		})
	}
	t.Run("nested", func(t *testing.T) {
		t.Run("deep pass", func(t *testing.T) {})
		t.Run("deep skip", func(t *testing.T) { t.Skip("later") })
	})
}

func TestParallel(t *testing.T) {
	for _, name := range []string{"p1", "p2"} {
		name := name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Log("running", name)
		})
	}
}
""",
    "crash/crash_test.go": """\
package crash

import "testing"

func TestBefore(t *testing.T) {}

func TestPanics(t *testing.T) {
	panic("boom")
}

func TestAfter(t *testing.T) {}
""",
}


class ToolMissing(Exception):
    """A tool that a log needs is not installed."""


def write_project(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative path → text) under `root` and return `root`."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def clean_env(**extra: str) -> dict[str, str]:
    """Return this process's environment without settings that change a tool's output."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"FORCE_COLOR", "NO_COLOR", "PYTEST_ADDOPTS", "NODE_OPTIONS", "CI"}
    }
    env.update(extra)
    return env


def run(command: Sequence[str], cwd: Path, env: dict[str, str]) -> str:
    """Run `command` and return its stdout and stderr, interleaved as written."""
    if shutil.which(command[0]) is None:
        raise ToolMissing(f"{command[0]} is not on PATH")
    done = subprocess.run(
        list(command),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    return done.stdout


def first_line(command: Sequence[str], cwd: Path, env: dict[str, str]) -> str:
    """Return the first line of a version command's output."""
    return run(command, cwd, env).strip().splitlines()[0]


def write_log(outdir: Path, name: str, tools: str, command: Sequence[str], output: str) -> None:
    """Write one log: the provenance line, then the tool's output verbatim."""
    shown = " ".join(Path(command[0]).name if i == 0 else part for i, part in enumerate(command))
    header = f"# captured with: {tools}; command: {shown}\n"
    (outdir / name).write_text(header + output, encoding="utf-8")
    print(f"wrote {outdir / name}")


def capture_python(work: Path, outdir: Path) -> None:
    """Write pytest_ra.log, pytest_v.log and unittest_v.log."""
    python = sys.executable
    env = clean_env(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    project = write_project(work / "py", PYTEST_PROJECT)
    pytest_version = first_line([python, "-m", "pytest", "--version"], project, env).split()[-1]
    tools = f"pytest {pytest_version}, python {sys.version.split()[0]}"
    for name, flags in [
        ("pytest_ra.log", ["-rA"]),
        ("pytest_v.log", ["-v", "--color=yes"]),
    ]:
        command = [python, "-m", "pytest", *flags, "-p", "no:cacheprovider", "tests"]
        write_log(outdir, name, tools, command, run(command, project, env))

    project = write_project(work / "ut", UNITTEST_PROJECT)
    command = [python, "-m", "unittest", "-v", "pkg.tests.test_things"]
    tools = f"unittest (python {sys.version.split()[0]}), PYTHONUNBUFFERED=1"
    write_log(outdir, "unittest_v.log", tools, command, run(command, project, env))


def capture_node(work: Path, outdir: Path) -> None:
    """Write node_test_tap.log and node_test_spec.log."""
    env = clean_env()
    project = write_project(work / "node", NODE_PROJECT)
    tools = f"node {first_line(['node', '--version'], project, env)}"
    for name, flags in [
        ("node_test_tap.log", []),
        ("node_test_spec.log", ["--test-reporter=spec"]),
    ]:
        command = ["node", "--test", *flags]
        write_log(outdir, name, tools, command, run(command, project, env))


def capture_jest(work: Path, outdir: Path) -> None:
    """Install Jest 29 into a fresh project, then write jest_verbose.log and jest_default.log."""
    env = clean_env()
    project = write_project(work / "jest", JEST_PROJECT)
    install = ["npm", "install", "--no-save", "--no-audit", "--no-fund", "jest@29"]
    output = run(install, project, env)
    if not (project / "node_modules" / ".bin" / "jest").exists():
        raise ToolMissing(f"npm could not install jest@29:\n{output}")
    jest = str(project / "node_modules" / ".bin" / "jest")
    node = first_line(["node", "--version"], project, env)
    tools = f"jest {first_line([jest, '--version'], project, env)}, node {node}"
    for name, flags in [("jest_verbose.log", ["--verbose"]), ("jest_default.log", [])]:
        command = [jest, "--ci", *flags]
        write_log(outdir, name, tools, command, run(command, project, env))


def capture_go(work: Path, outdir: Path) -> None:
    """Write go_test_v.log."""
    env = clean_env(
        GOCACHE=str(work / "gocache"),
        GOPATH=str(work / "gopath"),
        GOPROXY="off",
        GOFLAGS="-mod=mod",
        GO111MODULE="on",
        GOTOOLCHAIN="local",
    )
    project = write_project(work / "go", GO_PROJECT)
    tools = first_line(["go", "version"], project, env)
    command = ["go", "test", "-v", "-count=1", "-p", "1", "./..."]
    write_log(outdir, "go_test_v.log", tools, command, run(command, project, env))


def main(argv: Sequence[str]) -> int:
    """Capture every log into the folder named by the one argument."""
    if len(argv) != 1:
        print("usage: python tests/swe/capture_logs.py OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[0])
    outdir.mkdir(parents=True, exist_ok=True)
    missing = []
    with tempfile.TemporaryDirectory(prefix="swe-logs-") as tmp:
        for capture in (capture_python, capture_node, capture_jest, capture_go):
            try:
                capture(Path(tmp), outdir)
            except ToolMissing as ex:
                missing.append(f"{capture.__name__}: {ex}")
    for line in missing:
        print(f"not captured: {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
