"""`harness judge estimate` and `harness judge plan`: the calibrated judge from the command line."""

from __future__ import annotations

import json
import math

import click

from harness.errors import HarnessUsageError, exit_on_usage_error


@click.group("judge")
def judge() -> None:
    """Correct an LLM judge's score with human labels (Rogan-Gladen), and plan the labelling."""


@judge.command("estimate")
@click.option("--test", "test_path", required=True, help='JSONL lines {"id", "judge": 0|1}.')
@click.option(
    "--calibration",
    "calib_path",
    required=True,
    help='JSONL lines {"id", "human": 0|1, "judge": 0|1}.',
)
@click.option("--alpha", type=float, default=0.05, show_default=True, help="1 - confidence.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@exit_on_usage_error
def estimate(test_path: str, calib_path: str, alpha: float, as_json: bool) -> None:
    """Bias-corrected share of items the humans would call correct, with its interval."""
    from harness.scorers.judge_labels import check_disjoint, read_labels
    from harness.stats import CalibrationError, rogan_gladen_from_labels, wilson

    if not 0 < alpha < 1:
        raise HarnessUsageError(f"--alpha must be in (0, 1), got {alpha}")
    test = read_labels(test_path, ("judge",))
    calib = read_labels(calib_path, ("human", "judge"))
    check_disjoint(test, calib)
    try:
        est = rogan_gladen_from_labels(
            test.columns["judge"], calib.columns["human"], calib.columns["judge"], alpha=alpha
        )
    except CalibrationError as ex:
        raise HarnessUsageError(str(ex)) from None
    naive = wilson(int(test.columns["judge"].sum()), len(test.ids), confidence=1 - alpha)
    result = {
        "estimate": est.estimate,
        "ci_low": est.low,
        "ci_high": est.high,
        "naive": naive.estimate,
        "q0": est.q0,
        "q1": est.q1,
        "n": est.n,
        "m0": est.m0,
        "m1": est.m1,
        "method": est.method,
    }
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"corrected : {est.summary()}")
    click.echo(f"naive     : {naive.summary()} (the judge's raw share, biased)")
    click.echo(
        f"judge     : specificity q0={est.q0:.3f}, sensitivity q1={est.q1:.3f}, "
        f"J={est.youden_j:.3f}"
    )


@judge.command("plan")
@click.option("--p", "p_hat", type=float, required=True, help="Judge's share of positives.")
@click.option("--q0", type=float, required=True, help="Judge specificity (guess or pilot).")
@click.option("--q1", type=float, required=True, help="Judge sensitivity (guess or pilot).")
@click.option("--budget", type=int, required=True, help="Human labels you can afford.")
@click.option("--pilot", type=int, default=0, show_default=True, help="Pilot items per class.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@exit_on_usage_error
def plan(p_hat: float, q0: float, q1: float, budget: int, pilot: int, as_json: bool) -> None:
    """Split a labelling budget between the two true classes, and say if the judge is worth it."""
    from harness.stats import (
        allocate_authors,
        allocate_optimal,
        regime_ratio,
        rogan_gladen,
    )

    for name, value in (("--p", p_hat), ("--q0", q0), ("--q1", q1)):
        if not 0 <= value <= 1:
            raise HarnessUsageError(f"{name} must be in [0, 1], got {value}")
    if budget < 2 or pilot < 0 or 2 * pilot > budget:
        raise HarnessUsageError(
            f"need --budget >= 2 and 0 <= --pilot <= budget/2, got budget={budget}, pilot={pilot}"
        )
    if q0 + q1 <= 1:
        raise HarnessUsageError(
            f"--q0 + --q1 must exceed 1 (a judge better than chance), got {q0} + {q1} = "
            f"{q0 + q1:g}; with such a judge no correction helps: plan to label by hand"
        )
    theta = rogan_gladen(p_hat, 10**9, q0, q1, 10**9, 10**9).estimate
    if not 0 < theta < 1:
        raise HarnessUsageError(
            f"--p {p_hat} with --q0 {q0} and --q1 {q1} puts the corrected share at {theta:g}, "
            "where every item is one class and there is nothing to plan; give a --p strictly "
            f"between {1 - q0:g} and {q1:g}"
        )
    try:
        authors = allocate_authors(budget, p_hat, q0, q1, m_pilot=pilot)
        optimal = allocate_optimal(budget, theta, q0, q1)
        verdict = regime_ratio(theta, q0, q1)
    except ValueError as ex:
        raise HarnessUsageError(str(ex)) from None
    result = {
        "authors_m0": authors.m0,
        "authors_m1": authors.m1,
        "optimal_m0": optimal.m0,
        "optimal_m1": optimal.m1,
        "R": None if math.isinf(verdict.ratio) else verdict.ratio,
        "recommendation": verdict.recommendation,
    }
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"authors' rule : label {authors.m0} truly-incorrect and {authors.m1} truly-correct items"
    )
    click.echo(
        f"exact optimum : label {optimal.m0} truly-incorrect and {optimal.m1} truly-correct items"
    )
    click.echo(f"R = {verdict.ratio:.3f} at theta = {theta:.3f}: {verdict.recommendation}")
    click.echo("  (R < 1: the judge plus these labels beats the same labels used alone)")
