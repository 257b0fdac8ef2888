"""Suite `l2a-recall`: its samples, bad arguments, the report's checks, and end to end (long).

The long test trains the `tiny` preset (T = 64, W = 8, 500 steps; one seed of full, SWA and L2A at
λ′ ∈ {1e-4, 1e-3, 2e-3}) and asserts the spec's acceptance checks 4 and 5 (specs/l2a.md §5, as
amended) on it,
then evaluates `local/l2a-recall` on the `l2a-queries` prompts through the KV caches.
"""

from __future__ import annotations

import numpy as np
import pytest
from inspect_ai.log import read_eval_log

from harness.errors import HarnessUsageError
from harness.stats._compare import pair_family
from harness.suites.catalog import get_suite
from harness.suites.l2a.results import build_l2a_report, l2a_tables, load_l2a_runs, plot_l2a
from harness.suites.l2a.task import arms, l2a_queries, l2a_recall


def test_samples_are_one_per_variant_lambda_and_seed():
    t = l2a_recall(preset="quick", seeds=2)
    ids = [s.id for s in t.dataset]
    assert ids[:4] == ["full-seed0", "full-seed1", "swa-seed0", "swa-seed1"]
    assert "l2a-lam1e-05-seed1" in ids and len(ids) == 2 * (2 + 3)
    assert "reconstructed" in t.metadata and t.metadata["settings"]["seq_len"] == 128
    assert arms("l2a,swa", "0,1e-4") == [("swa", 0.0), ("l2a", 0.0), ("l2a", 1e-4)]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(preset="huge"), "unknown preset"),
        (dict(variants="l2a,dense"), "unknown variant"),
        (dict(lams="1e-5,abc"), "lams must be numbers"),
        (dict(lams="-1e-5"), "lams must be >= 0"),
        (dict(seeds=0), r"seeds takes an integer in \[1, "),
        (dict(steps=0), r"steps takes an integer in \[1, "),
    ],
)
def test_bad_arguments_are_usage_errors(kwargs, match):
    with pytest.raises(HarnessUsageError, match=match):
        l2a_recall(**kwargs)


def _run(variant, lam, seed, acc, routed, query=(1.0, 0.2), ce=0.1):
    return {"variant": variant, "lam": lam, "seed": seed, "accuracy": acc, "routed": routed,
            "query_routed_per_layer": list(query), "ce": ce, "accuracy_pruned": acc,
            "pruned_layers": [1], "kv_saved": 0.375}  # fmt: skip


def test_checks_on_constructed_runs_pass_and_fail_for_the_right_reasons():
    runs = []
    for seed in (0, 1):
        runs += [_run("full", 0.0, seed, 0.99, 1.0, ce=0.01 + seed * 0.01),
                 _run("swa", 0.0, seed, 0.05, 0.0, ce=3.0),
                 _run("l2a", 1e-6, seed, 0.99, 0.20, ce=0.03 + seed * 0.01),
                 _run("l2a", 1e-5, seed, 0.90, 0.10, query=(0.5, 0.4)),
                 _run("l2a", 1e-4, seed, 0.99, 0.15)]  # fmt: skip
    rep = build_l2a_report("t", runs)
    assert [a.name for a in rep.arms] == ["full", "swa", "l2a λ′=1e-06", "l2a λ′=1e-05",
                                          "l2a λ′=0.0001"]  # fmt: skip
    first = rep.arms[2]
    assert first.ce_vs_full.estimate == pytest.approx(0.02) and first.ce_vs_full.n == 2
    # two seeds: a t interval over 2 differences would print; the exact sign-flip interval
    # says there is none at 95%
    assert not first.ce_vs_full.estimable
    ((_, header, rows),) = l2a_tables(rep)
    assert header[7] == "CE − full (sign-flip)" and rows[2][7] == "0.020 (not estimable at n = 2)"
    assert rows[2][8] == "1"  # 2 seeds: the exact sign-flip p of two positive differences is 2/4
    assert rows[0][7] == rows[0][8] == "–"  # full-global against itself: no pair
    assert rows[2][3] == "99.0 [99.0, 99.0]"  # t over two equal accuracies
    lines = "\n".join(rep.checks)
    assert "SWA-only accuracy ≤ 10%: pass" in lines
    assert "full-global accuracy ≥ 95%: pass" in lines
    assert "l2a λ′=1e-06 within 5 points of full-global while routing ≤ 30%: pass" in lines
    assert "l2a λ′=1e-05 within 5 points of full-global while routing ≤ 30%: FAIL" in lines
    assert "l2a λ′=1e-05 query positions routed ≥ 80% in some layer: FAIL" in lines
    assert "monotonically in λ′ (1e-06, 1e-05, 0.0001): FAIL (20.0% → 10.0% → 15.0%)" in lines


