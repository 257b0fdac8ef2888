"""One registry (harness.registry) for suites, providers and subcommands; plugins add to it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import registry
from harness.errors import HarnessUsageError
from harness.suites.catalog import Suite, all_suites, get_suite

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-ins loaded, then a copy of the entries that this test may add to."""
    for kind in registry.SOURCES:
        if kind != "local-model":  # its source belongs to the models (helper C)
            registry.names(kind)
    copy = {kind: dict(entries) for kind, entries in registry._entries.items()}
    monkeypatch.setattr(registry, "_entries", copy)


def test_register_then_get_imports_a_target_string_on_use(scratch: None) -> None:
    registry.register("provider", "echo", "harness.errors:HarnessUsageError")
    assert registry.target("provider", "echo") == "harness.errors:HarnessUsageError"
    assert registry.get("provider", "echo") is HarnessUsageError
    assert "echo" in registry.names("provider")


def test_an_unknown_name_is_one_usage_line_with_the_nearest_name() -> None:
    with pytest.raises(HarnessUsageError) as caught:
        get_suite("arithh")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("unknown suite 'arithh' (did you mean 'arith'?); choose one of: ")
    assert "k-parity" in message


def test_a_name_registered_twice_with_another_target_is_refused(scratch: None) -> None:
    arith = get_suite("arith")
    registry.register("suite", "arith", arith)  # the same again (a module imported twice): kept
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("suite", "arith", Suite("arith", ("m:f",), "another"))
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("command", "board", "harness.cli.judge:judge")
    assert get_suite("arith") is arith


def test_the_suites_providers_and_commands_are_registered() -> None:
    assert list(all_suites()) == list(registry.names("suite"))
    providers = registry.names("provider")
    for name in ("local", "replay", "scripted", "pdr", "sr", "suco", "iwg", "serving"):
        assert name in providers
    from harness.models.providers import provider_class

    assert provider_class("iwg").__name__ == "ScriptedOrchestratorAPI"
    assert provider_class("serving").__name__ == "PolicyAPI"
    assert provider_class("openai") is None  # inspect's own: its arguments are taken as read
    commands = registry.names("command")
    assert {"board", "validate", "iwg", "provenance"} <= set(commands)
    assert registry.target("command", "provenance") == "harness.suites.provenance.cli:provenance"


def test_a_plugin_module_registers_a_suite_that_the_cli_lists(tmp_path: Path) -> None:
    (tmp_path / "my_suites.py").write_text(
        textwrap.dedent(
            """
            from harness.suites.catalog import Suite, register_suite

            register_suite(Suite("echo-suite", ("my_suites:echo",), "says what it is told"))
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path), registry.PLUGINS_ENV: "my_suites"}
    listed = subprocess.run(
        [sys.executable, "-m", "harness.cli", "suites"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-2000:]
    last = listed.stdout.splitlines()[-2]
    assert last.startswith("echo-suite ") and last.endswith("says what it is told")
    env[registry.PLUGINS_ENV] = "no_such_plugin_module"
    broken = subprocess.run(
        [sys.executable, "-m", "harness.cli", "suites"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert broken.returncode == 2
    assert broken.stderr.strip().splitlines() == [
        "harness: error: HARNESS_PLUGINS names 'no_such_plugin_module', which does not import: "
        "No module named 'no_such_plugin_module'"
    ]


def _splits_a_target_and_imports_it(path: Path) -> bool:
    """Whether a function in `path` splits a `module:NAME` string and imports the module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = ast.unparse(node)
            if "import_module" in body and ("partition(':')" in body or "split(':')" in body):
                return True
    return False


def test_module_name_targets_resolve_only_in_the_registry() -> None:
    """Every `module:NAME` string is imported by `registry.resolve`, no hand-rolled copy."""
    rolled = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if path.name != "registry.py" and _splits_a_target_and_imports_it(path)
    ]
    assert rolled == []


def test_the_entry_point_writes_nothing_into_inspects_private_registry() -> None:
    source = (ROOT / "harness" / "plugin.py").read_text()
    tree = ast.parse(source)
    private = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(part.startswith("_") for part in ast.unparse(node).replace(".", " ").split())
    ]
    assert private == [] and "_registry" not in source
