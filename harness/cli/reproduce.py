"""`harness reproduce LOG`: re-run a log's configuration and say, field by field, what drifted."""

from __future__ import annotations

import sys

import click

from harness.errors import exit_on_usage_error


@click.command("reproduce")
@click.argument("log")
@click.option("--limit", type=int, default=None, help="Samples to run (default: as the log).")
@click.option(
    "--log-dir", default=None,
    help="A new or empty folder for the new log (default: reproduced/<LOG>-<time>).",
)  # fmt: skip
@exit_on_usage_error
def reproduce(log: str, limit: int | None, log_dir: str | None) -> None:
    """Run LOG's configuration again and say what drifted.

    Exit 0 when nothing drifted, 1 when something did, 3 when nothing did in what an older
    manifest let be compared.
    """
    from harness.eval.reproduce import reproduce as run

    result = run(log, limit, log_dir)
    for line in result.lines():
        click.echo(line)
    sys.exit(result.exit_code)
