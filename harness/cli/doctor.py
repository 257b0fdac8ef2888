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

    for status in sandbox_statuses():
        click.echo(f"{status.name:<7} {'works' if status.works else 'no':<6} {status.detail}")
