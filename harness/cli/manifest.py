"""`harness manifest LOG`: print the manifest a log carries (`harness.eval._manifest`)."""

from __future__ import annotations

import json

import click

from harness.errors import exit_on_usage_error


@click.command("manifest")
@click.argument("log")
@click.option("--samples", is_flag=True, help="Include each sample's data and output digest.")
@exit_on_usage_error
def manifest(log: str, samples: bool) -> None:
    """Print the manifest of LOG: data, prompt, code, packages, hardware and outputs hashes."""
    from harness.eval import load

    _, found = load(log)
    click.echo(json.dumps({"digest": found.digest, **found.as_dict(per_sample=samples)},
                          indent=2, sort_keys=False, default=str))  # fmt: skip