def _normal_arms(rng, seeds):
    """full and one L2A arm over `seeds` seeds, with normal accuracy, routing and CE."""
    runs = []
    for seed in range(seeds):
        full_ce = 0.1 + rng.normal(0.0, 0.02)
        runs.append(_run("full", 0.0, seed, 0.97 + rng.normal(0.0, 0.01), 1.0, ce=full_ce))
        acc, routed = 0.9 + rng.normal(0.0, 0.03), 0.2 + rng.normal(0.0, 0.03)
        ce = full_ce + 0.05 + rng.normal(0.0, 0.01)
        runs.append(_run("l2a", 1e-4, seed, acc, routed, ce=ce))
    return runs


def test_intervals_per_arm_at_8_seeds_and_the_paired_ce():
    rep = build_l2a_report("t", _normal_arms(np.random.default_rng(0), 8))
    l2a = rep.arms[1]
    assert l2a.ce_vs_full.estimable and l2a.ce_vs_full.method.endswith("exact sign-flip, 95.3%")
    ((_, _, rows),) = l2a_tables(rep)
    assert rows[1][7].endswith("(95.3%)")


def test_an_errored_run_is_counted_and_left_out_of_the_means():
    runs = _normal_arms(np.random.default_rng(1), 4)
    runs.append({"variant": "l2a", "lam": 1e-4, "seed": 4, "error": "RuntimeError('boom')"})
    rep = build_l2a_report("t", runs)
    full, l2a = rep.arms
    assert (full.seeds, full.errors, l2a.seeds, l2a.errors) == (4, 0, 5, 1)
    done = [r for r in runs if r["variant"] == "l2a" and "error" not in r]
    assert l2a.accuracy.n == 4 and l2a.accuracy.estimate == pytest.approx(
        np.mean([r["accuracy"] for r in done])
    )
    assert l2a.ce_vs_full.n == 4
    ((_, header, rows),) = l2a_tables(rep)
    assert header[2] == "errored" and [r[2] for r in rows] == ["0", "1"]


def test_ce_pairs_are_the_engines():
    runs = _normal_arms(np.random.default_rng(2), 8)
    runs += [{**r, "variant": "swa", "ce": r["ce"] + 1.0} for r in runs if r["variant"] == "full"]
    rep = build_l2a_report("t", runs)
    ce = {}
    for r in runs:
        ce.setdefault((r["variant"], r["lam"]), {})[str(r["seed"])] = r["ce"]
    full = ce[("full", 0.0)]
    want = pair_family(get_suite("l2a-recall").design,
                       [("swa", "full", ce[("swa", 0.0)], full),
                        ("l2a", "full", ce[("l2a", 1e-4)], full)])  # fmt: skip
    got = [(a.ce_vs_full.estimate, a.ce_vs_full.low, a.ce_vs_full.high, a.ce_p_holm)
           for a in rep.arms[1:]]  # fmt: skip
    assert got == [(w.test.estimate, w.test.low, w.test.high, w.p_holm) for w in want]


