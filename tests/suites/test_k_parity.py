"""k-parity: data, determinism, the suite end to end, and its report section."""

import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from inspect_ai.log import read_eval_log

from harness.stats._compare import estimate, pair_family
from harness.stats._exact import median_interval, sign_flip_interval
from harness.stats._intervals import wilson
from harness.suites.catalog import get_suite
from harness.suites.k_parity.data import make_parity_data
from harness.suites.k_parity.results import (
    build_parity_report,
    load_runs,
    parity_tables,
    plot_curves,
)
from harness.suites.k_parity.task import PRESETS, arm_config
from harness.suites.k_parity.train import train_run


def test_data_is_seeded_disjoint_and_labelled_by_xor():
    a = make_parity_data(12, 3, 1000, 2000, seed=0)
    b = make_parity_data(12, 3, 1000, 2000, seed=0)
    assert a.secret == b.secret and torch.equal(a.train, b.train)
    assert make_parity_data(12, 3, 1000, 2000, seed=1).secret != a.secret or not torch.equal(
        make_parity_data(12, 3, 1000, 2000, seed=1).train, a.train
    )
    train = {tuple(r) for r in a.train[:, :12].tolist()}
    test = {tuple(r) for r in a.test[:, :12].tolist()}
    assert len(train) == 1000 and len(test) == 2000 and not train & test
    assert torch.equal(a.train[:, 12], a.train[:, list(a.secret)].sum(1) % 2)


def small(**overrides):
    settings = dict(PRESETS["quick"], max_steps=60, eval_every=20)
    settings.update(overrides)
    return settings


def test_runs_are_deterministic_for_a_seed_and_thread_count():
    torch.set_num_threads(1)
    for arm in ("ar", "md-optimal", "md-uniform-inv-t"):
        first = train_run(arm_config(arm, 5, small()))
        again = train_run(arm_config(arm, 5, small()))
        assert (first.steps, first.train_acc, first.test_acc) == (
            again.steps, again.train_acc, again.test_acc,
        )  # fmt: skip
    other = train_run(arm_config("md-optimal", 6, small()))
    assert other.test_acc != first.test_acc or other.secret != first.secret


