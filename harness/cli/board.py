"""`harness board replay` and `harness board export`: sequential evaluation on finished boards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from harness.errors import HarnessUsageError, exit_on_usage_error

JSON_MARK = "harness board replay"


@click.group("board")
def board() -> None:
    """Replay sequential evaluation on a board of per-item scores, or export one from logs."""


def _output(path: str, what: str, *, force: bool, mark: str | None) -> Path:
    """Check an output file before any work, by the rule every output file follows."""
    from harness.output_paths import data_file

    return data_file(path, what, force=force, mark=mark)


@board.command("replay")
@click.argument("board_csv", metavar="BOARD.csv")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Family-wise error level over the pairs.")  # fmt: skip
@click.option("--margin", type=float, default=None,
              help="Equivalence margin on the score scale [default: 0.05].")  # fmt: skip
@click.option("--budget", type=int, default=None, help="Items per model at most [default: all].")
@click.option("--orders", type=int, default=1, show_default=True,
              help="Random item orders to replay (spread and wrong-direction rate).")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the orders.")
@click.option(
    "--target",
    type=click.Choice(["population", "board"]),
    default="population",
    show_default=True,
    help="population: decide about the items' population "
    "(independent-draw CS); board: about the board's own items (without replacement).",
)
@click.option(
    "--family",
    type=click.Choice(["bonferroni", "holm"]),
    default="bonferroni",
    show_default=True,
    help="How the pairs share alpha: each pair's CS at alpha / pairs, or sequential "
    "Holm over their one-sided anytime p-values (directions only: margin 0).",
)
@click.option("--add-model", "add_name", default=None, metavar="NAME",
              help="Replay adding NAME to the other models' board (their rows are the "
              "history; NAME's row is revealed one item at a time).")  # fmt: skip
@click.option("--active", is_flag=True,
              help="With --add-model: choose items with a factor model fitted on the history, "
              "weighting by the selection probability (compared with random order).")  # fmt: skip
@click.option("--width", type=float, default=None,
              help="With --add-model: also stop when the CS is narrower than this.")  # fmt: skip
@click.option("--json", "json_path", default=None, metavar="FILE",
              help="Also write the result as JSON here ('-' for standard output).")  # fmt: skip
@click.option("--force", is_flag=True, help="Replace a --json file the harness did not write.")
@click.option("--max-work", type=float, default=None, metavar="SECONDS",
              help="Run a replay estimated to take up to SECONDS [default: 600].")  # fmt: skip
@exit_on_usage_error
def replay_command(
    board_csv: str,
    alpha: float,
    margin: float | None,
    budget: int | None,
    orders: int,
    seed: int,
    target: str,
    family: str,
    add_name: str | None,
    active: bool,
    width: float | None,
    json_path: str | None,
    force: bool,
    max_work: float | None,
) -> None:
    """Replay sequential evaluation on BOARD.csv (long: model,item,score in [0, 1])."""
    import math

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.board import MARGIN, SECONDS_LIMIT, estimated_seconds, read_board, replay
    from harness.suites.arg_ranges import check_work, work_limit

    if family == "holm":
        if margin not in (None, 0):
            raise HarnessUsageError(f"--family holm decides directions only: it takes --margin 0, "
                                    f"got {margin:g}")  # fmt: skip
        if add_name is not None:
            raise HarnessUsageError("--family holm is for a board's pairs, not --add-model")
        margin = 0.0
    margin = MARGIN if margin is None else margin
    if not math.isfinite(margin) or margin < 0 or margin >= 1:
        raise HarnessUsageError(f"--margin must be a number >= 0 and < 1, got {margin:g}")
    if budget is not None and budget < 1:
        raise HarnessUsageError(f"--budget must be at least 1 item, got {budget}")
    if not 0 < alpha < 1:
        raise HarnessUsageError(f"--alpha must be in (0, 1), got {alpha:g}")
    if orders < 1:
        raise HarnessUsageError(f"--orders must be at least 1, got {orders}")
    if add_name is None and (active or width is not None):
        raise HarnessUsageError(f"{'--active' if active else '--width'} needs --add-model NAME: "
                                "the model added to the others' board")  # fmt: skip
    if width is not None and not (math.isfinite(width) and 0 < width <= 1):
        raise HarnessUsageError(f"--width must be in (0, 1], got {width:g}")
    out = None
    if json_path not in (None, "-"):
        out = _output(json_path, "--json", force=force, mark=JSON_MARK)
    board_data = read_board(board_csv, min_models=1 if add_name is not None else 2)
    if add_name is not None:
        from harness.board import add_model

        with Progress(TextColumn("replicating"), console=Console(stderr=True),
                      transient=True) as bar:  # fmt: skip
            bar.add_task("add")
            result = add_model(board_data, add_name, active=active, alpha=alpha, margin=margin,
                               budget=budget, width=width, orders=orders, seed=seed)  # fmt: skip
        _emit(result, json_path, out)
        return
    n_models, n_items = board_data.scores.shape
    seconds = estimated_seconds(n_models, n_items, orders)
    with work_limit(max_work):
        check_work(f"board replay of {n_models} models x {n_items} items x {orders} order(s)",
                   seconds, "estimated seconds", SECONDS_LIMIT)  # fmt: skip
    with Progress(TextColumn(f"replaying orders (about {seconds:,.0f} s)"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                  transient=True, disable=orders < 2 and seconds < 5) as bar:  # fmt: skip
        task = bar.add_task("orders", total=orders)
        result = replay(board_data, alpha=alpha, margin=margin, budget=budget, orders=orders,
                        seed=seed, target=target,  # type: ignore[arg-type]
                        family=family,  # type: ignore[arg-type]
                        progress=lambda done: bar.update(task, completed=done))  # fmt: skip
    _emit(result, json_path, out)


def _emit(result: Any, json_path: str | None, out: Path | None) -> None:
    """Print the summary, and write the JSON to `out` (or only the JSON for '-')."""
    data = {"written_by": JSON_MARK, **result.as_dict()}
    text = json.dumps(data, indent=2, allow_nan=False)
    if json_path == "-":
        click.echo(text)
        return
    click.echo(result.summary())
    if out is not None:
        try:
            out.write_text(text + "\n", encoding="utf-8")
        except OSError as ex:
            raise HarnessUsageError(f"cannot write '{out}' ({ex.strerror or ex})") from None
        click.echo(f"wrote {out}")


@board.command("export")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option("-o", "--output", default=None, help="CSV file to write [default: standard output].")
@click.option("--task", default=None, help="The task to export, where the logs hold several.")
@click.option("--scorer", default=None, help="The scorer [default: the logs' first].")
@click.option("--force", is_flag=True, help="Replace an -o file that exists.")
@exit_on_usage_error
def export_command(
    log_dirs: tuple[str, ...], output: str | None, task: str | None, scorer: str | None,
    force: bool,
) -> None:  # fmt: skip
    """Write a board CSV (model,item,score) from the logs of one comparable group."""
    from harness.board import board_from_logs, write_board
    from harness.logs import log_files
    from harness.suites.catalog import catalog_design

    log_files(log_dirs)  # a missing folder is named before the output is checked
    out = None if output in (None, "-") else _output(output, "-o", force=force, mark=None)
    board_data, label = board_from_logs(log_dirs, catalog_design, task=task, scorer=scorer)
    try:
        write_board(board_data, out)
    except OSError as ex:
        raise HarnessUsageError(f"cannot write '{out}' ({ex.strerror or ex})") from None
    if out is not None:
        click.echo(f"wrote {out}: {len(board_data.models)} models x {len(board_data.items)} "
                   f"items of {label}", err=True)  # fmt: skip
