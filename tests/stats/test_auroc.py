import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.stats._auroc import auroc, delong, delong_paired


def _brute_psi(x: float, y: float) -> float:
    """Mann-Whitney kernel: 1 if the positive outranks the negative, 1/2 on a tie."""
    return 1.0 if x > y else 0.5 if x == y else 0.0


def _brute_auroc(scores, labels) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    return sum(_brute_psi(x, y) for x in pos for y in neg) / (len(pos) * len(neg))


def _brute_placements(scores, labels):
    """DeLong (1988) structural components by the pairwise loop, no ranks."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    v10 = np.array([np.mean([_brute_psi(x, y) for y in neg]) for x in pos])
    v01 = np.array([np.mean([_brute_psi(x, y) for x in pos]) for y in neg])
    return v10, v01


def _tied_data(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    scores = np.round(rng.normal(labels * 0.8, 1.0), 0)  # few distinct values: many ties
    return scores, labels


@pytest.mark.parametrize("seed", range(5))
def test_auroc_equals_pairwise_mann_whitney_with_ties(seed):
    scores, labels = _tied_data(seed)
    assert len(np.unique(scores)) < len(scores) // 3
    assert auroc(scores, labels) == pytest.approx(_brute_auroc(scores, labels), abs=1e-12)
    # independent implementation: scipy's U statistic of the positives over n_pos * n_neg
    u = sps.mannwhitneyu(scores[labels == 1], scores[labels == 0]).statistic
    expected = u / ((labels == 1).sum() * (labels == 0).sum())
    assert auroc(scores, labels) == pytest.approx(expected, abs=1e-12)


def test_auroc_orientation_and_booleans():
    labels = np.array([True, True, False, False])
    assert auroc([0.9, 0.8, 0.1, 0.2], labels) == 1.0
    assert auroc([0.1, 0.2, 0.9, 0.8], labels) == 0.0


def test_constant_scores_give_one_half():
    labels = np.array([0, 1] * 25)
    assert auroc(np.full(50, 3.0), labels) == 0.5
    res = delong(np.full(50, 3.0), labels)
    assert res.estimate == 0.5 and res.se == 0.0
    assert delong_paired(np.full(50, 3.0), np.zeros(50), labels).p_value == 1.0


@pytest.mark.parametrize("seed", range(4))
def test_delong_se_equals_bruteforce_placements(seed):
    scores, labels = _tied_data(seed + 10, n=80)
    v10, v01 = _brute_placements(scores, labels)
    se = math.sqrt(v10.var(ddof=1) / v10.size + v01.var(ddof=1) / v01.size)
    res = delong(scores, labels)
    assert res.estimate == pytest.approx(v10.mean(), abs=1e-12)
    assert res.se == pytest.approx(se, rel=1e-10)
    assert (res.n_pos, res.n_neg) == (v10.size, v01.size)
    z = sps.norm.ppf(0.975)
    assert res.low == pytest.approx(max(0.0, res.estimate - z * se), rel=1e-10)
    assert res.high == pytest.approx(min(1.0, res.estimate + z * se), rel=1e-10)


def test_delong_paired_equals_bruteforce_covariance():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 70)
    a = np.round(rng.normal(labels * 1.0, 1.0), 1)
    b = np.round(a + rng.normal(0, 0.8, 70), 1)
    a10, a01 = _brute_placements(a, labels)
    b10, b01 = _brute_placements(b, labels)
    m, n = a10.size, a01.size
    var_a = a10.var(ddof=1) / m + a01.var(ddof=1) / n
    var_b = b10.var(ddof=1) / m + b01.var(ddof=1) / n
    cov = np.cov(a10, b10)[0, 1] / m + np.cov(a01, b01)[0, 1] / n
    se = math.sqrt(var_a + var_b - 2 * cov)
    res = delong_paired(a, b, labels)
    assert res.estimate == pytest.approx(a10.mean() - b10.mean(), abs=1e-12)
    assert res.se == pytest.approx(se, rel=1e-10)
    assert res.correlation == pytest.approx(cov / math.sqrt(var_a * var_b), rel=1e-10)
    assert res.z == pytest.approx(res.estimate / se, rel=1e-10)
    assert res.p_value == pytest.approx(2 * sps.norm.sf(abs(res.z)), rel=1e-10)
    assert (res.n, res.n_pos + res.n_neg) == (70, 70)


def test_delong_coverage_binormal():
    # 2,000 samples of 100 positives ~ N(1, 1) and 100 negatives ~ N(0, 1);
    # true AUROC = Phi(1 / sqrt(2)). Binomial sd of the coverage at 0.95: 0.0049.
    rng = np.random.default_rng(20240601)
    truth = sps.norm.cdf(1 / math.sqrt(2))
    labels = np.repeat([1, 0], 100)
    hits = 0
    for _ in range(2000):
        scores = rng.normal(labels.astype(float), 1.0)
        res = delong(scores, labels)
        hits += res.low <= truth <= res.high
    assert 0.93 <= hits / 2000 <= 0.97


def test_delong_paired_identical_scores():
    scores, labels = _tied_data(1)
    res = delong_paired(scores, scores, labels)
    assert res.estimate == 0.0 and res.z == 0.0 and res.p_value == 1.0
    assert res.correlation == pytest.approx(1.0)
    assert res.low == res.high == 0.0


def test_delong_paired_size_under_null():
    # Two independent scorers with the same binormal law, 100 + 100 items, 2,000 replications:
    # the p-values should be uniform. Binomial sd of the rejection rate at 0.05: 0.0049.
    rng = np.random.default_rng(11)
    labels = np.repeat([1, 0], 100)
    p = np.empty(2000)
    for r in range(2000):
        a = rng.normal(labels * 1.0, 1.0)
        b = rng.normal(labels * 1.0, 1.0)
        p[r] = delong_paired(a, b, labels).p_value
    assert 0.03 <= np.mean(p < 0.05) <= 0.07
    assert 0.07 <= np.mean(p < 0.10) <= 0.13
    assert sps.kstest(p, "uniform").pvalue > 0.001


def test_empty_class_raises():
    with pytest.raises(ValueError, match="at least one positive"):
        delong([0.1, 0.2, 0.3], [0, 0, 0])
    with pytest.raises(ValueError, match="at least one positive"):
        auroc([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="0/1"):
        auroc([0.1, 0.2], [1, 2])
    with pytest.raises(ValueError, match="finite"):
        auroc([0.1, math.nan], [1, 0])
    with pytest.raises(ValueError, match="same items"):
        delong_paired([0.1, 0.2], [0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(ValueError, match="confidence"):
        delong([0.1, 0.2], [1, 0], confidence=95)


def test_single_item_class_gives_nan_interval():
    res = delong([0.9, 0.1, 0.2, 0.3], [1, 0, 0, 0])
    assert res.estimate == 1.0
    assert math.isnan(res.se) and math.isnan(res.low) and math.isnan(res.high)


def test_summaries_render():
    scores, labels = _tied_data(2)
    one = delong(scores, labels)
    assert one.summary().startswith("AUROC ") and "delong" in one.summary()
    assert one.summary(fmt="html").startswith("<table>")
    two = delong_paired(scores, -scores, labels)
    assert "delong paired" in two.summary()
    assert "<td>" in two.summary(fmt="html")
    with pytest.raises(ValueError, match="fmt"):
        one.summary(fmt="md")
