"""`harness eval`: run a suite on models and print each score with its interval.

Parse the flags into a `harness.eval.EvalRequest`, run it (`harness.eval.run`), print. A
subcommand that returns a `harness.role_eval.RoleEval` (a suite's own command) has it run here
too, by `harness.eval.run_roles`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

import click

from harness.cli import main
from harness.errors import exit_on_usage_error


@main.command("eval")
@click.option("--suite", required=True, help="Suite to run (see `harness suites`).")
@click.option(
    "--model", "models", multiple=True, help="Model spec; repeatable (suites that train: none)."
)
@click.option("--limit", type=int, default=None, help="Samples per task.")
@click.option("--epochs", type=int, default=1, show_default=True, help="Samples per problem.")
@click.option(
    "--model-name", "model_names", multiple=True, metavar="NAME",
    help="A short name for the summary table, one per --model in order (default: the shortest "
    "distinct end of each spec).",
)  # fmt: skip
@click.option("--seed", type=int, default=None, help="Generation seed for every model.")
@click.option("--log-dir", default="logs", show_default=True, help="Where logs go (and resume).")
@click.option(
    "--data-dir", default=None, help="Local data folder (else $HARNESS_DATA_DIR, else hub)."
)
@click.option("-T", "task_args", multiple=True, metavar="KEY=VALUE", help="Task argument.")
@click.option("-M", "model_args", multiple=True, metavar="KEY=VALUE", help="Model argument.")
@click.option(
    "--max-retries",
    type=int,
    default=None,
    help="inspect: retries per model call (default: until --timeout).",
)
@click.option(
    "--timeout",
    type=int,
    default=None,
    help="inspect: seconds a model call may take, retries included.",
)
@click.option(
    "--attempt-timeout", type=int, default=None, help="inspect: seconds per attempt before a retry."
)
@click.option(
    "--max-connections", type=int, default=None, help="inspect: concurrent calls per model."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON: the score rows, the paired comparisons and the suites' own tables.",
)
@click.option(
    "--display",
    type=click.Choice(["full", "rich", "plain", "log", "none"]),
    default=None,
    help="inspect-ai's progress display.",
)
@click.option(
    "--until",
    type=click.Choice(["decided"]),
    default=None,
    help="Stop asking a model once every pair it is in is resolved (anytime-valid).",
)
@click.option(
    "--margin", type=float, default=0.05, show_default=True,
    help="With --until decided: a pair whose CS lies inside +/-margin is equivalent.",
)  # fmt: skip
@click.option("--budget", type=int, default=None, help="With --until decided: items per model.")
@click.option(
    "--width", type=float, default=None,
    help="With --until decided and one model: stop once its interval is narrower than this.",
)  # fmt: skip
@click.option(
    "--order-seed", type=int, default=0, show_default=True,
    help="With --until decided: the seed of the items' shared random order.",
)  # fmt: skip
@click.option(
    "--active", is_flag=True,
    help="With --until decided and one --model: add it to the board of --history, asking items "
    "chosen by a factor model fitted on it (weighted by their selection probability).",
)  # fmt: skip
@click.option(
    "--history", multiple=True, metavar="LOGDIR",
    help="With --active: past logs of other models on the same task.",
)  # fmt: skip
@click.option(
    "--model-cost-config", default=None, metavar="FILE",
    help="inspect: model prices (YAML or JSON of ModelCost, $ per million tokens).",
)  # fmt: skip
@click.option("--cost-limit", type=float, default=None, help="inspect: dollars a sample may spend.")
@click.option(
    "--max-work", type=float, default=None, metavar="N",
    help="Raise a task's work limit (in the unit its refusal names) to N.",
)  # fmt: skip
@exit_on_usage_error
def eval_command(
    suite: str,
    models: tuple[str, ...],
    model_names: tuple[str, ...],
    limit: int | None,
    epochs: int,
    seed: int | None,
    log_dir: str,
    data_dir: str | None,
    task_args: tuple[str, ...],
    model_args: tuple[str, ...],
    max_retries: int | None,
    timeout: int | None,
    attempt_timeout: int | None,
    max_connections: int | None,
    as_json: bool,
    display: str | None,
    until: str | None,
    margin: float,
    budget: int | None,
    order_seed: int,
    width: float | None,
    active: bool,
    history: tuple[str, ...],
    model_cost_config: str | None,
    cost_limit: float | None,
    max_work: float | None,
) -> None:
    """Run a suite on one or more models and print each score with its 95% interval."""
    from harness.cli.summary_table import print_headless, print_rows
    from harness.eval import EvalRequest, run
    from harness.kv_args import parse_kv

    if model_names and (len(model_names) != len(models) or len(set(model_names)) != len(models)
                        or not all(n.strip() for n in model_names)):  # fmt: skip
        from harness.errors import HarnessUsageError

        raise HarnessUsageError(
            f"--model-name takes one distinct, non-empty name per --model: got "
            f"{len(model_names)} name(s) for {len(models)} model(s)"
        )
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
        max_retries=max_retries,
        timeout=timeout,
        attempt_timeout=attempt_timeout,
        max_connections=max_connections,
        display=display or ("none" if as_json else None),
        until=until,
        margin=margin,
        budget=budget,
        order_seed=order_seed,
        width=width,
        active=active,
        history=history,
        model_cost_config=model_cost_config,
        cost_limit=cost_limit,
        max_work=max_work,
    )
    # inspect prints a completion line on stdout; keep stdout for the JSON alone
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        ok, rows, records = run(request)
    from harness.compare import headline_rows

    rows = headline_rows(rows, records)  # a suite whose result is a table: none, a pointer
    if as_json:
        from harness.report import eval_json

        click.echo(json.dumps(eval_json(rows, records), indent=2, allow_nan=False))
    else:
        from harness.cli.cost_table import print_costs

        names = dict(zip(models, model_names, strict=True)) if model_names else None
        if rows:
            print_rows(rows, names=names)
        print_headless(records)
        print_costs(records, names=names)
    failed = [r for r in records if r.samples and all(s.error for s in r.samples)]
    for record in failed:
        click.echo(f"harness: every sample of {record.task} ({record.model}) errored; the first "
                   f"error: {record.samples[0].error[:200]}", err=True)  # fmt: skip
    if failed:
        sys.exit(1)
    if not ok:
        click.echo(
            "harness: some tasks did not finish; re-run the same command to finish them", err=True
        )
        sys.exit(1)


@main.result_callback()
@exit_on_usage_error
def run_returned(value: Any) -> None:
    """Run what a subcommand returned as a `RoleEval`, and print what its `finish` says."""
    if value is None:
        return
    from harness.role_eval import RoleEval

    if isinstance(value, RoleEval):
        from harness.eval import run_roles

        click.echo(value.finish(run_roles(value)))
