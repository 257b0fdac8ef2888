import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from harness.stats._power import min_detectable_difference, sample_size_for_difference

Z_A = 1.959963984540054  # scipy.stats.norm.ppf(0.975)
Z_B = 0.8416212335729143  # scipy.stats.norm.ppf(0.8)


# Pinned from statsmodels 0.15.0:
#   NormalIndPower().solve_power(effect_size=delta / sqrt(p * (1 - p)), alpha=0.05,
#                                power=0.8, ratio=1.0, alternative="two-sided")
# statsmodels also counts the far rejection tail (about 1e-6 of power here), so its n is
# smaller by a relative 3e-6 or less.
@pytest.mark.parametrize(
    ("delta", "p", "expected"),
    [(0.1, 0.5, 392.4430232577885), (0.05, 0.7, 1318.608563679292), (0.02, 0.9, 3531.987230615594)],
)
def test_independent_sample_size_matches_statsmodels(delta, p, expected):
    res = sample_size_for_difference(delta, p=p)
    assert res.n_exact == pytest.approx(expected, rel=1e-5)
    assert res.n == math.ceil(res.n_exact)
    assert res.design == "independent" and res.solved_for == "n"
    live = NormalIndPower().solve_power(
        effect_size=delta / math.sqrt(p * (1 - p)), alpha=0.05, power=0.8, ratio=1.0
    )
    assert res.n_exact == pytest.approx(live, rel=1e-5)


def test_independent_textbook_value():
    # (1.95996 + 0.84162)**2 * 2 * 0.25 / 0.1**2 = 392.44 -> 393 per group
    assert sample_size_for_difference(0.1).n == 393
    assert min_detectable_difference(393).delta == pytest.approx(
        (Z_A + Z_B) * math.sqrt(0.5 / 393), rel=1e-12
    )


def _paired_power(n, delta, psi, alpha=0.05):
    """Power of the two-sided unconditional McNemar z-test, from scipy's normal cdf."""
    z = sps.norm.ppf(1 - alpha / 2)
    null_sd, alt_sd = math.sqrt(psi / n), math.sqrt((psi - delta**2) / n)
    return sps.norm.cdf((delta - z * null_sd) / alt_sd) + sps.norm.cdf(
        (-delta - z * null_sd) / alt_sd
    )


@pytest.mark.parametrize(("delta", "psi"), [(0.05, 0.2), (0.03, 0.1), (0.1, 0.3), (0.2, 0.2)])
def test_paired_sample_size_gives_the_power(delta, psi):
    res = sample_size_for_difference(delta, paired_discordance=psi)
    # Connor (1987) by hand: (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2
    hand = (Z_A * math.sqrt(psi) + Z_B * math.sqrt(psi - delta**2)) ** 2 / delta**2
    assert res.n_exact == pytest.approx(hand, rel=1e-12)
    assert _paired_power(res.n_exact, delta, psi) == pytest.approx(0.8, abs=1e-4)
    assert res.design == "paired" and math.isnan(res.p)


def test_paired_needs_fewer_items_when_models_agree():
    independent = sample_size_for_difference(0.05, p=0.7)
    paired = sample_size_for_difference(0.05, p=0.7, paired_discordance=0.15)
    assert paired.n < independent.n / 2


@pytest.mark.parametrize("psi", [None, 0.1, 0.25, 0.6, 1.0])
@pytest.mark.parametrize("power", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_functions_are_inverse(psi, power, alpha):
    kw = {"alpha": alpha, "power": power, "paired_discordance": psi, "p": 0.65}
    top = 1.0 if psi is None else psi
    for delta in np.linspace(0.01, top, 7):
        size = sample_size_for_difference(delta, **kw)
        back = min_detectable_difference(size.n_exact, **kw)
        assert back.delta == pytest.approx(delta, rel=1e-9)
        # whole items: at least as sensitive as asked
        assert min_detectable_difference(size.n, **kw).delta <= delta * (1 + 1e-12)
    for n in (30, 100, 1000, 10**5):
        mdd = min_detectable_difference(n, **kw)
        if math.isnan(mdd.delta):
            continue
        assert sample_size_for_difference(mdd.delta, **kw).n_exact == pytest.approx(n, rel=1e-9)


def test_undetectable_is_nan_and_validation():
    # with 20 paired items and 10% discordance no difference <= 0.1 reaches 80% power
    assert math.isnan(min_detectable_difference(20, paired_discordance=0.1).delta)
    assert math.isnan(min_detectable_difference(2).delta)
    with pytest.raises(ValueError, match="delta"):
        sample_size_for_difference(0.3, paired_discordance=0.2)
    with pytest.raises(ValueError, match="delta"):
        sample_size_for_difference(0.0)
    with pytest.raises(ValueError, match="power"):
        sample_size_for_difference(0.1, power=0.3)
    with pytest.raises(ValueError, match="paired_discordance"):
        min_detectable_difference(100, paired_discordance=0.0)
    with pytest.raises(ValueError, match="n must be positive"):
        min_detectable_difference(0)


def test_summary():
    res = sample_size_for_difference(0.1)
    assert res.summary() == (
        "n=393 items per model detect a difference of 0.100 "
        "(independent two-proportion z-test, p=0.5, alpha=0.05, power=0.8)"
    )
    assert "paired McNemar" in min_detectable_difference(500, paired_discordance=0.2).summary(
        fmt="html"
    )
