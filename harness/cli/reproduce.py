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
@click.option("--allow-endpoint", "endpoints", multiple=True, metavar="URL",
              help="An endpoint the log names that may be called (with your key, where the "
              "provider reads one). Without it, a log's endpoint is refused.")  # fmt: skip
@click.option("--allow-path", "paths", multiple=True, metavar="PATH",
              help="A file or folder outside the new log folder that the log's arguments may "
              "name. Without it, such a path is refused.")  # fmt: skip
@click.option("--max-wait", type=float, default=None, metavar="SECONDS",
              help="The longest the log's delays may make the run (default 600).")  # fmt: skip
@click.option("--plan-only", is_flag=True, help="Print what would run, and run nothing.")
@exit_on_usage_error
def reproduce(log: str, limit: int | None, log_dir: str | None, endpoints: tuple[str, ...],
              paths: tuple[str, ...], max_wait: float | None, plan_only: bool) -> None:  # fmt: skip
    """Run LOG's configuration again and say what drifted.

    A log is someone else's file: what it would run (provider, endpoint, keys, paths, limits,
    time) is printed first, and an endpoint or a path it names that you did not is refused.
    Exit 0 when nothing drifted, 1 when something did, 3 when nothing did in what an older
    manifest let be compared; 2 when refused.
    """
    from harness.eval import MAX_WAIT, Consent, prepare, refuse
    from harness.eval import reproduce as run

    consent = Consent(endpoints, paths, MAX_WAIT if max_wait is None else max_wait)
    if plan_only:
        *_, steps = prepare(log, limit, log_dir, consent)
        for line in steps.lines():
            click.echo(line)
        refuse(steps)
        return
    result = run(log, limit, log_dir, consent, show=click.echo)
    for line in result.lines():
        click.echo(line)
    sys.exit(result.exit_code)
