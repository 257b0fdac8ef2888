import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from harness.stats._multiple import adjust, benjamini_hochberg, holm

# Pinned from statsmodels 0.15.0:
#   multipletests(pvalues, alpha=0.05, method="holm") and method="fdr_bh"
# -> (reject, pvals_corrected); the vectors are unsorted and include ties.
CASES = [
    (
        [0.01, 0.04, 0.03, 0.005, 0.2],
        [0.04, 0.09, 0.09, 0.025, 0.2],
        [True, False, False, True, False],
        [
            0.024999999999999998,
            0.049999999999999996,
            0.049999999999999996,
            0.024999999999999998,
            0.2,
        ],
        [True, True, True, True, False],
    ),
    (
        [0.02, 0.02, 0.02, 0.5],
        [0.08, 0.08, 0.08, 0.5],
        [False, False, False, False],
        [0.02666666666666667, 0.02666666666666667, 0.02666666666666667, 0.5],
        [True, True, True, False],
    ),
    (
        [0.3, 0.001, 0.04, 0.04, 0.9, 0.012],
        [0.6, 0.006, 0.16, 0.16, 0.9, 0.06],
        [False, True, False, False, False, False],
        [0.36, 0.006, 0.060000000000000005, 0.060000000000000005, 0.9, 0.036000000000000004],
        [False, True, False, False, False, True],
    ),
    (
        [0.06, 0.01, 0.06, 0.03, 0.01],
        [0.12, 0.05, 0.12, 0.09, 0.05],
        [False, True, False, False, True],
        [0.06, 0.024999999999999998, 0.06, 0.05, 0.024999999999999998],
        [False, True, False, True, True],
    ),
]


@pytest.mark.parametrize(("p", "holm_adj", "holm_rej", "bh_adj", "bh_rej"), CASES)
def test_pinned_statsmodels(p, holm_adj, holm_rej, bh_adj, bh_rej):
    h = holm(p)
    assert h.adjusted == pytest.approx(holm_adj, abs=1e-15)
    assert h.reject == tuple(holm_rej)
    assert h.pvalues == tuple(p) and h.method == "holm" and h.alpha == 0.05
    b = benjamini_hochberg(p)
    assert b.adjusted == pytest.approx(bh_adj, abs=1e-15)
    assert b.reject == tuple(bh_rej)
    assert b.method == "bh"


def test_random_vectors_match_statsmodels_live(no_gc_collect):
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 30):
        for _ in range(6):
            p = rng.beta(0.4, 1.5, size=size).round(3)  # rounding makes ties
            for ours, theirs in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
                reject, corrected, _, _ = multipletests(p, alpha=0.1, method=theirs)
                res = ours(p, alpha=0.1)
                assert res.adjusted == pytest.approx(corrected.tolist(), abs=1e-12)
                assert res.reject == tuple(reject.tolist())


def test_holm_never_below_bh_and_ties_share_values():
    p = [0.01, 0.02, 0.02, 0.03, 0.5]
    h, b = holm(p), benjamini_hochberg(p)
    assert all(x >= y for x, y in zip(h.adjusted, b.adjusted, strict=True))
    assert h.adjusted[1] == h.adjusted[2] and b.adjusted[1] == b.adjusted[2]


def test_adjust_dispatch_and_errors():
    p = [0.2, 0.01, 0.03]
    assert adjust(p, method="holm") == holm(p)
    assert adjust(p, method="bh", alpha=0.1) == benjamini_hochberg(p, alpha=0.1)
    with pytest.raises(ValueError, match="'holm', 'bh'"):
        adjust(p, method="fdr_bh")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.2])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, -0.1])
    with pytest.raises(ValueError, match="alpha"):
        holm([0.5], alpha=0)


def test_empty_and_summary():
    empty = holm([])
    assert empty.adjusted == () and empty.reject == ()
    text = holm([0.01, 0.5]).summary()
    assert text.splitlines()[0] == "holm, alpha=0.05: 1 of 2 rejected"
    assert "<caption>" in benjamini_hochberg([0.01, 0.5]).summary(fmt="html")


@pytest.mark.parametrize(("ours", "theirs"), [(holm, "holm"), (benjamini_hochberg, "fdr_bh")])
def test_nan_is_not_tested_and_left_out_of_the_family(ours, theirs):
    # A nan p-value once became 0.0 before Holm and so the "most significant" result. Now it
    # is left out: the others are adjusted as a family of m = 3 (statsmodels on the three),
    # and the nan stays nan ("not tested") and is never rejected.
    p = [0.04, float("nan"), 0.01, 0.03]
    res = ours(p)
    _, corrected, _, _ = multipletests([0.04, 0.01, 0.03], alpha=0.05, method=theirs)
    assert np.isnan(res.adjusted[1]) and res.reject[1] is False
    kept = [res.adjusted[0], res.adjusted[2], res.adjusted[3]]
    assert kept == pytest.approx(corrected.tolist(), abs=1e-15)
    # Read as 0, the untested one would have been the first rejection.
    assert ours([0.04, 0.0, 0.01, 0.03]).reject[1] is True
    assert np.isnan(res.pvalues[1])


def test_all_nan_and_summary_say_not_tested():
    res = holm([float("nan"), float("nan")])
    assert all(np.isnan(res.adjusted)) and res.reject == (False, False)
    text = holm([0.01, float("nan")]).summary()
    assert text.splitlines()[0] == "holm, alpha=0.05: 1 of 1 rejected (1 not tested)"
    assert "p=not tested adjusted=not tested not tested" in text
    assert "nan" not in text and "nan" not in holm([float("nan")]).summary(fmt="html")
