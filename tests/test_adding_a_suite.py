"""docs/adding-a-suite.md works: its example suite, built from the page in a temporary folder,
is registered, run by `harness eval`, reported by `harness report`, and passes the design
conformance checks.

The page's Python blocks that start with `# <path>` are written under the folder as they stand,
and its bash block that sets HARNESS_PLUGINS is run there as one script (the `harness` of this
environment first on PATH), so the page cannot drift from what runs.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import registry
from harness.logs import suite_name
from tests import test_conformance as conformance  # imported here: its cases are the catalog's

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adding-a-suite.md"
SUITE = "even-odd"  # the example's name, as the page spells it


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def build_from_doc(text: str, folder: Path) -> str:
    """Write the page's files under `folder`; return its script (the bash block naming plugins)."""
    for block in _blocks(text, "python"):
        first, _, _ = block.partition("\n")
        path = folder / first.removeprefix("# ").strip()
        assert first.startswith("# ") and not path.exists(), first
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()  # "with an empty __init__.py"
        path.write_text(block)
    (script,) = [b for b in _blocks(text, "bash") if registry.PLUGINS_ENV in b]
    return script


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "mine"
    folder.mkdir()
    return folder, build_from_doc(DOC.read_text(encoding="utf-8"), folder)


def _run(folder: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["COLUMNS"] = "200"  # the summary table on one line per row
    env.pop(registry.PLUGINS_ENV, None)
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=folder, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture
def plugin_loaded(built: tuple[Path, str], monkeypatch: pytest.MonkeyPatch):
    """The example's plugin imported here, in a copy of the registry that the test throws away."""
    folder, _ = built
    monkeypatch.delenv(registry.PLUGINS_ENV, raising=False)
    registry.names("suite")  # the built-ins first, in the real registry
    monkeypatch.setattr(registry, "_entries", {k: dict(v) for k, v in registry._entries.items()})
    monkeypatch.setattr(registry, "_loaded", set(registry._loaded))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv(registry.PLUGINS_ENV, "even_odd.plugin")
    yield registry.get("suite", SUITE)
    for name in [m for m in sys.modules if m == "even_odd" or m.startswith("even_odd.")]:
        del sys.modules[name]


def test_the_pages_suite_is_listed_run_and_reported(built: tuple[Path, str]) -> None:
    folder, script = built
    done = _run(folder, script)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    out = done.stdout
    listed = [line for line in out.splitlines() if line.startswith(f"{SUITE} ")]
    assert listed and listed[0].split()[1] == "even_odd", out[:3000]
    # the eval summary: the accuracy of a model that always answers "even", with its interval
    (header,) = [line.split("┃")[1:-1] for line in out.splitlines() if "┃ suite" in line]
    (cells,) = [
        line.split("│")[1:-1] for line in out.splitlines() if line.startswith(f"│ {SUITE} ")
    ]
    row = dict(zip([h.strip() for h in header], [c.strip() for c in cells], strict=True))
    assert (row["metric"], row["n"], row["errors"]) == ("accuracy", "20", "0"), row
    score = float(row["score"])
    low, high = map(float, re.fullmatch(r"\[(\S+), (\S+)\]", row["95% CI"]).groups())
    assert 0 <= low < score < high <= 1, row
    # the report: the scores, and the suite's own section, whose counts agree with the score
    report = (folder / "logs" / SUITE / "report.md").read_text()
    assert f"| {SUITE} | even_odd | scripted/even" in report
    section = report.split(f"\n## {SUITE}\n", 1)[1]
    table = re.findall(r"^\| (even|odd) \| (\d+) \| (\d+) \|$", section, flags=re.M)
    rows = {answer: (int(n), int(correct)) for answer, n, correct in table}
    assert sorted(rows) == ["even", "odd"] and len(table) == 2, section
    (evens, right), (odds, wrong) = rows["even"], rows["odd"]
    assert (right, wrong, evens + odds) == (evens, 0, 20), rows  # it always answers "even"
    assert score == round(evens / 20, 3)


def test_the_pages_suite_names_itself_and_passes_the_conformance_checks(plugin_loaded) -> None:
    """Its task makes 20 seeded samples, and every default-run check of
    tests/test_conformance.py passes for its design."""
    suite = plugin_loaded
    (task_function,) = suite.tasks
    task = task_function()
    assert len({sample.id for sample in task.dataset}) == len(task.dataset) == 20
    # a log of the task run through inspect directly, not `harness eval`, names the suite too
    assert suite_name({"task": "even_odd", "metadata": task.metadata}) == SUITE
    cases = [(SUITE, metric) for metric in conformance._metrics(suite.design)]
    checks = [
        f
        for name, f in vars(conformance).items()
        if name.startswith("test_")
        and callable(f)
        and {m.name for m in getattr(f, "pytestmark", [])} == {"parametrize"}
    ]
    assert len(checks) >= 5
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conformance, "SUITES", {SUITE: suite})
        for check in checks:
            if list(inspect.signature(check).parameters) == ["suite"]:
                check(SUITE)
            else:
                for name, metric in cases:
                    check(name, metric)
