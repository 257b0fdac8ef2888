r"""`harness suco msc`: SuCo's minimal sufficient CoT for every trajectory of an inspect log.

Writes one JSONL row per sample (`-o`), optionally the Stage I (MFT) SFT rows (`--mft`, which
reuses the same scores), and prints a table by difficulty quartile. The scoring template,
splitter, δ0/α and the MFT details are ours (spec suco.md §4); MFT rows are not repaired by an
LLM (`"repaired": false`).
"""

from __future__ import annotations

import json

import click

from harness.errors import HarnessUsageError, exit_on_usage_error


@click.group("suco")
def suco() -> None:
    """SuCo (reconstructed): minimal sufficient CoT, MFT data and the SAPO reward."""


@suco.command("msc")
@click.argument("log")
@click.option(
    "--calibrator",
    required=True,
    help="local/NAME_OR_PATH or openai-api/NAME/MODEL: the model that scores S.",
)
@click.option("-M", "model_args", multiple=True, metavar="KEY=VALUE", help="Calibrator argument.")
@click.option("-o", "--output", default=None, help="Write one JSONL row per sample here.")
@click.option("--mft", "mft_path", default=None, help="Also write MFT SFT rows (JSONL) here.")
@click.option(
    "--l-min",
    type=int,
    default=5,
    show_default=True,
    help="MSCs shorter than this many sentences become an empty CoT in --mft.",
)
@click.option("--include-wrong", is_flag=True, help="Keep trajectories scored wrong in --mft.")
@click.option("--delta0", type=float, default=0.6, show_default=True, help="δ0 of δ0 + α·C (ours).")
@click.option("--alpha", type=float, default=0.3, show_default=True, help="α of δ0 + α·C (ours).")
@click.option("--think-open", default="<think>", show_default=True, help="Opens the CoT.")
@click.option("--think-close", default="</think>", show_default=True, help="Closes the CoT.")
@click.option("--lead-in", default="The final answer is \\boxed{", show_default=True,
              help="Scoring template: text between the CoT and the answer.")  # fmt: skip
@click.option("--answer-close", default="}", show_default=True,
              help="Scoring template: text scored after the answer.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of a table.")
@exit_on_usage_error
def msc(
    log: str,
    calibrator: str,
    model_args: tuple[str, ...],
    output: str | None,
    mft_path: str | None,
    l_min: int,
    include_wrong: bool,
    delta0: float,
    alpha: float,
    think_open: str,
    think_close: str,
    lead_in: str,
    answer_close: str,
    as_json: bool,
) -> None:
    """Find the MSC of every sample in LOG and summarise the savings by difficulty."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from harness.kv_args import parse_kv
    from harness.suco.calibrator import load_calibrator
    from harness.suco.mft import mft_row
    from harness.suco.msc_log import msc_rows, render_table, summarize, summary_json
    from harness.suco.sufficiency import RECONSTRUCTED, ScoringTemplate
    from harness.suco.threshold import check_threshold
    from harness.suco.trajectories import read_trajectories

    try:
        check_threshold(delta0, alpha)
    except ValueError as ex:
        raise HarnessUsageError(f"{ex}; change --delta0/--alpha") from None
    if l_min < 0:
        raise HarnessUsageError(f"--l-min must be >= 0, got {l_min}")
    data = read_trajectories(log, think_open, think_close)
    cal = load_calibrator(calibrator, **parse_kv(model_args, "-M"))
    template = ScoringTemplate(think_open, think_close, lead_in, answer_close)
    with Progress(
        TextColumn("scoring CoT prefixes"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=as_json,
    ) as bar:
        job = bar.add_task("msc", total=len(data.trajectories))
        rows = msc_rows(data.trajectories, cal, template, delta0, alpha,
                        advance=lambda: bar.advance(job))  # fmt: skip
    if output:
        with open(output, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row.as_dict()) + "\n")
    n_mft = n_wrong = 0
    if mft_path:
        with open(mft_path, "w", encoding="utf-8") as f:
            for traj, row in zip(data.trajectories, rows, strict=True):
                if traj.correct is False and not include_wrong:
                    n_wrong += 1
                    continue
                f.write(json.dumps(mft_row(traj, row.t_star, l_min, think_open, think_close)))
                f.write("\n")
                n_mft += 1
    summary = summarize(rows)
    if as_json:
        result = {
            "method": "SuCo MSC (reconstructed)",
            "reconstructed": RECONSTRUCTED,
            "log": data.location,
            "calibrator": cal.name,
            "template": {
                "think_open": think_open,
                "think_close": think_close,
                "lead_in": lead_in,
                "answer_close": answer_close,
            },  # fmt: skip
            "delta0": delta0,
            "alpha": alpha,
            "n": len(rows),
            "skipped": list(data.skipped),
            "summary": summary_json(summary),
        }
        if mft_path:
            result["mft"] = {"path": mft_path, "rows": n_mft, "left_out_wrong": n_wrong,
                             "l_min": l_min, "repaired": False}  # fmt: skip
        click.echo(json.dumps(result, indent=1))
        return
    click.echo(f"SuCo MSC (reconstructed): {len(rows)} samples of {data.location}, calibrator "
               f"{cal.name}, delta = {delta0} + {alpha} * C")  # fmt: skip
    click.echo(render_table(summary))
    if data.skipped:
        click.echo(f"left out {len(data.skipped)} sample(s), e.g. {data.skipped[0]}")
    if mft_path:
        click.echo(f"MFT: {n_mft} rows to {mft_path} (L_min {l_min}, not repaired by an LLM; "
                   f"{n_wrong} wrong trajectories left out)")  # fmt: skip
    click.echo(f"reconstructed: {RECONSTRUCTED}")
