"""`harness report`: a statistical report of the logs under some folders."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli import main
from harness.errors import HarnessUsageError, exit_on_usage_error


def default_output(log_dirs: tuple[str, ...], fmt: str) -> str:
    """`report.<fmt>` in the first log folder (beside the first log, if a file was named)."""
    first = Path(log_dirs[0])
    return str((first if first.is_dir() else first.parent) / f"report.{fmt}")


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
@click.option(
    "-o",
    "--output",
    default=None,
    help="File to write (default: report.FORMAT in the first LOG_DIR).",
)
@click.option("--force", is_flag=True, help="Replace an -o file the harness did not write.")
@exit_on_usage_error
def report_command(log_dirs: tuple[str, ...], fmt: str, output: str | None, force: bool) -> None:
    """Write a statistical report of the logs: scores, paired comparisons, a forest plot."""
    from harness.logs import log_files
    from harness.output_paths import mark_report, report_file
    from harness.report import build_report, write_report
    from harness.suites.catalog import catalog_design

    log_files(log_dirs)  # a missing folder is named before the output is checked
    target = report_file(default_output(log_dirs, fmt) if output is None else output, "-o",
                         force=force, fmt=fmt)  # fmt: skip
    data = build_report(list(log_dirs), catalog_design)
    if not data.logs:
        first = data.left_out[0] if data.left_out else None
        why = f"{first.path}: {first.reason}" if first else "no log could be used"
        more = f" (and {len(data.left_out) - 1} more left out)" if len(data.left_out) > 1 else ""
        raise HarnessUsageError(f"no usable log: {why}{more}; nothing written")
    for bad in data.left_out:
        click.echo(f"left out {bad.path}: {bad.reason}", err=True)
    try:
        written = write_report(data, str(target.path), fmt)
        mark_report(target.path, written, fmt)
    except OSError as ex:
        raise HarnessUsageError(
            f"cannot write the report to '{target.path}' ({ex.strerror or ex})"
        ) from None
    for path in target.replaced:
        click.echo(f"replaced {path} (--force)", err=True)
    for path in written:
        click.echo(f"wrote {path}")
