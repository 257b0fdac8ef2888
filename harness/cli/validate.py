"""`harness validate --suite NAME`: run a suite's own check of its tasks (its `validate`)."""

from __future__ import annotations

import sys

import click

from harness.errors import HarnessUsageError, exit_on_usage_error


@click.command("validate")
@click.option("--suite", required=True, help="Suite to validate (one that has a validator).")
@click.option("--data-dir", default=None, help="Local data folder (else $HARNESS_DATA_DIR).")
@click.option("--timeout", type=int, default=600, show_default=True, help="Seconds per command.")
@exit_on_usage_error
def validate(suite: str, data_dir: str | None, timeout: int) -> None:
    """Check a suite's tasks (for SWE tasks: the gold patch resolves, the empty one does not)."""
    from harness import registry
    from harness.suites.catalog import all_suites, get_suite

    found = get_suite(suite)
    if found.validate is None:
        able = sorted(s.name for s in all_suites().values() if s.validate)
        raise HarnessUsageError(
            f"suite '{suite}' has no validator; these do: {', '.join(able) or '(none)'}"
        )
    rows = registry.resolve(found.validate)(data_dir, timeout=timeout)
    for row in rows:
        click.echo(row.summary())
    bad = [row for row in rows if not row.ok]
    click.echo(f"{len(rows) - len(bad)}/{len(rows)} tasks passed")
    if bad:
        sys.exit(1)
