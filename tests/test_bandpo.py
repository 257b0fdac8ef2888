"""Suite bandpo: arms, the bandit and toy RLVR runs (tiny), metrics, the report and its claims."""

import math

import pytest
import torch

from harness.errors import HarnessUsageError
from harness.models.methods.band_clip import band_rule, dcpo_rule, fixed_rule
from harness.stats._pass_at_k import pass_at_k
from harness.suites.bandpo.arms import ALL_ARMS, parse_arms, rule_of
from harness.suites.bandpo.bandit import BanditConfig, train_bandit
from harness.suites.bandpo.log_numbers import BandReport
from harness.suites.bandpo.metrics import best_k, pass_k
from harness.suites.bandpo.results import build_report
from harness.suites.bandpo.rlvr import RLVRConfig, correct, noisy_batch, train_rlvr
from harness.suites.bandpo.section import tables


def test_arms_name_the_rules_and_bad_names_are_one_line():
    assert len(ALL_ARMS) == 13
    assert rule_of("clip") == fixed_rule(0.2, 0.2)
    assert rule_of("clip-higher") == fixed_rule(0.2, 0.28)
    assert rule_of("dcpo-dac") == dcpo_rule()
    assert rule_of("bandkl") == rule_of("bandkl-0.05") == band_rule("kl", 0.05)
    assert rule_of("bandchi2-0.1") == band_rule("chi2", 0.1)
    assert rule_of("bandkl-relax").relax
    assert parse_arms("bandtv-0.02, clip,bandtv-0.02") == ("clip", "bandtv-0.02")
    for bad in ("bandkl-x", "bandhell", "bandkl--1", "ppo", " , "):
        with pytest.raises(HarnessUsageError):
            parse_arms(bad)


def test_bandit_run_is_seeded_and_measures_what_it_says():
    torch.set_num_threads(1)
    cfg = BanditConfig("bandkl-0.05", 3, iterations=15)
    a, b = train_bandit(cfg), train_bandit(cfg)
    assert a.p_best == b.p_best and a.clip_fractions == b.clip_fractions
    assert len(a.p_best) == 15 and all(0 <= f <= 1 for f in a.clip_fractions)
    assert a.clip_fraction == pytest.approx(sum(a.clip_fractions) / 15)
    hit = a.iterations_to_target
    assert hit is None or (a.p_best[hit - 1] > 0.5 and max(a.p_best[: hit - 1]) <= 0.5)
    other = train_bandit(BanditConfig("clip", 3, iterations=15))
    assert other.p_best != a.p_best


def test_rlvr_verifier_and_noisy_start_data():
    prompts = torch.tensor([0, 3, 6])
    tokens = torch.tensor([[7, 0], [1, 2], [15, 4]])
    assert correct(prompts, tokens, 7).tolist() == [True, True, False]
    cfg = RLVRConfig("clip", 0, sft_fix=1.0)
    p, t = noisy_batch(cfg, 500, torch.Generator().manual_seed(0))
    assert bool(correct(p, t, cfg.modulus).all())  # every sequence fixed: every one correct
    cfg = RLVRConfig("clip", 0, sft_fix=0.0)
    p, t = noisy_batch(cfg, 4000, torch.Generator().manual_seed(0))
    assert 0.10 < float(correct(p, t, cfg.modulus).float().mean()) < 0.19  # about 1/7


def test_rlvr_run_is_seeded_and_counts_every_token_update():
    torch.set_num_threads(1)
    cfg = RLVRConfig("bandkl-0.05", 1, sft_steps=10, sft_batch=64, iterations=3, prompts=4,
                     group=4, updates=2, eval_every=2, eval_samples=8)  # fmt: skip
    a, b = train_rlvr(cfg), train_rlvr(cfg)
    assert (a.entropy, a.eval_mean, a.bin_clipped) == (b.entropy, b.eval_mean, b.bin_clipped)
    assert sum(a.bin_tokens) == cfg.iterations * cfg.prompts * cfg.group * cfg.length
    assert a.eval_iterations == [0, 2, 3] and len(a.entropy) == 3
    assert len(a.final_correct) == cfg.modulus and all(0 <= c <= 8 for c in a.final_correct)
    assert a.final_mean == pytest.approx(sum(a.final_correct) / (cfg.modulus * 8))
    assert 0 < a.start_entropy <= math.log(cfg.vocab)


def test_pass_and_best_at_k():
    run = {"eval_samples": 8, "final_correct": [0, 2, 8]}
    assert pass_k(run, 4) == pytest.approx((0 + pass_at_k(8, 2, 4) + 1) / 3)
    assert best_k(run, 8) == pytest.approx((0 + 1 - 0.75**8 + 1) / 3)


def _bandit_runs(iterations: dict[str, list[int | None]]) -> list[dict]:
    runs = []
    for arm, hits in iterations.items():
        for seed, hit in enumerate(hits):
            curve = [0.9] * 200
            runs.append({"experiment": "bandit", "arm": arm, "seed": seed, "settings": {"lr": 1.0},
                         "iterations_to_target": hit, "final_p_best": 0.9 if hit else 0.01,
                         "clip_fraction": 0.02 if arm == "clip" else 0.003 + seed / 1e4,
                         "p_best": curve, "clip_fractions": [0.0] * 200})  # fmt: skip
    return runs


