"""Design conformance: every suite in the catalog prints only numbers its declared design allows.

For each suite (and each metric its design declares), synthetic logs are made from the design
with a known truth: units drawn from the declared support, clusters where the design clusters
units, a lower-is-better metric where the suite has one, and errored samples whose logged value
is the most flattering one the support allows. The logs go through the functions behind what
users read: `harness eval`'s summary (`summary_rows`), `harness report`'s score rows and pairs
(`score_rows`, `comparable_groups`, `group_pairs`) and the site's ranked table (`task_table`).
Asserted, for every printed interval:

- it covers the truth at its stated level, by Monte Carlo at the n it is printed (here 40
  units, or 8 clusters of 5): a cheap version in the default run, the full one `long`;
- it never leaves the support (a pair's difference: [lo - hi, hi - lo]);
- an error never flatters: an errored sample's logged value never enters a score;
- a pair's p-value and its interval agree: p <= alpha exactly when the interval excludes 0;
- the eval summary shows the declared headline metrics only;
- the site ranks best first in the declared direction.

A new suite gets these checks by being in the catalog.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from harness.compare._pairs import comparable_groups, group_pairs
from harness.compare._scores import score_rows, summary_rows
from harness.leaderboard.ranking import task_table
from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.stats._design import Design, rejects
from harness.suites.catalog import all_suites

SUITES = all_suites()
N_CLUSTERS, PER_CLUSTER = 8, 5  # 40 units, in 8 clusters where the design clusters
N_UNITS = N_CLUSTERS * PER_CLUSTER
ERROR_RATE = 0.1


def _metrics(design: Design) -> list[str]:
    """The metric names to check: the declared ones and the headline, else a generic scorer."""
    names = [n for n, _ in design.metrics] + list(design.headline or ())
    return list(dict.fromkeys(names)) or ["score"]


CASES = [(name, metric) for name, s in SUITES.items() for metric in _metrics(s.design)]


def _draw(design: Design, rng: np.random.Generator, shift: np.ndarray) -> np.ndarray:
    """One value per unit from the design's support; `shift` is each unit's cluster effect."""
    low, high = design.support
    n = shift.size
    if design.score == "binary":
        return (rng.random(n) < np.clip(0.6 + shift, 0.05, 0.95)).astype(float)
    if math.isfinite(low) and math.isfinite(high):
        p = np.clip(0.4 + shift, 0.05, 0.95)
        return low + (high - low) * rng.beta(4 * p, 4 * (1 - p))
    if math.isfinite(low):
        return low + rng.lognormal(shift, 0.5)
    if math.isfinite(high):
        return high - rng.lognormal(shift, 0.5)
    return rng.normal(shift, 1.0)


def _truth(design: Design) -> float:
    """The population mean of a unit's score, errors counted by the design's rule."""
    rng = np.random.default_rng(12345)
    big = 400_000
    shift = _shifts(design, rng, big)
    values = _draw(design, rng, shift)
    worst = design.error_value()
    if worst is None:  # excluded: the mean over the units that did not error (errors at random)
        return float(values.mean())
    return float((1 - ERROR_RATE) * values.mean() + ERROR_RATE * worst)


def _shifts(design: Design, rng: np.random.Generator, n: int) -> np.ndarray:
    """Each unit's cluster effect (0 where units are independent)."""
    if not design.cluster:
        return np.zeros(n)
    effects = rng.normal(0.0, 0.15, max(1, n // PER_CLUSTER))
    return np.repeat(effects, PER_CLUSTER)[:n]


def _flattering(design: Design) -> float:
    """The value an errored sample is logged with: the best the support allows."""
    low, high = design.support
    best = high if design.higher else low
    return best if math.isfinite(best) else (1e6 if design.higher else -1e6)


def _record(suite: str, model: str, design: Design, metric: str, seed: int) -> LogRecord:
    """A log of `model` on `suite` with its design attached, as `read_log` attaches it."""
    rng = np.random.default_rng(seed)
    shift = _shifts(design.metric(metric), rng, N_UNITS)
    values = _draw(design.metric(metric), rng, shift)
    errored = rng.random(N_UNITS) < ERROR_RATE
    samples = []
    for i in range(N_UNITS):
        meta = {design.cluster: f"c{i // PER_CLUSTER}"} if design.cluster else {}
        value = _flattering(design.metric(metric)) if errored[i] else float(values[i])
        error = "RuntimeError: the model call failed" if errored[i] else ""
        samples.append(SampleScore(f"u{i}", 1, ((metric, value),), error, meta, {}))
    identity = LogIdentity(suite, "t", (), "h", N_UNITS, model, ())
    return LogRecord(f"{model}.eval", identity, "2026-01-01", {}, tuple(samples), design=design)


def _inside(low: float, high: float, support: tuple[float, float]) -> bool:
    tol = 1e-9 * max([1.0, *(abs(x) for x in support if math.isfinite(x))])
    return support[0] - tol <= low <= high <= support[1] + tol


def _check_rows(suite: str, metric: str, seed: int) -> tuple[bool, list]:
    """One data set: the rows and pairs checked; returns (covered, rows)."""
    design = SUITES[suite].design
    measure = design.metric(metric)
    records = [_record(suite, m, design, metric, seed + k) for k, m in enumerate(("m/a", "m/b"))]
    truth = _truth(measure)
    covered = []
    for record in records:
        for row in score_rows(record):
            if row.metric.startswith("pass@"):
                continue
            assert _inside(row.ci_low, row.ci_high, measure.support), (suite, row)
            covered.append(row.ci_low <= truth <= row.ci_high)
    (group,), _ = comparable_groups(records)
    low, high = measure.support
    for pair in group_pairs(group):
        test = pair.test
        if test is None or math.isnan(test.p_value):
            continue
        assert _inside(test.low, test.high, (low - high, high - low)), (suite, test)
        excludes = test.low > 0 or test.high < 0
        assert rejects(test.p_value, 1 - test.confidence) == excludes, (suite, test)
    return all(covered), records


@pytest.mark.parametrize(("suite", "metric"), CASES)
def test_every_interval_covers_stays_in_support_and_agrees_with_its_p(suite, metric):
    reps = 25
    hits = sum(_check_rows(suite, metric, 1000 * r)[0] for r in range(reps))
    # two arms' intervals per data set must both cover: about 0.90 at 95% each; the gate is
    # three Monte-Carlo standard errors below that (the `long` run tightens it)
    assert hits / reps >= 0.90 - 3 * math.sqrt(0.9 * 0.1 / reps), (suite, metric, hits)


@pytest.mark.long
@pytest.mark.parametrize(("suite", "metric"), CASES)
def test_coverage_at_the_printed_n_over_1000_data_sets(suite, metric):
    reps = 1000
    hits = sum(_check_rows(suite, metric, 1000 * r)[0] for r in range(reps))
    assert hits / reps >= 0.90 - 3 * math.sqrt(0.9 * 0.1 / reps), (suite, metric, hits)


@pytest.mark.parametrize(("suite", "metric"), CASES)
def test_an_error_never_flatters(suite, metric):
    design = SUITES[suite].design
    measure = design.metric(metric)
    record = _record(suite, "m/a", design, metric, 7)
    errored = {s.id for s in record.samples if s.error}
    assert errored
    rule = measure.error_value()
    kept = [
        (rule if s.id in errored else dict(s.raw)[metric])
        for s in record.samples
        if rule is not None or s.id not in errored
    ]
    (row,) = [r for r in score_rows(record) if not r.metric.startswith("pass@")]
    assert row.errors == len(errored)
    assert math.isclose(row.value, math.fsum(kept) / len(kept), rel_tol=64 * np.finfo(float).eps)
    if rule is None:
        assert "excluded" in row.ci_method


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_the_eval_summary_shows_the_headline_only(suite):
    design = SUITES[suite].design
    metric = _metrics(design)[0]
    record = _record(suite, "m/a", design, metric, 3)
    shown = summary_rows(record)
    if design.headline == ():
        assert shown == []
    else:
        assert shown and all(design.shows(r.metric) for r in shown)


@pytest.mark.parametrize(("suite", "metric"), CASES)
def test_the_site_ranks_best_first_in_the_declared_direction(suite, metric):
    design = SUITES[suite].design
    measure = design.metric(metric)
    better = dataclasses.replace(measure, metrics=())
    records = [_record(suite, m, design, metric, 11 + k) for k, m in enumerate(("m/a", "m/b"))]
    (group,), _ = comparable_groups(records)
    table = task_table(group)
    values = [row.score.estimate for row in table.rows]
    assert values == sorted(values, reverse=better.higher)


def _decided_record(rng: np.random.Generator, design: Design) -> LogRecord:
    """A `--until decided` log of a clustered design: 8 clusters of 30 items, strong effects."""
    samples, order = [], []
    for c, effect in enumerate(rng.choice([-0.35, 0.35], 8)):
        for j in range(30):
            sid = f"c{c}-{j}"
            order.append(sid)
            value = float(rng.random() < 0.5 + effect)
            meta = {design.cluster: f"c{c}"} if design.cluster else {}
            samples.append(SampleScore(sid, 1, (("match", value),), "", meta, {}))
    sequential = {"harness_sequential": {"alpha": 0.05, "orders": {"t": order}}}
    identity = LogIdentity("mas-prove", "t", (), "h", len(order), "m/a", ())
    return LogRecord("a.eval", identity, "2026-01-01", sequential, tuple(samples), design=design)


def test_a_decided_runs_score_row_takes_one_observation_per_cluster():
    # population mean 0.5; items within a cluster share its effect. Fed item by item the CS
    # covered 0.05 of these (measured); fed the clusters' means it holds its level
    design = SUITES["mas-prove"].design
    rng = np.random.default_rng(1)
    reps = 60
    rows = [score_rows(_decided_record(rng, design))[0] for _ in range(reps)]
    assert all("one observation per mp_problem (8)" in r.ci_method for r in rows)
    hits = sum(r.ci_low <= 0.5 <= r.ci_high for r in rows)
    assert hits / reps >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)


@pytest.mark.parametrize(("suite", "metric"), CASES)
def test_the_report_and_site_json_carry_the_numbers_strictly_and_in_support(suite, metric):
    from harness.leaderboard.build import to_json
    from harness.report._data import ReportData
    from harness.report._export import report_json

    design = SUITES[suite].design
    low, high = design.metric(metric).support
    records = [_record(suite, m, design, metric, 21 + k) for k, m in enumerate(("m/a", "m/b"))]
    (group,), _ = comparable_groups(records)
    rows = tuple(r for record in records for r in score_rows(record))
    logs = tuple(r.path for r in records)
    data = ReportData(rows, tuple(group_pairs(group)), (), (), (), (), logs)
    report = json.loads(json.dumps(report_json(data), allow_nan=False))
    site = json.loads(json.dumps(to_json("t", [task_table(group)], [], {}), allow_nan=False))
    intervals = [(r["ci_low"], r["ci_high"]) for r in report["scores"]]
    intervals += [(r["ci_low"], r["ci_high"]) for t in site["tasks"] for r in t["rows"]]
    for lo, hi in intervals:
        assert lo is not None and _inside(lo, hi, (low, high)), (suite, lo, hi)
    for p in report["pairs"]:
        if p["test"] and p["test"]["low"] is not None:
            assert _inside(p["test"]["low"], p["test"]["high"], (low - high, high - low))
