"""The `harness` command, one module per subcommand.

`eval`, `report`, `suites` and `doctor` register when this package loads (their modules import
their heavy dependencies inside the command); the others load on first use.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

# Subcommands in modules of their own, imported when first used: importing this module stays
# cheap, which matters to every process that the training pools spawn (spawn imports the
# `harness` script's module again in each worker).
LAZY_SUBCOMMANDS = {
    "board": "harness.cli.board:board",
    "judge": "harness.cli.judge:judge",
    "leaderboard": "harness.cli.leaderboard:leaderboard",
    "manifest": "harness.cli.manifest:manifest",
    "reproduce": "harness.cli.reproduce:reproduce",
    "sage": "harness.cli.sage:sage",
    "suco": "harness.cli.suco:suco",
    "validate": "harness.cli.validate:validate",
}


def suite_commands() -> dict[str, str]:
    """The suites' own command groups (`Suite.commands`), by suite name, from the catalog.

    A suite that has commands runs them as `harness <suite name> ...`; its module is imported
    only when that command is used (or `harness --help` lists its one-line help).
    """
    from harness.suites.catalog import all_suites

    return {name: s.commands for name, s in all_suites().items() if s.commands}


class LazyGroup(click.Group):
    """A click group that imports the subcommands named in `LAZY_SUBCOMMANDS` on first use.

    The suites' own command groups, which the catalog names, load the same way.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Eager and lazy subcommands, sorted."""
        return sorted({*super().list_commands(ctx), *LAZY_SUBCOMMANDS, *suite_commands()})

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command; click's own usage errors become one line on stderr, exit 2.

        The same form as `harness.errors.exit_on_usage_error` gives our own usage errors:
        `harness: error: <what is wrong>; see `<command> --help``.
        """
        kwargs.pop("standalone_mode", None)
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as ex:
            ctx = getattr(ex, "ctx", None)
            hint = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
            message = " ".join(ex.format_message().split()).rstrip(".")
            print(f"harness: error: {message}{hint}", file=sys.stderr)
            sys.exit(ex.exit_code)
        except click.Abort:
            print("harness: aborted", file=sys.stderr)
            sys.exit(1)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand, importing its module if it is a lazy one."""
        if cmd_name not in self.commands:
            path = LAZY_SUBCOMMANDS.get(cmd_name) or suite_commands().get(cmd_name)
            if path:
                module, attr = path.split(":")
                self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup)
@click.version_option(package_name="harness")
def main() -> None:
    """Evaluate language models with intervals, paired tests and honest error counts."""


# Subcommands in this package register on `main` when their modules are imported, which stays
# cheap: each imports its heavy dependencies inside the command.
for _module in ("eval", "report", "suites", "doctor"):
    importlib.import_module(f"harness.cli.{_module}")

if __name__ == "__main__":
    main()
