"""Issue 40: a degenerate dynamics fit is one line, never numbers; H_min stays an entropy."""

import math

import numpy as np

from harness.suites.iwg.dynamics import H_CEILING, PlaceholderMeanField, Series, simulate
from harness.suites.iwg.results import IwgReport, tables


def _collinear() -> list[Series]:
    """Context load equal to entropy, H growing by 0.1 a round (the issue's input)."""
    h = tuple(0.5 + 0.1 * t for t in range(9))
    return [Series(f"s{i}", h, h) for i in range(30)]


def _report(fit) -> IwgReport:
    return IwgReport("iwg", (), (), (("orch", fit),), (), (("orch", "none"),), ())


def test_collinear_context_and_entropy_is_one_line_not_identifiable():
    # before: H_min = -1.2e15 [1.1e14, 3.6e14] (its interval excludes it), labelled "robust"
    for series in (_collinear(), _noisy_collinear()):
        fit = PlaceholderMeanField().fit(series, n_boot=200)
        assert fit.label == "unclassified", fit
        assert all(math.isnan(p.estimate) and math.isnan(p.low) for p in fit.params), fit.params
        assert all(p.method.startswith("not identifiable") for p in fit.params)
        assert "H(t) and c(t) are collinear" in fit.note, fit.note
        assert fit.note.startswith("not identifiable (a, b, H_min): ")
        report = _report(fit)
        row = next(t for t in tables(report) if t[0].startswith("Entropy dynamics"))[2][0]
        assert row[1:4] == ["-", "-", "-"], row  # no number where a parameter would be
        assert [c for c in row if "not identifiable" in c] == [row[-1]], row  # one line


def _noisy_collinear() -> list[Series]:
    sims = simulate(n_traj=40, steps=10, h_max=1.8, seed=1)  # below the ceiling: least squares
    return [Series(s.id, s.entropy, s.entropy) for s in sims]


def test_the_floor_h_min_never_leaves_the_entropy_range():
    # before, seed 1 printed H_min 0.071 [-0.033, 0.164] and seed 0 -0.003 [-0.373, 0.178]
    for seed in range(5):
        series = simulate(a=0.1, b=0.02, h_min=0.05, n_traj=25, steps=(3, 6), noise=0.03,
                          h_max=1.5, seed=seed)  # fmt: skip
        fit = PlaceholderMeanField().fit(series, n_boot=300)
        p = fit.param("H_min")
        if math.isnan(p.estimate):
            assert p.method.startswith("not identifiable") and "entropy's range" in p.method
            continue
        assert 0.0 <= p.low <= p.estimate <= p.high <= H_CEILING, (seed, p)
        assert "[0, 1.946]" in p.method, p.method


def test_a_constant_context_leaves_a_identified_and_b_and_h_min_not():
    # c constant is collinear with the intercept: b and the floor are confounded, a is not
    series = [s for s in simulate(n_traj=30, steps=6, h_max=1.8, seed=4)]
    series = [Series(s.id, s.entropy, (1.0,) * len(s.entropy)) for s in series]
    fit = PlaceholderMeanField().fit(series, n_boot=200)
    assert np.isfinite(fit.param("a").estimate) and np.isfinite(fit.param("a").low)
    for name in ("b", "H_min"):
        assert math.isnan(fit.param(name).estimate), fit.param(name)
        assert fit.param(name).method.startswith("not identifiable")
    assert fit.label == "unclassified"
