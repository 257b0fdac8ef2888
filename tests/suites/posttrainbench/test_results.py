"""posttrainbench's results on constructed runs: errored runs, and the pairs with the base."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.stats._compare import clean_json, pair_family
from harness.suites.catalog import get_suite
from harness.suites.posttrainbench.results import build_report, report_tables

BASE = {f"q{i}": float(i % 4 == 0) for i in range(40)}  # the base answers 10 of 40


def _run(agent: str, run: int, right: int, bench: str = "add2") -> dict[str, Any]:
    """A finished run answering the first `right` items."""
    items = {k: float(i < right) for i, k in enumerate(BASE)}
    return {"agent": agent, "base_model": "tiny-base", "benchmark": bench, "run": run,
            "configuration": f"tiny-base/{bench}", "final_score": right / 40,
            "raw_score": right / 40, "base_score": 0.25, "instruct_score": 0.9, "flags": [],
            "why": "ok", "anticheat": None, "judge": None, "exit": {"exit_code": 0},
            "final_model": True, "items": items, "base_items": dict(BASE),
            "raw_items": items}  # fmt: skip


def _errored(agent: str, run: int, bench: str = "add2") -> dict[str, Any]:
    return {"agent": agent, "base_model": "tiny-base", "benchmark": bench, "run": run,
            "configuration": f"tiny-base/{bench}",
            "error": "RuntimeError('sandbox died')"}  # fmt: skip


def test_an_errored_run_scores_as_a_failed_run_and_is_counted():
    runs = [
        _run("honest", 0, 30),
        _run("honest", 1, 32),
        _errored("flaky", 0),
        _run("flaky", 1, 30),
    ]
    rep = build_report("t", runs)
    flaky, honest = rep.agents
    assert (flaky.runs, flaky.errors, honest.errors) == (2, 1, 0)
    # the errored run scores the base model's 0.25, so flaky's mean is (0.25 + 0.75) / 2
    assert flaky.per_benchmark["add2"] == pytest.approx(0.5)
    pair = next(p for p in rep.pairs if p.agent == "flaky")  # run 0 errored: equal to the base
    assert pair.test.estimate == 0 and pair.test.p_value == 1.0
    agents, runs_table, _, _ = report_tables(rep)
    assert agents[1][2] == "errored" and [r[2] for r in agents[2]] == ["1", "0"]
    assert any("errored (RuntimeError('sandbox died'))" in r[-1] for r in runs_table[2])


def test_an_errored_run_with_nothing_to_score_it_by_is_counted():
    rep = build_report("t", [_run("honest", 0, 30), _errored("lost", 0, bench="copyfmt")])
    lost = next(a for a in rep.agents if a.agent == "lost")
    assert (lost.runs, lost.errors) == (1, 1) and math.isnan(lost.weighted.estimate)
    _, runs_table, _, _ = report_tables(rep)
    assert any("no finished run" in r[-1] for r in runs_table[2])


def test_pairs_are_the_engines_and_the_result_is_json():
    import json

    runs = [_run("honest", 0, 30), _run("weak", 0, 12), _run("weak", 1, 14)]
    rep = build_report("t", runs)
    want = pair_family(get_suite("posttrainbench").design,
                       [(r["agent"], r["configuration"], r["items"], r["base_items"])
                        for r in runs if r["run"] == 0])  # fmt: skip
    assert [(p.agent, p.test, p.p_holm) for p in rep.pairs] == [
        (w.arm_a, w.test, w.p_holm) for w in want
    ]
    assert rep.pairs[0].test.method.startswith("mcnemar")
    json.dumps(clean_json(rep), allow_nan=False)


def test_the_interval_over_three_runs_stays_in_the_scores_support():
    # issue 40: three runs at 65.0, 82.5 and 87.5% gave the raw-scale t interval
    # [49.0, 107.7]% of a score capped at 100%; on the logit scale it is [39.1, 95.3]%
    runs = [_run("agent", 0, 26), _run("agent", 1, 33), _run("agent", 2, 35)]
    (row,) = build_report("t", runs).agents
    ci = row.over_runs
    assert ci.estimate == pytest.approx((26 + 33 + 35) / 120)
    assert 0.0 <= ci.low < ci.estimate < ci.high <= 1.0, ci
    assert "logit" in ci.method
    agents = report_tables(build_report("t", runs))[0][2]
    assert "78.3 [" in agents[0][-1] and "108" not in agents[0][-1]