def bandit_report() -> BandReport:
    """A bandit report over six seeds, one BandKL seed never reaching 0.5, one clip run errored
    (also tests/test_design.py's constructed input for the section)."""
    runs = _bandit_runs({"clip": [16, 17, 15, 18, 16, 17], "bandkl-0.05": [8, 9, 7, None, 8, 9]})
    runs.append({"experiment": "bandit", "arm": "clip", "seed": 6, "error": "killed"})
    return build_report("demo", runs)


def test_bandit_report_pairs_against_clip_and_says_which_way():
    report = bandit_report()
    assert [a.arm for a in report.arms] == ["clip", "bandkl-0.05"]
    assert report.arms[0].errors == 1 and report.arms[0].seeds == 7
    assert report.arms[1].reached.estimate == pytest.approx(5 / 6)
    its = report.comparisons[0]
    assert its.arm("bandkl-0.05").interval.estimate == pytest.approx((8 + 9 + 7 + 200 + 8 + 9) / 6)
    (pair,) = its.pairs
    assert pair.arm_a == "bandkl-0.05" and pair.shared == 6
    text = " ".join(report.claims)
    # one never-reached seed at the budget makes the mean 40.2 > 0.7 x 16.5: the check fails
    assert "≤ 0.7× clip's: NOT met" in text and "never reached it: 1 vs 0" in text
    assert "clips less than clip: met" in text
    flat = [c for t in tables(report) for r in t[2] for c in r]
    assert any("not estimable" not in c and "[" in c for c in flat)


def test_bandit_check_reads_met_when_the_band_is_fast_on_every_seed():
    runs = _bandit_runs({"clip": [16, 17, 15, 18, 16, 17], "bandkl-0.05": [8, 9, 7, 10, 8, 9]})
    text = " ".join(build_report("demo", runs).claims)
    assert "≤ 0.7× clip's: met" in text and "same direction as the paper" in text


def test_rlvr_report_has_every_metric_and_the_claims():
    runs = []
    for arm, final, ent in (("clip", 0.4, 0.3), ("bandkl-0.05", 0.6, 0.9),
                            ("bandkl-relax", 0.5, 0.5)):  # fmt: skip
        for seed in range(3):
            runs.append({"experiment": "rlvr", "arm": arm, "seed": seed, "settings": {},
                         "start_mean": 0.12, "final_mean": final + seed / 100,
                         "final_correct": [round(32 * final)] * 7, "eval_samples": 32,
                         "final_entropy": ent, "entropy": [2.0, ent], "clip_fraction": 0.01,
                         "bin_clipped": [5 if arm == "clip" else 1, 0, 0, 0, 0],
                         "bin_tokens": [100, 0, 10, 10, 10], "eval_iterations": [0, 1],
                         "eval_mean": [0.12, final]})  # fmt: skip
    report = build_report("demo", runs)
    labels = [m.label for m in report.metrics]
    assert labels[:3] == ["mean@32", "pass@4 (unbiased)", "pass@16 (unbiased)"]
    bin1 = dict(zip([m.key for m in report.metrics], report.comparisons, strict=True))["bin1"]
    assert bin1.arm("clip").n == 0  # no token in that bin: no value, not a zero
    text = "\n".join(report.claims)
    assert "mean@32 (paper: BandPO beats GRPO (clip) on mean@k): bandkl-0.05 − clip +0.2" in text
    assert "(no 95% interval at n = 3)" in text and "same direction as the paper" in text
    assert "relaxing the band hurts): bandkl-relax − bandkl-0.05 -0.1" in text
    assert "Start success rate (spec §5.3: 10-30%): 0.120 to 0.120 over 9 runs, 9 inside" in text


def test_every_preset_makes_valid_run_configurations():
    from harness.suites.bandpo.task import ARMS, BANDIT, PRESETS, RLVR

    for preset in PRESETS:
        for arm in parse_arms(ARMS[preset]):
            BanditConfig(arm, 0, **BANDIT[preset])
            RLVRConfig(arm, 0, **RLVR[preset])


def test_task_arguments_are_checked_before_anything_runs():
    from harness.suites.bandpo.task import bandpo_bandit, bandpo_rlvr

    with pytest.raises(HarnessUsageError, match="preset"):
        bandpo_bandit(preset="huge")
    with pytest.raises(HarnessUsageError, match="seeds"):
        bandpo_rlvr(seeds=0)
    with pytest.raises(HarnessUsageError, match="lr"):
        bandpo_bandit(lr=-1)
    with pytest.raises(HarnessUsageError, match="unknown arm"):
        bandpo_rlvr(arms="clip,bandfoo")
    task = bandpo_bandit(arms="bandkl,clip", seeds=2)
    assert [s.id for s in task.dataset] == ["clip-seed0", "clip-seed1", "bandkl-seed0",
                                            "bandkl-seed1"]  # fmt: skip
    assert "reconstructed" in task.metadata["reconstructed"]
