"""The `harness` command: eval, report, suites and doctor; other subcommands load lazily."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys

import click

from harness.errors import exit_on_usage_error

# Subcommands in modules of their own, imported when first used: importing this module stays
# cheap, which matters to every process that the training pools spawn (spawn imports the
# `harness` script's module again in each worker).
LAZY_SUBCOMMANDS = {
    "judge": "harness.judge_cli:judge",
    "leaderboard": "harness.leaderboard_cli:leaderboard",
    "sage": "harness.sage_cli:sage",
    "suco": "harness.suco_cli:suco",
    "validate": "harness.swe_validate:validate",
}


class LazyGroup(click.Group):
    """A click group that imports the subcommands named in `LAZY_SUBCOMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Eager and lazy subcommands, sorted."""
        return sorted({*super().list_commands(ctx), *LAZY_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand, importing its module if it is a lazy one."""
        if cmd_name in LAZY_SUBCOMMANDS and cmd_name not in self.commands:
            module, attr = LAZY_SUBCOMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup)
@click.version_option(package_name="harness")
def main() -> None:
    """Evaluate language models with intervals, paired tests and honest error counts."""


@main.command("eval")
@click.option("--suite", required=True, help="Suite to run (see `harness suites`).")
@click.option(
    "--model", "models", multiple=True, help="Model spec; repeatable (suites that train: none)."
)
@click.option("--limit", type=int, default=None, help="Samples per task.")
@click.option("--epochs", type=int, default=1, show_default=True, help="Samples per problem.")
@click.option("--seed", type=int, default=None, help="Generation seed for every model.")
@click.option("--log-dir", default="logs", show_default=True, help="Where logs go (and resume).")
@click.option(
    "--data-dir", default=None, help="Local data folder (else $HARNESS_DATA_DIR, else hub)."
)
@click.option("-T", "task_args", multiple=True, metavar="KEY=VALUE", help="Task argument.")
@click.option("-M", "model_args", multiple=True, metavar="KEY=VALUE", help="Model argument.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON list.")
@click.option(
    "--display",
    type=click.Choice(["full", "rich", "plain", "log", "none"]),
    default=None,
    help="inspect-ai's progress display.",
)
@exit_on_usage_error
def eval_command(
    suite: str,
    models: tuple[str, ...],
    limit: int | None,
    epochs: int,
    seed: int | None,
    log_dir: str,
    data_dir: str | None,
    task_args: tuple[str, ...],
    model_args: tuple[str, ...],
    as_json: bool,
    display: str | None,
) -> None:
    """Run a suite on one or more models and print each score with its 95% interval."""
    from harness.kv_args import parse_kv
    from harness.run import EvalRequest, run_eval
    from harness.summary_table import print_rows

    request = EvalRequest(
        suite=suite,
        models=models,
        limit=limit,
        epochs=epochs,
        seed=seed,
        log_dir=log_dir,
        data_dir=data_dir,
        task_args=parse_kv(task_args, "-T"),
        model_args=parse_kv(model_args, "-M"),
        display=display or ("none" if as_json else None),
    )
    # inspect prints a completion line on stdout; keep stdout for the JSON alone
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        ok, rows = run_eval(request)
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print_rows(rows)
    if not ok:
        click.echo(
            "harness: some tasks did not finish; re-run the same command to finish them", err=True
        )
        sys.exit(1)


@main.command("suites")
@exit_on_usage_error
def suites_command() -> None:
    """List the suites: name, tasks, and what each measures."""
    from harness.suites.catalog import all_suites

    listed = list(all_suites().values())
    name_w = max(len(s.name) for s in listed)
    task_w = max(len(", ".join(s.task_names)) for s in listed)
    for suite in listed:
        tasks = ", ".join(suite.task_names)
        click.echo(f"{suite.name:<{name_w}}  {tasks:<{task_w}}  {suite.measures}")


@main.command("report")
@click.argument("log_dirs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["md", "html"]), default="md", show_default=True)
@click.option("-o", "--output", default=None, help="File to write (default report.md/.html).")
@exit_on_usage_error
def report_command(log_dirs: tuple[str, ...], fmt: str, output: str | None) -> None:
    """Write a statistical report of the logs: scores, paired comparisons, a forest plot."""
    from harness.report_data import build_report
    from harness.report_render import write_report

    data = build_report(list(log_dirs))
    for path in write_report(data, output or f"report.{fmt}", fmt):
        click.echo(f"wrote {path}")


@main.command("doctor")
@exit_on_usage_error
def doctor_command() -> None:
    """Say which sandboxes work on this machine, and why the others don't."""
    from harness.sandbox.doctor import sandbox_statuses

    for status in sandbox_statuses():
        click.echo(f"{status.name:<7} {'works' if status.works else 'no':<6} {status.detail}")


if __name__ == "__main__":
    main()
