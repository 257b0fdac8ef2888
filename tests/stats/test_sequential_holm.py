"""Sequential Holm over anytime p-values (issue 45): Holm's rule, its family-wise error over every
look, and a board family that decides more pairs than Bonferroni with it."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from harness.board._family import PairFamily
from harness.stats import choose_cs, sequential_holm


def test_holm_matches_statsmodels_on_random_families(no_gc_collect):
    rng = np.random.default_rng(0)
    for _ in range(100):
        m = int(rng.integers(1, 9))
        p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 3)
        alpha = float(rng.choice([0.01, 0.05, 0.1]))
        expected = multipletests(p, alpha=alpha, method="holm")[0]
        assert sequential_holm(p, alpha).tolist() == expected.tolist(), (p, alpha)


def test_holm_works_along_the_last_axis_and_refuses_nonsense():
    p = np.array([[0.001, 0.02, 0.5], [0.04, 0.03, 0.001]])
    # thresholds 0.05/3, 0.05/2, 0.05 against the sorted p-values of each row
    assert sequential_holm(p, 0.05).tolist() == [[True, True, False], [False, False, True]]
    assert sequential_holm(p, 0.05)[1].tolist() == sequential_holm(p[1], 0.05).tolist()
    with pytest.raises(ValueError):
        sequential_holm(np.array([]), 0.05)
    with pytest.raises(ValueError):
        sequential_holm(np.array([0.1]), 1.0)


def _runs(deltas: np.ndarray, runs: int, n: int, alpha: float, seed: int):
    """Per run, whether Holm or Bonferroni ever claimed a wrong direction, and how many pairs
    each decided, on binary scores whose pair differences have the true means `deltas`
    (Holm over the 2k one-sided anytime p-values at 0; Bonferroni: each pair's CS at
    alpha / k). The p-values are the betting CS's, batched over runs x pairs, as
    `PairFamily` builds them."""
    k = deltas.size
    rng = np.random.default_rng(seed)
    cs = choose_cs("auto", alpha=alpha / k, kind="difference", batch=runs * k,
                   grid=np.array([-1.0, 0.0, 1.0]), planned=n)  # fmt: skip
    wrong_holm = np.zeros(runs, bool)
    wrong_bonf = np.zeros(runs, bool)
    for _ in range(n):
        # each pair difference a - b of two binary scores with mean difference delta
        a = rng.random((runs, k)) < 0.5 + deltas / 2
        b = rng.random((runs, k)) < 0.5 - deltas / 2
        cs.update((a.astype(float) - b).ravel())
        p_up, p_down = cs.one_sided_p_values(0.0)
        rejected = sequential_holm(
            np.concatenate([p_up.reshape(runs, k), p_down.reshape(runs, k)], axis=1), alpha
        )
        up, down = rejected[:, :k], rejected[:, k:]
        wrong_holm |= (up & (deltas <= 0)).any(1) | (down & (deltas >= 0)).any(1)
        above, below = cs.rejects(0.0)
        above, below = above.reshape(runs, k), below.reshape(runs, k)
        wrong_bonf |= (above & (deltas <= 0)).any(1) | (below & (deltas >= 0)).any(1)
    decided_holm = (up | down).sum(1)
    decided_bonf = (above | below).sum(1)
    return wrong_holm, wrong_bonf, decided_holm, decided_bonf


@pytest.mark.slow
def test_no_wrong_direction_anywhere_with_probability_1_minus_alpha():
    """2,000 runs of 6 pairs, three of them true nulls (difference 0) and three small real
    differences, 300 items each: the share of runs in which Holm ever claimed a wrong direction
    (at any look) stays within alpha plus three Monte-Carlo standard errors."""
    alpha, runs = 0.05, 2000
    deltas = np.array([0.0, 0.0, 0.0, 0.15, -0.15, 0.3])
    wrong_holm, wrong_bonf, decided_holm, decided_bonf = _runs(deltas, runs, 300, alpha, 1)
    limit = alpha + 3 * np.sqrt(alpha * (1 - alpha) / runs)
    assert wrong_holm.mean() <= limit
    assert wrong_bonf.mean() <= limit
    # where some pairs are decided, Holm decides more of the rest than Bonferroni does
    assert decided_holm.mean() > decided_bonf.mean()


def test_the_board_family_decides_more_pairs_with_holm_and_no_wrong_one():
    rng = np.random.default_rng(3)
    means = {"a": 0.8, "b": 0.55, "c": 0.5, "d": 0.2}
    rows = [{m: float(rng.random() < p) for m, p in means.items()} for _ in range(400)]
    items = {}
    for family in ("bonferroni", "holm"):
        fam = PairFamily(list(means), alpha=0.05, margin=0.0, family=family, planned=400)
        for row in rows:
            if not fam.active():
                break
            fam.observe({m: row[m] for m in fam.active()})
        states = fam.states()
        decided = [s for s in states if s.resolution != "unresolved"]
        for s in decided:  # no wrong direction on this board
            assert s.resolution == ("a > b" if means[s.a] > means[s.b] else "b > a")
        items[family] = (len(decided), sum(fam.model_items().values()))
    # Holm decides at least as many pairs, with no more items asked
    assert items["holm"][0] >= items["bonferroni"][0]
    assert items["holm"][1] <= items["bonferroni"][1]


def test_holm_needs_margin_0_and_a_betting_cs():
    with pytest.raises(ValueError, match="margin 0"):
        PairFamily(["a", "b"], margin=0.05, family="holm")
    with pytest.raises(ValueError, match="margin 0"):
        PairFamily(["a", "b"], margin=0.0, family="holm", cs="asymptotic", planned=100)
    with pytest.raises(ValueError, match="family"):
        PairFamily(["a", "b"], family="hochberg")
