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
    series = [Series(str(i), (0.5,) * 5, tuple(np.linspace(0.1, 0.5, 5))) for i in range(30)]
    fit = PlaceholderMeanField().fit(series, n_boot=200)
    assert fit.param("b").estimate == 0.0
    assert fit.param("b").low <= 0.0 <= fit.param("b").high
    assert np.isnan(fit.param("a").estimate) and np.isnan(fit.param("H_min").estimate)
    assert "not identifiable" in fit.note
    assert fit.label == "robust"
    # at the floor (one executor a round) H never moves: the same reading, not a censored fit
    floor = [Series(str(i), (0.0,) * 5, tuple(np.linspace(0.1, 0.5, 5))) for i in range(30)]
    fit = PlaceholderMeanField().fit(floor, n_boot=200)
    assert fit.label == "robust" and fit.param("b").estimate == 0.0, fit.note


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


# --- the entropy ceiling (issue 31) ------------------------------------------------------------

CLIPPED = {"a": 0.12, "b": 0.05, "H_min": 0.6}  # the held-out run's case: most steps clip at ln 7


def test_transitions_clipped_at_the_ceiling_are_fitted_as_censored(caplog):
    import logging

    series = simulate(a=0.12, b=0.05, h_min=0.6, seed=0)
    with caplog.at_level(logging.WARNING):
        fit = PlaceholderMeanField().fit(series, n_boot=200)
    # least squares gave b = -0.001, H_min = 2.2 and "robust", the truth outside its intervals
    for name, value in CLIPPED.items():
        assert fit.param(name).estimate == pytest.approx(value, rel=0.1), name
        assert fit.param(name).low <= value <= fit.param(name).high, (name, fit.param(name))
    assert fit.label == "oscillating"
    assert "clipped at the entropy bounds" in fit.note and "censored" in fit.note
    assert "censored" in fit.param("b").method
    assert "clipped" in caplog.text
    share = float(fit.note.split("%")[0])
    assert 50 < share < 70  # the held-out run saw 65%


def test_a_fit_with_nearly_every_transition_clipped_gets_no_label():
    # the context pushes H up hard: more than 90% of the steps are clipped at the ceiling
    series = simulate(a=0.05, b=1.0, h_min=1.9, n_traj=60, noise=0.01, seed=3)
    fit = PlaceholderMeanField().fit(series, n_boot=100)
    assert fit.label == "unclassified" and "not identifiable" in fit.note, fit.note
    assert np.isnan(fit.param("b").low)


def test_a_trajectory_with_nan_is_one_line_naming_it():
    from harness.errors import HarnessUsageError

    good = simulate(n_traj=3, seed=2)
    bad = Series("inst-042", (0.5, float("nan"), 0.7), (0.0, 1.0, 2.0))
    with pytest.raises(HarnessUsageError) as err:
        PlaceholderMeanField().fit([*good, bad])
    assert "inst-042" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_censored_intervals_cover_95_percent_at_the_printed_size():
    """Monte-Carlo coverage of the censored fit's Wald intervals: 300 replicates of 100
    trajectories of 3-8 steps at the clipped parameters (about 40% of steps clip); the
    Monte-Carlo sd is 1.3 points, so 91-99% is accepted and the measured values are recorded
    in docs/validation/iwg.md."""
    hits = {name: 0 for name in CLIPPED}
    reps = 300
    for rep in range(reps):
        series = simulate(a=0.12, b=0.05, h_min=0.6, n_traj=100, steps=(3, 8), seed=20_000 + rep)
        fit = PlaceholderMeanField().fit(series)
        for name, value in CLIPPED.items():
            p = fit.param(name)
            hits[name] += p.low <= value <= p.high
    coverage = {k: v / reps for k, v in hits.items()}
    print("coverage", coverage)
    for name in CLIPPED:
        assert 0.91 <= coverage[name] <= 0.99, coverage
