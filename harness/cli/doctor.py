"""`harness doctor`: which sandboxes work on this machine, and why the others do not."""

from __future__ import annotations

import click

from harness.cli import main
from harness.errors import exit_on_usage_error


@main.command("doctor")
@exit_on_usage_error
def doctor_command() -> None:
    """Say which sandboxes work on this machine, and why the others don't."""
    from harness.sandbox.doctor import sandbox_statuses

    statuses = sandbox_statuses()
    width = max(len(status.name) for status in statuses)
    for status in statuses:
        verdict = "works" if status.works else "no"
        click.echo(f"{status.name:<{width}} {verdict:<6} {status.detail}")
