"""The `harness` command, one module per subcommand.

`eval`, `report`, `suites` and `doctor` register when this package loads (their modules import
their heavy dependencies inside the command); the others, and the suites' own command groups,
are registered by name (`harness.registry`, kind "command") and load on first use.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from harness import registry


class LazyGroup(click.Group):
    """A click group that imports its registered subcommands (kind "command") on first use.

    Listing them imports no subcommand's module: the registry holds `module:NAME` strings.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Eager and registered subcommands, sorted."""
        return sorted({*super().list_commands(ctx), *registry.names("command")})

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
        """The subcommand, importing its module if it is a registered one."""
        if cmd_name not in self.commands and registry.target("command", cmd_name) is not None:
            self.add_command(registry.get("command", cmd_name), cmd_name)
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
