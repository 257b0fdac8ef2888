"""`harness suites`: the suites, their tasks and what each measures."""

from __future__ import annotations

import click

from harness.cli import main
from harness.errors import exit_on_usage_error


@main.command("suites")
@exit_on_usage_error
def suites_command() -> None:
    """List the suites: name, tasks, what each measures, and its declared design."""
    from harness.suites.catalog import all_suites

    listed = list(all_suites().values())
    name_w = max(len(s.name) for s in listed)
    task_w = max(len(", ".join(s.task_names)) for s in listed)
    for suite in listed:
        tasks = ", ".join(suite.task_names)
        click.echo(f"{suite.name:<{name_w}}  {tasks:<{task_w}}  {suite.measures}")
        click.echo(f"{'':<{name_w}}  {'':<{task_w}}  design: {suite.design.summary()}")
