"""S = exp(mean log p): the spec's vectors, log-space agreement, and the scoring template."""

import math

import numpy as np
import pytest

from harness.suco.sufficiency import DEFAULT_TEMPLATE, ScoringTemplate, scoring_text, sufficiency


@pytest.mark.parametrize(
    ("probs", "expected"),
    [((0.9, 0.5), 0.67082), ((0.9, 0.5, 0.2), 0.44814), ((0.7,), 0.7)],
)
def test_spec_vectors(probs, expected):
    # by hand: sqrt(0.45) = 0.670820; 0.09 ** (1/3) = 0.448140
    assert sufficiency([math.log(p) for p in probs]) == pytest.approx(expected, abs=5e-6)


def test_log_space_agrees_with_direct_product():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.uniform(0.01, 1.0, size=rng.integers(1, 40))
        direct = float(np.prod(p.astype(np.float64)) ** (1 / p.size))
        assert sufficiency(np.log(p).tolist()) == pytest.approx(direct, abs=1e-9, rel=0)


def test_long_answers_do_not_underflow():
    # 2000 tokens at p = 0.5: the direct product underflows float64 to 0, the log mean does not
    assert 0.5**2000 == 0.0
    assert sufficiency([math.log(0.5)] * 2000) == pytest.approx(0.5, abs=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="at least one"):
        sufficiency([])
    with pytest.raises(ValueError, match="NaN"):
        sufficiency([float("nan")])
    with pytest.raises(ValueError, match="<= 0"):
        sufficiency([0.3])
    assert sufficiency([-math.inf, -0.1]) == 0.0


def test_template_layout_scores_answer_and_closing_brace():
    pair = scoring_text("Q?", "A. B.", "42")
    assert pair == ("Q?<think>A. B.</think>The final answer is \\boxed{", "42}")
    assert pair.context.endswith(DEFAULT_TEMPLATE.lead_in)
    bare = ScoringTemplate("", "", "", "")
    assert scoring_text("12+34=", "", "46", bare) == ("12+34=", "46")
    with pytest.raises(ValueError, match="empty"):
        scoring_text("Q", "z", "")
