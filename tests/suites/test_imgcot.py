"""Suite `imgcot` (reconstructed): rendering, step rule, budget, task arguments, a micro run.

The spec's §3 unit vectors and §5 checks 1-2 (specs/imgcot.md), then a micro end-to-end run of
the task (a few hundred problems, one epoch) read back by the report section.
"""

import math
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.suites.imgcot.problems import COT_LEN, STEP_LEN, make_problems
from harness.suites.imgcot.render import Canvas, fits, render, required_canvas, text_box
from harness.suites.imgcot.steps import select_steps, step_scores, token_budget

CANVAS = Canvas(40, 36, 10)  # the presets' canvas


def test_render_is_deterministic_and_in_unit_range():
    train, _ = make_problems(0, 50, 0)
    for p in train[:10]:
        a, b = render(p.cot_text, CANVAS), render(p.cot_text, CANVAS)
        assert a.dtype == np.float32 and a.shape == (36, 40)
        assert np.array_equal(a, b)  # same string, same array (one Pillow version)
        assert 0.0 <= a.min() and a.max() <= 1.0 and a.max() > 0.5  # text was drawn


def test_every_cot_fits_the_canvas_and_the_bound_is_tight():
    train, test = make_problems(3, 400, 100)
    assert all(fits(p.cot_text, CANVAS) for p in train + test)
    width, height = required_canvas(10)
    assert width <= CANVAS.width and height <= CANVAS.height
    # the bound is attained: some step line reaches exactly the required width
    assert not fits("\n".join(["0123456789+−×=;"] * 3), Canvas(width, height - 1, 10))
    lines = [text_box(p.cot_text, 10) for p in train]
    assert max(b[2] for b in lines) <= width


def test_one_digit_changes_the_image():
    a = render("3+4=7\n7×2=4\n4−1=3", CANVAS)
    b = render("3+4=7\n7×2=4\n4−1=2", CANVAS)
    assert not np.array_equal(a, b)


def test_step_scores_and_selection_match_the_spec_units():
    # specs/imgcot.md §3: (-0.1, -0.2, -2.4) has ℓ = -0.9, (-0.3, -0.3) has ℓ = -0.3; m = 1 keeps
    # the first
    scores = step_scores([[-0.1, -0.2, -2.4], [-0.3, -0.3]])
    assert scores == pytest.approx((-0.9, -0.3), abs=4 * np.finfo(np.float64).eps)
    assert select_steps(scores, 1) == (0,)
    assert select_steps(scores, 1, "highest") == (1,)


def test_selection_keeps_exactly_the_lowest_mean_step_of_four():
    # a hand-made 4-step example: step 2 has the lowest mean though step 1 holds the lowest token
    steps = [[-0.5, -0.5], [-3.0, -0.1, -0.1, -0.1], [-1.2, -1.0], [-0.2]]
    scores = step_scores(steps)  # -0.5, -0.825, -1.1, -0.2
    assert select_steps(scores, 1) == (2,)
    assert select_steps(scores, 2) == (1, 2)  # original order kept
    assert select_steps(scores, 3, "highest") == (0, 1, 3)
    kept = select_steps(scores, 2, "random", random.Random(0))
    assert len(kept) == 2 and list(kept) == sorted(kept)
    assert select_steps([-1.0, -1.0, -2.0, -1.0], 2) == (0, 2)  # a tie goes to the earlier step
    with pytest.raises(ValueError, match="m must be in 0..4"):
        select_steps(scores, 5)
    with pytest.raises(ValueError, match="no tokens"):
        step_scores([[-1.0], []])


def test_token_budget_matches_the_spec():
    # §3: k = 3 latents and a kept step of 5 tokens give 8 against 17 for the §5 CoT, 2.1x
    budget = token_budget(3, [STEP_LEN], COT_LEN)
    assert (budget.total, budget.cot, budget.below_cot) == (8, 17, True)
    assert round(budget.compression, 1) == 2.1
    assert not token_budget(3, [5, 5, 5], COT_LEN).below_cot


def test_both_autoencoders_see_byte_identical_encoder_inputs():
    from harness.suites.imgcot.runs import encoder_inputs

    train, _ = make_problems(1, 64, 0)
    x = encoder_inputs(train)
    assert (
        x.shape == (64, COT_LEN) and x.numpy().tobytes() == encoder_inputs(train).numpy().tobytes()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"width": 20, "height": 20}, "20x20 canvas is too small for the CoT"),
        ({"height": 30}, "40x30 canvas is too small for the CoT"),  # three lines need 36 px
        ({"font_size": 14}, "too small for the CoT at font size 14"),
        ({"k": 8, "m": 2}, "not fewer than the explicit CoT's 17"),
        ({"m": 4}, "m (kept steps) must be in 1..3"),
        ({"lam": -1.0}, "lam takes a number in [0"),
        ({"seeds": 0}, "seeds takes an integer in [1"),
        ({"arms": "imgcot,latent_foo"}, "unknown arm"),
        ({"preset": "huge"}, "unknown preset 'huge'"),
        ({"n_train": 0}, "n_train takes an integer in [1"),
    ],
)
def test_bad_task_arguments_are_usage_errors(args, message):
    from harness.suites.imgcot.task import imgcot

    with pytest.raises(HarnessUsageError, match=re.escape(message)):
        imgcot(**args)


