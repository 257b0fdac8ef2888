"""The placeholder dynamics fit (ours, not the paper's): recovery, degenerate input, coverage."""

import numpy as np
import pytest

from harness.suites.iwg.dynamics import (
    MIN_CLUSTERS,
    PLACEHOLDER_LABEL,
    PlaceholderMeanField,
    Series,
    simulate,
)

TRUE = {"a": 0.3, "b": 0.02, "H_min": 0.2}


def test_recovers_the_simulated_parameters_within_5_percent():
    # spec §3: a = 0.3, b = 0.02, H_min = 0.2, 200 trajectories x 20 steps, noise sd 0.05
    fit = PlaceholderMeanField().fit(simulate(seed=0), n_boot=500)
    for name, value in TRUE.items():
        assert fit.param(name).estimate == pytest.approx(value, rel=0.05), name
        assert fit.param(name).low <= value <= fit.param(name).high, name
    assert PLACEHOLDER_LABEL in fit.model
    assert fit.label == "oscillating"  # b > 0 with its interval above 0
    assert 0 < fit.r2 < 1


def test_constant_entropy_fits_b_zero_and_says_a_is_not_identifiable():
    series = [Series(str(i), (0.0,) * 5, tuple(np.linspace(0.1, 0.5, 5))) for i in range(30)]
    fit = PlaceholderMeanField().fit(series, n_boot=200)
    assert fit.param("b").estimate == 0.0
    assert fit.param("b").low <= 0.0 <= fit.param("b").high
    assert np.isnan(fit.param("a").estimate) and np.isnan(fit.param("H_min").estimate)
    assert "not identifiable" in fit.note
    assert fit.label == "robust"


def test_few_trajectories_give_no_interval():
    fit = PlaceholderMeanField().fit(simulate(n_traj=MIN_CLUSTERS - 1, seed=1), n_boot=200)
    assert not np.isnan(fit.param("b").estimate)
    assert np.isnan(fit.param("b").low)
    assert "not estimable" in fit.param("b").method
    assert fit.label == "unclassified"
    empty = PlaceholderMeanField().fit([Series("x", (0.5,), (0.1,))])
    assert "nothing to fit" in empty.note


@pytest.mark.slow
def test_bootstrap_intervals_cover_95_percent_at_the_printed_size():
    """Monte-Carlo coverage at the report's size: 100 trajectories of 3-8 steps (the default run).

    Each of 600 replicates draws 100 trajectories of the placeholder model and fits with B = 1000.
    A nominal 95% interval should cover 94-96%; with 600 replicates the Monte-Carlo sd is 0.9
    points, so the test accepts 92-98% and docs/validation/iwg.md records the measured values.
    """
    hits = {name: 0 for name in TRUE}
    reps = 600
    for rep in range(reps):
        series = simulate(n_traj=100, steps=(3, 8), seed=10_000 + rep)
        fit = PlaceholderMeanField().fit(series, n_boot=1000, seed=rep)
        for name, value in TRUE.items():
            p = fit.param(name)
            hits[name] += p.low <= value <= p.high
    coverage = {k: v / reps for k, v in hits.items()}
    print("coverage", coverage)
    for name in ("a", "b"):
        assert 0.92 <= coverage[name] <= 0.98, coverage