def test_suite_end_to_end_with_report(tmp_path):
    from harness.eval import EvalRequest, run  # imported here: the CLI is not under test

    ok, rows, _ = run(
        EvalRequest(
            suite="k-parity",
            models=(),
            task_args={"arms": "ar,md-optimal", "seeds": 2, "max_steps": 60},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    assert ok and rows[0].n == 4 and rows[0].errors == 0
    assert rows[0].ci_method == "t, clipped to [0, 1]"
    log = read_eval_log(rows[0].log)
    sample = log.samples[0]
    run = sample.metadata["run"]
    assert len(run["steps"]) == len(run["test_acc"]) == len(run["train_acc"]) >= 1
    assert "steps_to_generalize" in sample.scores["final_test_accuracy"].metadata
    parity = build_parity_report("quick", load_runs(rows[0].log), preset="quick")
    assert [a.arm for a in parity.arms] == ["ar", "md-optimal"]
    assert all(a.seeds == 2 for a in parity.arms) and len(parity.pairs) == 1
    written = plot_curves(parity, tmp_path / "curves")
    assert any(p.endswith(".svg") for p in written) and any(p.endswith(".png") for p in written)
    (_, arm_header, arm_rows), (_, _, pair_rows) = parity_tables(parity)
    assert "median steps to 0.99 (order stats)" in arm_header
    # two seeds: neither the median nor a paired difference has a 95% interval
    assert all(r[4].endswith("(not estimable at n = 2)") for r in arm_rows)
    assert pair_rows[0][2].endswith("(not estimable at n = 2)")
    ar = next(c for c in parity.claims if c.startswith("AR against MD"))
    assert "this log is preset 'quick'" in ar  # the claim, plainly


def test_parallel_workers(tmp_path):
    from harness.eval import EvalRequest, run

    ok, rows, _ = run(
        EvalRequest(
            suite="k-parity",
            models=(),
            task_args={"arms": "ar", "seeds": 2, "max_steps": 20, "workers": 2},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    assert ok and rows[0].n == 2 and rows[0].errors == 0


def test_model_uses_nanogpt_initialisation():
    from harness.models.parity_transformer import ParityModelConfig, ParityTransformer

    torch.manual_seed(0)
    model = ParityTransformer(ParityModelConfig(13, d_model=64, n_layer=2, n_head=4))
    assert abs(model.tok.weight.std().item() - 0.02) < 0.005
    assert abs(model.blocks[0].attn.qkv.weight.std().item() - 0.02) < 0.002
    residual_std = 0.02 / (2 * 2) ** 0.5
    assert abs(model.blocks[1].mlp[2].weight.std().item() - residual_std) < 0.001
    assert abs(model.blocks[0].attn.proj.weight.std().item() - residual_std) < 0.002
    assert model.blocks[0].attn.qkv.bias.abs().max().item() == 0.0


@pytest.mark.parametrize("causal", [False, True])
def test_logits_at_one_position_equal_the_full_forward(causal):
    from harness.models.parity_transformer import ParityModelConfig, ParityTransformer

    torch.manual_seed(0)
    model = ParityTransformer(ParityModelConfig(13, d_model=32, n_layer=3, n_head=4, causal=causal))
    for p in model.parameters():  # away from the initialisation's near-zero outputs
        torch.nn.init.normal_(p, std=0.3)
    idx = torch.randint(0, 3, (64, 13))
    full = model(idx)  # (64, 13, 2)
    for position in (0, 5, 12, -1):
        one = model.logits_at(idx, position)
        assert one.shape == (64, 2)
        torch.testing.assert_close(one, full[:, position], atol=1e-5, rtol=1e-5)
    short = idx[:, :7]  # a causal model's prefix: the label is predicted after the bits
    torch.testing.assert_close(model.logits_at(short, 6), model(short)[:, 6], atol=1e-5, rtol=1e-5)
    with pytest.raises(IndexError, match="outside"):
        model.logits_at(idx, 13)


def _synthetic_runs(hits: dict[str, list[int | None]], budget: int = 1500) -> list[dict]:
    runs = []
    for arm, arm_hits in hits.items():
        for seed, hit in enumerate(arm_hits):
            last = hit or budget
            runs.append({"arm": arm, "seed": seed, "steps_to_generalize": hit,
                         "steps": [50, last], "train_acc": [0.5, 1.0],
                         "test_acc": [0.5, 1.0 if hit else 0.5],
                         "final_test_acc": 1.0 if hit else 0.5})  # fmt: skip
    return runs


def test_report_says_which_way_each_claim_came_out():
    # 10 seeds: AR fastest, the window next, U[0, 1] never; 10 equal signs give p ~ 2/1024,
    # which stays under 0.05 after Holm over the 6 pairs
    runs = _synthetic_runs({
        "ar": [100, 150, 100, 200, 100, 150, 100, 250, 100, 150],
        "md-optimal": [400, 500, 450, 400, 600, 500, 400, 450, 500, 400],
        "md-uniform": [None] * 10,
        "md-uniform-inv-t": [None] * 10,
    })  # fmt: skip
    schedule, inv_t, ar = build_parity_report("quick", runs, preset="quick").claims
    assert "md-optimal − md-uniform" in schedule and "same direction as the paper;" in schedule
    assert "significant in 1 of 1" in schedule
    assert "level in 1 of 2" in inv_t and "same direction as the paper in 1 of 2" in inv_t
    assert "the reverse of the paper's claim" in ar and "preset 'quick'" in ar
    assert "the paper's setting is the 'paper' preset" in ar
    assert "generalised on ar 10/10, md-optimal 10/10, md-uniform 0/10" in ar

    # MD faster than AR, on the paper preset; the window slower than U[0, 1]
    runs = _synthetic_runs({
        "ar": [None, None, 1400],
        "md-optimal": [900, 1000, 800],
        "md-uniform": [300, 500, 400],
    })  # fmt: skip
    schedule, ar = build_parity_report("paper", runs, preset="paper").claims
    assert "reversed; not significant" in schedule  # 3 seeds: no p below 0.25
    assert "+500 (no 95% interval at n = 3) steps, Holm p 0.75" in schedule
    assert "ar − md-optimal +" in ar and "same direction as the paper" in ar
    assert "this log is the paper's setting" in ar


def _normal_runs(rng, seeds: int) -> list[dict]:
    """Two arms on shared seeds: steps normal around 1000 (ar) and 900, accuracy around 0.95."""
    shared = rng.normal(0.0, 100.0, seeds)  # a seed's data make both arms faster or slower
    runs = []
    for arm, mean in (("ar", 1000.0), ("md-optimal", 900.0)):
        steps = mean + shared + rng.normal(0.0, 60.0, seeds)
        acc = 0.95 + rng.normal(0.0, 0.01, seeds)
        runs += [{"arm": arm, "seed": s, "steps_to_generalize": float(steps[s]),
                  "steps": [50, float(steps[s])], "train_acc": [0.5, 1.0],
                  "test_acc": [0.5, float(acc[s])], "final_test_acc": float(acc[s])}
                 for s in range(seeds)]  # fmt: skip
    return runs


def test_report_intervals_are_exact_at_8_seeds_and_absent_at_3():
    rng = np.random.default_rng(0)
    runs = _normal_runs(rng, 8)
    rep = build_parity_report("t", runs)
    ar = [r["steps_to_generalize"] for r in runs if r["arm"] == "ar"]
    md = [r["steps_to_generalize"] for r in runs if r["arm"] == "md-optimal"]
    assert rep.arms[0].median == median_interval(ar)
    assert (rep.arms[0].median_low, rep.arms[0].median_high) == (min(ar), max(ar))
    steps = rep.pairs[0].steps
    flip = sign_flip_interval(np.array(ar) - np.array(md))
    assert (steps.low, steps.high, steps.confidence) == (flip.low, flip.high, 1 - 12 / 256)
    (_, header, arm_rows), (caption, _, pair_rows) = parity_tables(rep)
    assert arm_rows[0][4].endswith("(order statistics, 99.2%, conservative)")
    assert pair_rows[0][4].endswith("(95.3%)") and "exact sign-flip" in caption
    assert header[-1] == "final test accuracy (t)"
    # 3 seeds: the old percentile bootstrap printed [min, max] here (about 75% coverage)
    rep3 = build_parity_report("t", _normal_runs(rng, 3))
    assert math.isnan(rep3.arms[0].median_low) and math.isnan(rep3.pairs[0].steps.low)
    (_, _, arm_rows), (_, _, pair_rows) = parity_tables(rep3)
    assert arm_rows[0][4].endswith("(not estimable at n = 3)")
    assert pair_rows[0][2].endswith("(not estimable at n = 3)")
    assert pair_rows[0][4].endswith("(not estimable at n = 3)")
    assert float(pair_rows[0][5]) >= 0.25  # 3 seeds: no sign-flip p below 2/8


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [3, 8])
def test_report_intervals_cover_at_3_and_8_seeds(seeds):
    # The intervals the section prints, through build_parity_report, 4,000 replications
    # (Monte-Carlo SE 0.0034), normal data (tests/stats/test_coverage_few_seeds.py has skewed).
    # 8 seeds: steps a - b (sign-flip, exactly 95.3%) measured 95.6%; final accuracy a - b
    # 94.9%; median (order statistics, 99.2%, labelled conservative) 98.9%; final accuracy (t,
    # clipped) 94.8%. 3 seeds: no median or difference interval is printed; t 94.8%.
    rng = np.random.default_rng(seeds)
    hits = np.zeros(4)
    reps = 4000
    for _ in range(reps):
        rep = build_parity_report("t", _normal_runs(rng, seeds))
        arm, pair = rep.arms[0], rep.pairs[0]
        hits[0] += arm.final_acc.low <= 0.95 <= arm.final_acc.high
        if seeds < 6:
            assert not arm.median.estimable and math.isnan(pair.steps.low)
            assert math.isnan(pair.acc.low)
            continue
        hits[1] += arm.median_low <= 1000.0 <= arm.median_high
        hits[2] += pair.steps.low <= 100.0 <= pair.steps.high
        hits[3] += pair.acc.low <= 0.0 <= pair.acc.high
    cover = hits / reps
    print(f"k-parity {seeds} seeds, {reps} reps: t, median, steps, acc = {cover}")
    assert 0.93 <= cover[0] <= 0.97, cover
    if seeds >= 6:
        assert "conservative" in rep.arms[0].median.method and cover[1] >= 0.95, cover
        assert 0.93 <= cover[2] <= 0.97 and 0.93 <= cover[3] <= 0.97, cover


def test_an_errored_seed_counts_as_not_generalised():
    runs = _synthetic_runs({"ar": [100, 150, 120], "md-optimal": [400, 500, None]})
    runs.append({"arm": "ar", "seed": 3, "error": "RuntimeError('CUDA out of memory')"})
    runs.append({"arm": "md-optimal", "seed": 3, "steps_to_generalize": 450,
                 "steps": [50, 450], "train_acc": [0.5, 1.0], "test_acc": [0.5, 1.0],
                 "final_test_acc": 1.0})  # fmt: skip
    rep = build_parity_report("t", runs)
    ar, md = rep.arms
    assert (ar.seeds, ar.errors, md.errors) == (4, 1, 0)
    assert ar.generalized == wilson(3, 4)  # the errored seed did not generalise
    assert ar.median == median_interval([100, 150, 120, math.inf])
    assert ar.final_acc.n == 3  # a continuous score leaves it out, and the table counts it
    (pair,) = rep.pairs
    assert pair.acc.n == 3 and pair.steps.n == 4  # steps: the errored seed is the budget
    assert pair.steps.estimate == pytest.approx(
        np.mean([100 - 400, 150 - 500, 120 - 1500, 1500 - 450])
    )
    (_, head, rows), _ = parity_tables(rep)
    assert head[2] == "errored" and rows[0][2] == "1" and rows[1][2] == "0"
    plot_curves(rep, Path(os.getcwd()) / "curves")  # the errored run has no curve to draw


def test_pairs_are_the_engines():
    rng = np.random.default_rng(3)
    runs = _normal_runs(rng, 8)
    runs += [{**r, "arm": "md-fixed", "final_test_acc": r["final_test_acc"] - 0.01}
             for r in runs if r["arm"] == "ar"]  # fmt: skip
    rep = build_parity_report("t", runs)
    design = get_suite("k-parity").design
    arms = sorted({r["arm"] for r in runs})
    names = [(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :]]
    acc = {a: {str(r["seed"]): r["final_test_acc"] for r in runs if r["arm"] == a} for a in arms}
    steps = {a: {str(r["seed"]): r["steps_to_generalize"] for r in runs if r["arm"] == a}
             for a in arms}  # fmt: skip
    want_acc = pair_family(design, [(a, b, acc[a], acc[b]) for a, b in names])
    unbounded = dataclasses.replace(design, score="unbounded")
    want_steps = pair_family(unbounded, [(a, b, steps[a], steps[b]) for a, b in names])
    got = [(p.arm_a, p.arm_b, p.acc, p.p_holm_acc, p.steps, p.p_holm_steps) for p in rep.pairs]
    assert got == [(a.arm_a, a.arm_b, a.test, a.p_holm, s.test, s.p_holm)
                   for a, s in zip(want_acc, want_steps, strict=True)]  # fmt: skip
    assert len(got) == 3 and rep.arms[0].final_acc == estimate(design, acc["ar"].values())