@pytest.mark.long  # a subprocess or a training run: seconds of CPU the default run cannot spare
def test_cli_bad_canvas_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--suite", "imgcot", "-T", "width=20",
         "--log-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert (
        len(lines) == 1 and "too small for the CoT" in lines[0] and "Traceback" not in proc.stderr
    )


@pytest.mark.long  # a subprocess or a training run: seconds of CPU the default run cannot spare
def test_micro_run_end_to_end_with_report(tmp_path):
    from inspect_ai.log import read_eval_log

    from harness.eval import EvalRequest, run  # the CLI is not under test
    from harness.suites.imgcot.results import (
        build_imgcot_report,
        imgcot_tables,
        load_imgcot_runs,
        plot_accuracy_tokens,
    )

    ok, _, records = run(
        EvalRequest(
            suite="imgcot", models=(), log_dir=str(tmp_path / "logs"), display="none",
            task_args={"seeds": 2, "n_train": 128, "n_test": 32, "epochs": 1, "ae_epochs": 1},
        )
    )  # fmt: skip
    assert ok and len(records) == 1
    log = read_eval_log(records[0].path)
    assert len(log.samples or []) == 14 and not any(s.error for s in log.samples or [])
    assert "reconstructed" in str(log.eval.metadata) and "real-LLM" in str(log.eval.metadata)
    report = build_imgcot_report("micro", load_imgcot_runs(records[0].path))
    arms = [a.arm for a in report.arms]
    assert arms == ["no_cot", "explicit_cot", "text_latents", "imgcot", "loose_lowest",
                    "loose_random", "loose_highest"]  # fmt: skip
    tokens = {a.arm: a.tokens for a in report.arms}
    assert tokens["no_cot"] == 0 and tokens["imgcot"] == tokens["text_latents"] == 3
    assert {a.arm: a.budget for a in report.arms}["loose_lowest"] == 8
    assert all(a.seeds == 2 and a.errors == 0 and 0 <= a.accuracy.estimate <= 1
               for a in report.arms)  # fmt: skip
    assert [(p.arm_a, p.arm_b) for p in report.pairs][0] == ("imgcot", "text_latents")
    assert all(not math.isnan(p.p) for p in report.pairs if p.test is not None)
    text = "\n".join(report.checks)
    for check in ("Check 2", "Check 3", "Check 4", "Check 5", "Check 6"):
        assert check in text
    assert "byte-identical encoder inputs: met" in text
    (_, head, rows_), _, (_, _, pair_rows) = imgcot_tables(report)
    assert head[3] == "accuracy" and len(rows_) == 7 and len(pair_rows) == 4
    assert all("not estimable at n = 2" in r[1] for r in pair_rows)
    assert plot_accuracy_tokens(report, tmp_path / "acc.png").endswith(".png")


def example_report():
    """A constructed imgcot report: 3 seeds x 7 arms, one errored run (tests/test_design.py)."""
    from harness.suites.imgcot.results import build_imgcot_report
    from harness.suites.imgcot.runs import ARMS

    base = {"no_cot": 0.45, "explicit_cot": 0.70, "text_latents": 0.35, "imgcot": 0.31,
            "loose_lowest": 0.28, "loose_random": 0.27, "loose_highest": 0.29}  # fmt: skip
    tokens = {"no_cot": 0.0, "explicit_cot": 17.0}
    runs = []
    for seed in range(3):
        for arm in ARMS:
            if (arm, seed) == ("loose_random", 2):
                runs.append({"arm": arm, "seed": seed, "error": "RuntimeError('boom')"})
                continue
            loose = arm.startswith("loose")
            runs.append({"arm": arm, "seed": seed, "score": base[arm] + seed / 100,
                         "tokens": tokens.get(arm, 8.0 if loose else 3.0),
                         "budget": tokens.get(arm, 8.0 if loose else 3.0),
                         "text_recon_acc": 0.97 if arm == "text_latents" else math.nan,
                         "image_bce": math.nan if arm in tokens or arm == "text_latents" else 0.14,
                         "mean_image_bce": 0.25, "kept_positions": [1, 2, 3] if loose else [],
                         "encoder_input_sha": f"sha{seed}", "pillow": "13.0.0"})  # fmt: skip
    return build_imgcot_report("constructed", runs)


def test_constructed_report_counts_the_error_and_reads_the_checks():
    rep = example_report()
    arms = {a.arm: a for a in rep.arms}
    assert arms["loose_random"].errors == 1 and arms["loose_random"].seeds == 3
    # the errored run scores the design's worst accuracy, 0, and is paired as such
    assert dict(arms["loose_random"].per_seed)[2] == 0.0
    pairs = {(p.arm_a, p.arm_b): p for p in rep.pairs}
    d = pairs[("imgcot", "text_latents")].test
    assert d.estimate == pytest.approx(-0.04) and d.p_value == 0.25  # 3 of 3 below: 2/8
    text = "\n".join(rep.checks)
    assert "Check 3, text autoencoder token accuracy ≥ 0.95 on every seed: met" in text
    assert "Check 5, Loose (lowest ℓ) − ImgCoT > 0 in ≥ 3 of 3 seeds: NOT met (0 of 3" in text
    assert "Check 6" in text and "NOT met (outside: text_latents, imgcot" in text
    assert "tokens strictly below explicit CoT's: met (8.00 vs 17.00" in text
