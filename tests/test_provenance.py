"""provenance: the library parts against brute force and the spec's derived numbers.

Reference numbers are those of specs/provenance.md §3 (derived there with exact binomial sums);
brute force is written out here independently of the modules under test.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from harness.suites.provenance.adfp import (
    ads_shift,
    ads_shift_exact,
    one_step_formula,
    one_step_gain,
)
from harness.suites.provenance.detect import (
    binomial_p,
    critical_count,
    detect,
    green_sequences,
    scored_positions,
)
from harness.suites.provenance.detection_runs import low_diversity_fpr
from harness.suites.provenance.generate import _dedup_green, generate
from harness.suites.provenance.greenlist import GreenList, parse_key, uniform
from harness.suites.provenance.lm import LMConfig, TinyLM
from harness.suites.provenance.power import (
    exact_power,
    green_probability,
    kgw_bound,
    kl,
    kl_of,
    poisson_binomial_sf,
    tokens_needed,
    uniform_model,
)
from harness.suites.provenance.radioactivity import (
    StudentReadings,
    fingerprint_test,
    open_means,
)
from harness.suites.provenance.results import interpolate
from harness.suites.provenance.selection import (
    CalibrationPositions,
    UniformPositions,
    select,
)
from harness.suites.provenance.source import SPECIAL, MarkovTeacher, make_source
from harness.suites.provenance.watermark import ADFPProcessor, KGWProcessor

EPS64 = np.finfo(np.float64).eps


def test_hash_green_rate_is_gamma_within_three_standard_errors():
    rng = np.random.default_rng(0)
    n = 1_000_000
    keys = rng.integers(0, 2**63, n, dtype=np.int64)
    ctx = rng.integers(-1, 256, (n, 2))
    tok = rng.integers(0, 256, n)
    for gamma in (0.25, 0.5):
        rate = (uniform(keys, ctx, tok) < gamma).mean()
        assert abs(rate - gamma) <= 3 * math.sqrt(gamma * (1 - gamma) / n)
    # neighbouring tokens of one context are uncorrelated
    a = uniform(keys, ctx, tok) < 0.5
    b = uniform(keys, ctx, tok + 1) < 0.5
    assert abs(np.corrcoef(a, b)[0, 1]) < 3 / math.sqrt(n)


def test_mask_and_is_green_agree_and_special_tokens_are_red():
    rule = GreenList(0.5, 64, 2, special=(0, 63))
    keys = np.array([1, 2**64 - 1, 12345], dtype=np.uint64)
    ctx = np.array([[-1, 5], [3, 4], [7, 7]])
    mask = rule.mask(keys, ctx)
    assert not mask[:, [0, 63]].any()
    for v in range(64):
        assert (rule.is_green(keys, ctx, np.full(3, v)) == mask[:, v]).all()
    perm = GreenList(0.25, 64, 1, scheme="kgw_perm")
    assert perm.mask(np.array([7]), np.array([[3]])).sum() == 16


def test_key_parsing():
    assert parse_key("42") == 42 and parse_key("0x2A") == 42 and parse_key(str(2**64 - 1))
    for bad in ("-1", "abc", str(2**64), "1.5", ""):
        with pytest.raises(ValueError):
            parse_key(bad)


def test_pi_and_kl_match_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(200):
        v = int(rng.integers(2, 64))
        p = rng.dirichlet(np.full(v, 0.3))
        m = rng.random(v) < 0.4
        delta = float(rng.uniform(0.1, 6))
        w = p * np.exp(delta * m)
        p_wm = w / w.sum()
        g = float(p @ m)
        # the spec's 1e-12: sums of at most 64 terms of size <= 1 + delta (< 7) round to about
        # 64 * 7 * eps = 1e-13, so 1e-12 leaves a factor of 10 and still fails a wrong formula
        tol = 1e-12
        assert abs(float(green_probability(g, delta)) - float(p_wm @ m)) <= tol
        assert abs(float(kl(g, delta)) - float(kl_of(p, p_wm))) <= tol


def test_exact_p_is_the_binomial_sum():
    for n in (1, 7, 50, 60):
        for gamma in (0.25, 0.5):
            g = Fraction(gamma)
            for s in range(0, n + 1):
                exact = sum(math.comb(n, k) * g**k * (1 - g) ** (n - k) for k in range(s, n + 1))
                # betainc's continued fraction is accurate to ~1e-14 relative; 1e-10 allows for
                # the tails' cancellation and still catches an off-by-one in s
                assert binomial_p(s, n, gamma) == pytest.approx(float(exact), rel=1e-10, abs=1e-300)


def test_critical_counts_and_z_test_sizes_match_the_spec():
    # spec §3: c_alpha at alpha = 1e-3, n = 50/100/200
    assert [critical_count(n, 0.25, 1e-3) for n in (50, 100, 200)] == [24, 40, 71]
    assert [critical_count(n, 0.5, 1e-3) for n in (50, 100, 200)] == [37, 66, 123]
    assert binomial_p(24, 50, 0.25) == pytest.approx(3.7e-4, rel=0.02)
    # the z-test at n = 50, gamma = 0.25 rejects from s = 22: its true size is 2.6e-3
    z = (22 - 0.25 * 50) / math.sqrt(50 * 0.25 * 0.75)
    assert z >= 3.0902 and (21 - 12.5) / math.sqrt(9.375) < 3.0902
    assert binomial_p(22, 50, 0.25) == pytest.approx(2.6e-3, rel=0.05)


@pytest.mark.parametrize(
    "gamma,delta,rate,bound,kl_nats,powers,n_normal,n_exact",
    [
        (0.25, 1, 0.3366, 0.3277, 0.0416, (0.025, 0.109, 0.315), 503, 521),
        (0.25, 2, 0.3928, 0.3700, 0.1229, (0.132, 0.479, 0.879), 189, 203),
        (0.25, 4, 0.4308, 0.3957, 0.2261, (0.286, 0.764, 0.988), 119, 127),
        (0.5, 1, 0.6155, 0.5938, 0.0555, (0.045, 0.209, 0.537), 352, 353),
        (0.5, 2, 0.6904, 0.6379, 0.1639, (0.277, 0.780, 0.990), 126, 128),
        (0.5, 4, 0.7410, 0.6626, 0.3015, (0.580, 0.973, 1.000), 76, 79),
    ],
)
def test_power_table_of_the_spec(gamma, delta, rate, bound, kl_nats, powers, n_normal, n_exact):
    model = uniform_model(2, gamma, delta)
    assert model.green_rate == pytest.approx(rate, abs=5e-5)
    assert model.bound == pytest.approx(bound, abs=5e-5)
    assert model.kl == pytest.approx(kl_nats, abs=5e-5)
    for n, want in zip((50, 100, 200), powers, strict=True):
        assert exact_power(model.green_rate, n, gamma, 1e-3) == pytest.approx(want, abs=5e-4)
    assert round(tokens_needed(model.green_rate, gamma, 1e-3, 0.9)) == n_normal
    first = next(n for n in range(1, 2000) if exact_power(model.green_rate, n, gamma, 1e-3) >= 0.9)
    assert first == n_exact


def test_selection_table_of_the_spec():
    grid = (0.25, 0.5, 0.75)
    pick = select([(g, UniformPositions(2, g, 200, 1e-3)) for g in grid], 0.9)
    assert [round(r.delta, 3) for r in pick.rows] == [2.103, 1.459, 1.572]
    assert [round(r.kl, 4) for r in pick.rows] == [0.1309, 0.1045, 0.0878]
    assert pick.chosen is not None and pick.chosen.gamma == 0.75
    short = select([(g, UniformPositions(2, g, 100, 1e-3)) for g in grid], 0.9)
    assert not short.rows[0].feasible and short.rows[0].power <= 0.81
    assert short.chosen is not None and round(short.chosen.delta, 3) == 3.042


def test_poisson_binomial_tail_matches_enumeration():
    rng = np.random.default_rng(2)
    p = rng.random((3, 10))
    for row in range(3):
        for c in (0, 3, 7, 11):
            brute = 0.0
            for bits in itertools.product((0, 1), repeat=10):
                if sum(bits) >= c:
                    brute += math.prod(p[row, i] if b else 1 - p[row, i]
                                       for i, b in enumerate(bits))  # fmt: skip
            got = poisson_binomial_sf(p[row : row + 1], c)[0]
            assert got == pytest.approx(brute, abs=1024 * 10 * EPS64)


def test_kgw_bound_holds_in_expectation_over_bernoulli_masks():
    rng = np.random.default_rng(3)
    v = 8
    masks = np.array(list(itertools.product((0, 1), repeat=v)), dtype=float)  # (256, 8)
    for _ in range(40):
        p = rng.dirichlet(np.full(v, 0.5))
        gamma, delta = float(rng.choice([0.25, 0.5])), float(rng.uniform(0.5, 4))
        weights = gamma ** masks.sum(1) * (1 - gamma) ** (v - masks.sum(1))
        expected = float(weights @ green_probability(masks @ p, delta))
        assert expected >= float(kgw_bound(p, gamma, delta)) - 1e-12


def test_dedup_scores_each_tuple_once_like_a_set():
    rng = np.random.default_rng(4)
    for _ in range(50):
        tokens = rng.integers(0, 4, int(rng.integers(0, 40)))
        seen, brute = set(), []
        for t in range(2, tokens.size):
            tup = tuple(tokens[t - 2 : t + 1])
            if tup not in seen:
                seen.add(tup)
                brute.append(t)
        assert scored_positions(tokens, 2).tolist() == brute
    rule = GreenList(0.5, 16, 2)
    texts = rng.integers(0, 16, (5, 30))
    keys = np.arange(5, dtype=np.uint64)
    batch = green_sequences(texts, keys, rule)
    for i in range(5):
        single = detect(texts[i], i, rule)
        assert single.scored == batch[i].size and single.green == int(batch[i].sum())


def test_false_positive_rate_over_1000_keys_needs_dedup():
    """Low-diversity text, a fresh key per text: exact p with dedup keeps the rate; without
    dedup repeated tuples overdisperse the count and the same cap fails (the flag shows it)."""
    result = low_diversity_fpr(keys=1000, successors=2, length=202, gamma=0.25, seed=0)
    cap = 21  # at most 21 of 1,000 at alpha = 0.01 (exceeded with probability < 1e-3)
    assert result["dedup"]["hits"]["0.01"] <= cap
    assert result["no_dedup"]["hits"]["0.01"] > cap
    assert result["dedup"]["mean_scored"] < result["no_dedup"]["mean_scored"] == 200


def test_generation_records_match_the_closed_forms():
    source = make_source(0)
    teacher = MarkovTeacher(source)
    rule = GreenList(0.25, 256, 2, special=SPECIAL)
    keys = np.arange(40, dtype=np.uint64)
    prompts = source.sample(40, 3, np.random.default_rng(5))
    gen = generate(teacher, prompts, 30, rule, keys, KGWProcessor(rule, keys, 2.0), seed=1)
    np.testing.assert_allclose(gen.green_prob, green_probability(gen.green_mass, 2.0), atol=1e-12)
    np.testing.assert_allclose(gen.kl, kl(gen.green_mass, 2.0), atol=1e-12)
    assert (gen.green_prob_dedup <= 1).all() and gen.tokens.shape == (40, 33)
    again = generate(teacher, prompts, 30, rule, keys, KGWProcessor(rule, keys, 2.0), seed=1)
    assert (again.tokens == gen.tokens).all()


def test_dedup_correction_is_the_conditional_green_probability():
    rng = np.random.default_rng(6)
    p_wm = rng.dirichlet(np.ones(6), size=2)
    mask = rng.random((2, 6)) < 0.5
    seen = [{(1, 2): [0, 3]}, {}]
    got = _dedup_green(p_wm, mask, [(1, 2), (1, 2)], seen, True)
    rest = np.ones(6, dtype=bool)
    rest[[0, 3]] = False
    want0 = (p_wm[0] * mask[0])[rest].sum() / p_wm[0][rest].sum()
    assert got[0] == pytest.approx(want0, abs=1e-12)
    assert got[1] == pytest.approx((p_wm[1] * mask[1]).sum(), abs=1e-12)


def test_calibration_dedup_rate_matches_brute_force():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(5))
    m = np.array([1, 0, 1, 0, 1], dtype=bool)
    delta, seen = 1.3, [0, 1]
    w = p * np.exp(delta * m)
    rest = np.ones(5, dtype=bool)
    rest[seen] = False
    brute = (w * m)[rest].sum() / w[rest].sum()
    model = CalibrationPositions(
        np.array([[[p @ m]]]), 0.5, 1e-3,
        seen_mass=np.array([[p[seen].sum()]]), seen_green=np.array([[[(p * m)[seen].sum()]]]),
    )  # fmt: skip
    assert model.rates(delta)[0, 0] == pytest.approx(brute, abs=1e-12)


def test_adfp_one_step_identity_and_ads_finite_difference():
    rng = np.random.default_rng(8)
    z = rng.normal(size=32)
    m = (rng.random(32) < 0.5).astype(float)
    for x in (0, 5, 17):
        eta = 1e-4
        measured, formula = one_step_gain(z, x, m, eta), one_step_formula(z, x, m, eta)
        assert measured == pytest.approx(formula, rel=1e-3)
    torch.manual_seed(0)
    model = TinyLM(LMConfig("transformer", vocab=16, d_model=16, n_layer=1, n_head=2,
                            max_len=16)).double()  # fmt: skip
    direction = {k: torch.randn_like(v) for k, v in model.named_parameters()}
    ids = torch.randint(0, 16, (3, 5))
    fd = ads_shift(model, direction, ids, lam=2.0, eps=1e-4)
    exact = ads_shift_exact(model, direction, ids, lam=2.0)
    assert float((fd - exact).norm() / exact.norm()) < 1e-3


def test_processors_have_the_hf_signature_and_the_documented_shifts():
    rule = GreenList(0.5, 10, 2)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    scores = torch.randn(2, 10, dtype=torch.float64)
    out = KGWProcessor(rule, 9, 1.5)(ids, scores)
    mask = rule.mask(np.array([9, 9], dtype=np.uint64), np.array([[2, 3], [5, 6]]))
    torch.testing.assert_close(out - scores, torch.from_numpy(1.5 * mask.astype(float)))
    proxy_logits = torch.randn(2, 10, dtype=torch.float64)
    proc = ADFPProcessor(rule, 9, 4.0, lambda _: proxy_logits, eos=7)
    q = torch.softmax(proxy_logits, -1)
    mt = torch.from_numpy(mask.astype(float))
    want = 4.0 * q * (mt - (q * mt).sum(-1, keepdim=True))
    scores[1, 7] = 100.0  # row 1's argmax is EOS: no perturbation
    got = proc(ids, scores) - scores
    torch.testing.assert_close(got[0], want[0])
    assert float(got[1].abs().max()) == 0.0


def test_kv_cache_decoding_equals_the_full_forward():
    for arch in ("transformer", "gru"):
        torch.manual_seed(1)
        model = TinyLM(LMConfig(arch, vocab=20, d_model=16, n_layer=2, n_head=2, max_len=32))
        model.eval()
        ids = torch.randint(0, 20, (3, 12))
        full = model(ids)
        logits, state = model.start(ids[:, :4])
        steps = [logits]
        for t in range(4, 12):
            logits, state = model.step(state, ids[:, t])
            steps.append(logits)
        inc = torch.stack(steps[:-1], 1)  # predictions after positions 3..10
        # float32, a few layers of reductions over d = 16: 1e-5 is ~100 eps
        torch.testing.assert_close(inc, full[:, 3:11], atol=1e-5, rtol=1e-5)


def test_open_mode_is_valid_under_h0_and_detects_a_green_tilt():
    rng = np.random.default_rng(9)
    rule = GreenList(0.5, 32, 2)
    ctx = rng.integers(0, 32, (600, 2))
    ctx = np.unique(ctx, axis=0)
    probs = rng.dirichlet(np.ones(32), size=ctx.shape[0])
    readings = StudentReadings(ctx, probs, ctx, probs.argmax(1))
    keys = rng.integers(0, 2**63, 1000, dtype=np.int64).astype(np.uint64)
    means = open_means(readings, keys, rule)
    n = ctx.shape[0]
    p = np.exp(-2 * n * np.clip(means - 0.5, 0, None) ** 2)
    assert (p <= 0.01).sum() <= 21  # Hoeffding is conservative: the cap at 0.01 holds
    assert fingerprint_test(readings, int(keys[0]), rule).mean == pytest.approx(means[0])
    key = 77
    mask = rule.mask(np.full(ctx.shape[0], key, dtype=np.uint64), ctx)
    tilted = probs * np.exp(1.0 * mask)
    tilted /= tilted.sum(1, keepdims=True)
    student = StudentReadings(ctx, tilted, ctx, tilted.argmax(1))
    for mode in ("open", "closed", "reading"):
        assert fingerprint_test(student, key, rule, mode).p_value < 1e-3


def test_matched_kl_interpolates_in_log_strength():
    pts = [(1.0, 0.01, 1.0), (4.0, 0.09, 3.0)]
    # KL 0.05 is halfway in KL: log strength halfway (strength 2), metric halfway
    assert interpolate(pts, 0.05) == pytest.approx(2.0)
    assert math.isnan(interpolate(pts, 0.2))


def test_the_trained_teacher_path_of_the_full_preset(tmp_path, monkeypatch):
    """A (tiny) transformer teacher trained on the source, cached, then decoding with its cache."""
    from harness.suites.provenance.detection_runs import power_cell
    from harness.suites.provenance.presets import DETECT

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    spec = {"lm": {"arch": "transformer", "vocab": 256, "d_model": 16, "n_layer": 1,
                   "n_head": 2, "max_len": 64},
            "seed": 0, "texts": 64, "length": 32, "epochs": 1, "lr": 3e-3,
            "batch_size": 32}  # fmt: skip
    settings = {**DETECT["full"], "teacher_spec": spec, "texts": 8, "length": 40,
                "ns": [10, 20]}  # fmt: skip
    result = power_cell(settings, 0.5, 2.0)
    assert len(list((tmp_path / "provenance-models").glob("*.pt"))) == 1  # trained, cached
    assert result["kl"] > 0 and [c["n"] for c in result["cells"]] == [10, 20]
    assert all(0 <= c["predicted"] <= 1 for c in result["cells"])
