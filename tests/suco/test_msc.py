"""t* = the first prefix with S >= δ, else argmax with ties to the shorter; brute-force check."""

import numpy as np
import pytest

from harness.suco.msc import MSCResult, find_msc

SPEC = [0.10, 0.20, 0.50, 0.71, 0.65, 0.90]  # t = 0 (ours, below all) then the spec's t = 1..5


@pytest.mark.parametrize(
    ("delta", "t_star", "reached"), [(0.70, 3, True), (0.95, 5, False), (0.60, 3, True)]
)
def test_spec_vectors(delta, t_star, reached):
    res = find_msc(SPEC, delta)
    assert (res.t_star, res.reached) == (t_star, reached)
    assert res.score == SPEC[t_star]


def test_empty_cot_can_be_sufficient_and_ties_go_short():
    assert find_msc([0.9, 0.95], 0.8) == MSCResult(0, 0.9, True)
    assert find_msc([0.3, 0.5, 0.5, 0.2], 0.9) == MSCResult(1, 0.5, False)
    assert find_msc([0.5], 0.5).reached  # S >= δ, not S > δ
    with pytest.raises(ValueError):
        find_msc([], 0.5)
    with pytest.raises(ValueError, match="NaN"):
        find_msc([0.2, float("nan")], 0.5)


def brute_force(scores, delta):
    """Minimal sufficient: S_t >= δ and every shorter prefix below δ; else the first argmax."""
    n = len(scores)
    sufficient = [t for t in range(n) if scores[t] >= delta and all(s < delta for s in scores[:t])]
    assert len(sufficient) <= 1  # the definition picks at most one t
    if sufficient:
        return sufficient[0], True
    best = max(scores)
    return min(t for t in range(n) if scores[t] == best), False


def test_agrees_with_brute_force():
    rng = np.random.default_rng(2026)
    for _ in range(3000):
        n = int(rng.integers(1, 12))
        # geometric means of random token probabilities, on a coarse grid to force ties
        probs = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9, 0.99], size=(n, int(rng.integers(1, 4))))
        scores = np.exp(np.log(probs).mean(axis=1)).round(3).tolist()
        delta = float(rng.choice([0.3, 0.5, 0.6, 0.675, 0.75, 0.9, 0.99]))
        res = find_msc(scores, delta)
        assert (res.t_star, res.reached) == brute_force(scores, delta)
        assert res.score == scores[res.t_star]