@pytest.mark.slow
def test_report_intervals_cover_at_2_seeds():
    # l2a-recall runs 2 seeds by default. Through build_l2a_report, 4,000 replications
    # (Monte-Carlo SE 0.0034), normal data: the t intervals of accuracy and routed fraction
    # (clipped to [0, 1], which cannot remove a true value inside it) and of the query CE
    # measured 94.8%, 94.6% and 95.4%; CE − full has no 95% interval at 2 seeds and none is
    # printed. (Skewed shares, Beta(18, 2): the t interval covered 93.6% at n = 2.)
    rng = np.random.default_rng(2)
    reps = 4000
    hits = np.zeros(3)
    for _ in range(reps):
        l2a = build_l2a_report("t", _normal_arms(rng, 2)).arms[1]
        assert not l2a.ce_vs_full.estimable
        hits[0] += l2a.accuracy.low <= 0.9 <= l2a.accuracy.high
        hits[1] += l2a.routed.low <= 0.2 <= l2a.routed.high
        hits[2] += l2a.ce.low <= 0.15 <= l2a.ce.high
    cover = hits / reps
    print(f"L2A 2 seeds, {reps} reps: accuracy, routed, CE = {cover}")
    assert all(0.93 <= c <= 0.97 for c in cover), cover


# long (`make test-long`): 120-140 s on 2 cores, the largest single test of the default run, which
# had reached 13-14 minutes of its 15; the suite's eval path runs in the default run through
# tests/suites/test_ray_executor.py, and its report's checks on constructed runs above
@pytest.mark.long
def test_tiny_preset_end_to_end_checks_4_and_5_and_the_local_model(tmp_path, monkeypatch):
    from harness.eval import EvalRequest, run  # imported here: the CLI is not under test

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    ok, rows, _ = run(
        EvalRequest(
            suite="l2a-recall",
            models=(),
            log_dir=str(tmp_path / "logs"),
            task_args={"preset": "tiny", "seeds": 1, "workers": 2},
            display="none",
        )  # fmt: skip
    )
    assert ok and rows[0].n == 5 and rows[0].errors == 0
    log = read_eval_log(rows[0].log)
    assert "reconstructed" in log.eval.metadata
    section = build_l2a_report("tiny", load_l2a_runs(rows[0].log))
    failed = [c for c in section.checks if "FAIL" in c]
    # at T = 64 and 500 steps λ′ = 1e-4 leaves layer 1 routing most tokens (measured): the one
    # failure allowed, and it must be that one
    assert all(c.startswith("check 5: l2a λ′=0.0001 within 5 points") for c in failed), failed
    assert sum(c.startswith("check 5") for c in section.checks) == 2 + 2 * 3
    assert any(c.startswith("check 4") and c.endswith(")") and ": pass" in c
               for c in section.checks), section.checks  # fmt: skip
    assert plot_l2a(section, tmp_path / "l2a.png").endswith("l2a.png")
    ((caption, _, _),) = l2a_tables(section)
    assert caption.startswith("L2A, tiny: recall accuracy")

    # the λ′ = 1e-3 run's checkpoint, served as a local model through the caches, pruned
    ok, rows, _ = run(
        EvalRequest(
            suite="l2a-queries",
            models=("local/l2a-recall",),
            log_dir=str(tmp_path / "queries"),
            task_args={"preset": "tiny", "n": 16},
            model_args={"preset": "tiny", "lam": 1e-3, "prune": 0.02},
            display="none",
        )  # fmt: skip
    )
    assert ok and rows[0].errors == 0
    assert rows[0].value >= 0.9, rows[0]
    sample = read_eval_log(rows[0].log).samples[0]
    meta = sample.output.metadata["l2a"]
    assert meta["kv_bytes"] < meta["kv_bytes_dense"] or not meta["pruned_layers"]


def test_queries_task_renders_prompts_and_targets():
    t = l2a_queries(preset="tiny", n=3)
    s = t.dataset[0]
    assert len(s.input.split()) == 64 and len(s.target.split()) == 8
    assert all(w.startswith("v") for w in s.target.split())


def test_the_task_names_the_models_variants_in_their_order():
    from harness.models.l2a.model import VARIANTS as MODEL_VARIANTS
    from harness.suites.l2a.task import VARIANTS

    assert VARIANTS == MODEL_VARIANTS
