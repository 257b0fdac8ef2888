"""`harness report`: a statistical report of the logs under some folders."""

from __future__ import annotations

import click

from harness.cli import main
from harness.errors import exit_on_usage_error
from harness.paths import writable_file


@main.command("report")
@click.argument("log_dirs", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json"]),
    default="md",
    show_default=True,
    help="md and html render the report with plots; json writes every section's results.",
)
@click.option("-o", "--output", default=None, help="File to write (default report.md/.html).")
@exit_on_usage_error
def report_command(log_dirs: tuple[str, ...], fmt: str, output: str | None) -> None:
    """Write a statistical report of the logs: scores, paired comparisons, a forest plot."""
    from harness.report.data import build_report
    from harness.report.render import write_report

    target = writable_file(output or f"report.{fmt}", "-o")
    data = build_report(list(log_dirs))
    for bad in data.left_out:
        click.echo(f"left out {bad.path}: {bad.reason}", err=True)
    for path in write_report(data, str(target), fmt):
        click.echo(f"wrote {path}")
