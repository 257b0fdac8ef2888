"""Issue 40 for provenance: −log10 p (>= 0) and v̄ − γ (in [−γ, 1 − γ]) keep to their support."""

from __future__ import annotations

import math
import re

from harness.suites.provenance.results import report_from_runs
from harness.suites.provenance.section import view
from tests.test_provenance_results import example_runs


def _spread_runs() -> dict:
    """The example runs, but KGW's second seed barely detected (p = 0.4, excess −0.2 at γ 0.5).

    Two seeds far apart: a t interval on one degree of freedom reaches far below 0.
    """
    runs = example_runs()
    for r in runs["distill"]:
        if r.get("method") == "kgw" and r["seed"] == 1:
            for res in r["epochs"].values():
                for test in res.values():
                    test.update(p_value=0.4, neg_log10_p=-math.log10(0.4), excess=-0.2)
    return runs


def test_matched_intervals_stay_in_each_metric_support():
    # before: KGW −log10 p at KL 0.02, 3 epochs, printed 2.577 [−25.116, 30.271] (t, 1 df)
    report = report_from_runs("quick", "t", _spread_runs(), {"kl_targets": [0.02, 0.05],
                                                             "gamma": 0.5})  # fmt: skip
    support = {"neg_log10_p": (0.0, math.inf), "excess": (-0.5, 0.5)}
    checked = 0
    for m in report.matched:
        ci = m.interval
        if not ci.estimable:
            continue
        low, high = support[m.metric]
        assert low <= ci.low <= ci.estimate <= ci.high <= high, (m.metric, m.method, ci)
        checked += 1
    assert checked >= 8
    kgw = next(m for m in report.matched if (m.method, m.metric, m.kl, m.epoch, m.test)
               == ("kgw", "neg_log10_p", 0.02, 3, "open_supervised"))  # fmt: skip
    assert "log scale" in kgw.interval.method, kgw.interval.method
    # the section prints no negative −log10 p
    table = next(t for t in view(report).tables if t[0].startswith("Student detection"))
    for row in table[2]:
        if row[3] == "−log10 p":
            for cell in row[5:7]:
                assert not re.search(r"\[-", cell), row


def test_excess_without_a_recorded_gamma_keeps_to_minus_one_one():
    report = report_from_runs("quick", "t", _spread_runs(), {"kl_targets": [0.02, 0.05]})
    for m in report.matched:
        if m.metric == "excess" and m.interval.estimable:
            assert -1.0 <= m.interval.low and m.interval.high <= 1.0, m.interval
