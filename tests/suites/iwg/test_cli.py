"""The suite's command group loads from the catalog, lazily, without naming the suite in the CLI."""

import subprocess
import sys

from click.testing import CliRunner

from harness import registry
from harness.cli import main


def test_the_catalog_declares_the_group_and_help_lists_it():
    assert registry.target("command", "iwg") == "harness.suites.iwg.cli:iwg"
    listing = CliRunner().invoke(main, ["--help"])
    assert listing.exit_code == 0 and "  iwg " in listing.output
    for args in (["iwg", "--help"], ["iwg", "generate", "--help"], ["iwg", "synthesize", "--help"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0 and "Usage: " in result.output, result.output


def test_listing_the_commands_imports_neither_inspect_nor_the_suite():
    code = (
        "import sys, click, harness.cli as c; "
        "c.main.list_commands(click.Context(c.main)); "
        "print([m for m in ('inspect_ai', 'torch', 'harness.suites.iwg.cli') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
