"""The serving section on constructed logs: errors, the design's family, and honest claims.

Each log is one policy; its samples are slices (one seed each) holding every request's TTFT
and TTLT, as the task writes them. No simulation runs here: the latencies are drawn.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.suites.catalog import get_suite
from harness.suites.serving.results import build_group, tables

DESIGN = get_suite("serving").design


def _sample(i: int, ttlt_s: np.ndarray, wait: float, error: str = "") -> SampleScore:
    if error:
        meta = {"slice": i, "seed": 0}
        return SampleScore(f"conv-s{i}-seed0", 1, (("ttlt_p99", "nan"),), error, meta, {})
    meta = {
        "slice": i,
        "seed": 0,
        "ttft_ms": (ttlt_s * 250).round(2).tolist(),
        "ttlt_ms": (ttlt_s * 1e3).round(2).tolist(),
        "max_wait_s": wait,
        "preemptions": 1,
    }
    scores = (("ttlt_p99", float(np.percentile(ttlt_s, 99))),)
    return SampleScore(f"conv-s{i}-seed0", 1, scores, "", meta, {})


def _record(policy: str, scale: float, *, slices: int = 6, errored: tuple[int, ...] = (),
            wait: float = 1.37, seed: int = 0) -> LogRecord:  # fmt: skip
    """A log of `policy`: per slice 400 latencies, Exp with mean `scale` (x slice factor)."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(slices):
        lat = rng.exponential(scale * (1 + 0.3 * i), 400)
        samples.append(_sample(i, lat, wait * (1 + 0.1 * i), "RuntimeError('past the trace')"
                               if i in errored else ""))  # fmt: skip
    identity = LogIdentity("serving", "serving", (("slices", str(slices)),), "abc", slices,
                           policy, ())  # fmt: skip
    metadata = {"settings": {"load": 0.85, "slices": slices}, "server": {}, "reconstructed": ""}
    return LogRecord(f"/logs/{policy}.eval", identity, "2026-01-01", metadata, tuple(samples),
                     design=DESIGN)  # fmt: skip


def _text(report) -> str:
    rows = [" | ".join(r) for _, _, rs in tables(report) for r in rs]
    return "\n".join([*rows, *report.checks])


def test_a_policy_whose_every_sample_errored_prints_no_number():
    # the -T start_minute=70 case: no slice ran; its max wait is unknown, never 0 s (which
    # would read as the best possible), and no claim is made on it
    report = build_group([
        _record("serving/fcfs", 1.0, errored=tuple(range(6))),
        _record("serving/sjf", 1.0, seed=1),
        _record("serving/uniboost", 1.0, seed=2),
    ])  # fmt: skip
    fcfs = next(p for p in report.policies if p.policy == "serving/fcfs")
    assert (fcfs.samples, fcfs.errors, fcfs.requests) == (0, 6, 0)
    assert math.isnan(fcfs.max_wait) and math.isnan(fcfs.ttlt[2].estimate)
    (lat, _, _) = tables(report)[0]
    row = next(r for r in tables(report)[0][2] if r[0] == "serving/fcfs")
    assert row[4:] == ["–"] * 8, row
    starvation = next(c for c in report.checks if "max wait" in c)
    assert "not shown" in starvation and "STARVATION" not in starvation
    assert "excluded and counted" in lat


def test_an_errored_slice_is_left_out_of_the_pairs_and_counted():
    # the -T slices=7 case: slice 6 errored for every policy; the pairs run on the 6 others,
    # and the row says how many slices each pair has
    report = build_group([
        _record("serving/sjf", 1.0, slices=7, errored=(6,)),
        _record("serving/uniboost", 0.8, slices=7, errored=(6,), seed=3),
    ])  # fmt: skip
    assert all(p.errors == 1 and p.samples == 6 for p in report.policies)
    assert {r.slices for r in report.pairs} == {6}
    ub = next(p for p in report.policies if p.policy == "serving/uniboost")
    assert ub.max_wait == dict(ub.slice_waits)[5] and 6 not in dict(ub.slice_waits)


def test_the_p99_claim_is_met_only_when_the_test_decides_it():
    # UniBoost's pooled P99 is lower, but over 6 slices whose differences change sign the
    # paired test does not decide it: "not shown", never "met" on point estimates
    sjf = _record("serving/sjf", 1.0, seed=1)
    ub_mixed = _record("serving/uniboost", 0.97, seed=4)
    report = build_group([sjf, ub_mixed])
    (row,) = [r for r in report.pairs if r.metric.startswith("P99 TTLT")]
    pooled = {p.policy: p.ttlt[2].estimate for p in report.policies}
    assert pooled["serving/uniboost"] < pooled["serving/sjf"]
    assert row.p_holm > DESIGN.alpha
    claim = next(c for c in report.checks if "P99 TTLT" in c)
    assert "not shown" in claim and "met" not in claim.replace("not shown", ""), claim
    # every slice far lower: the exact sign-flip p is 2/64 = 0.031 <= 0.05, decided
    decided = build_group([sjf, _record("serving/uniboost", 0.3, seed=5)])
    claim = next(c for c in decided.checks if "P99 TTLT" in c)
    assert ": met: lower" in claim and "Holm p 0.0312" in claim, claim


def test_the_starvation_line_names_the_bound():
    report = build_group([
        _record("serving/fcfs", 1.0, wait=1.37),
        _record("serving/uniboost", 1.0, wait=1.37, seed=2),
    ])  # fmt: skip
    line = next(c for c in report.checks if "max wait" in c)
    # the longest wait is slice 5's: 1.37 x 1.5 = 2.055 s; the bound is 10x that
    assert "vs the bound 10x FCFS's 2.06 s = 20.55 s: within it" in line, line


def test_the_family_is_the_designs():
    # the baseline comes from the log's design, not from a name in the suite's report
    records = [_record(p, 1.0, seed=i) for i, p in
               enumerate(("serving/fcfs", "serving/sjf", "serving/uniboost"))]  # fmt: skip
    report = build_group(records)
    assert {(r.policy, r.baseline) for r in report.pairs} == {
        ("serving/fcfs", "serving/sjf"), ("serving/uniboost", "serving/sjf")}  # fmt: skip
    other = dataclasses.replace(DESIGN, baseline="serving/fcfs")
    report = build_group([dataclasses.replace(r, design=other) for r in records])
    assert {(r.policy, r.baseline) for r in report.pairs} == {
        ("serving/sjf", "serving/fcfs"), ("serving/uniboost", "serving/fcfs")}  # fmt: skip
