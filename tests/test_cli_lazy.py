"""The `harness` command imports its subcommands' modules only when they are used."""

import subprocess
import sys

from click.testing import CliRunner

from harness import registry
from harness.cli import main


def test_importing_the_cli_does_not_import_inspect_or_torch():
    # Spawned training workers import the `harness` script's module again; it must stay cheap.
    heavy = "['inspect_ai', 'torch']"
    code = f"import sys, harness.cli; print([m for m in {heavy} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_lazy_subcommand_resolves_and_is_listed():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in registry.names("command"):
        assert f"  {name} " in result.output
        sub = CliRunner().invoke(main, [name, "--help"])
        assert sub.exit_code == 0, sub.output
        assert "Usage: " in sub.output
