"""provenance's results: the five checks decide on constructed runs, and the section renders.

`example_report` is also the constructed input tests/test_design.py renders (it holds one
errored run, counted in the "errored" column).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from harness.report._sections import SectionOutput, section_markdown, write_plots
from harness.stats._compare import clean_json
from harness.suites.provenance.results import report_from_runs
from harness.suites.provenance.section import SECTION, view


def _fpr(hits_001: int = 9) -> dict[str, Any]:
    part = {"texts": 1000, "hits": {"0.001": 1, "0.01": hits_001, "0.05": 45}}
    by = {"fresh_key": part, "z_test": part, "no_dedup": part, "fixed_key": part,
          "per_key_fpr_001": [0.01], "short_texts": 0}  # fmt: skip
    low = {"hits": {"0.001": 0, "0.01": 9, "0.05": 40}, "mean_scored": 140.0}
    return {"kind": "fpr", "params": {}, "texts": 1000, "scored": 200,
            "by_gamma": {"0.25": by, "0.5": by},
            "low_diversity": {"keys": 1000, "successors": 2, "length": 202, "gamma": 0.25,
                              "dedup": low, "no_dedup": {**low, "mean_scored": 200.0}}}  # fmt: skip


def _cell(gamma: float, delta: float, power: float, predicted: float, kl: float) -> dict:
    se = math.sqrt(power * (1 - power) / 1000)
    cells = [{"n": n, "texts": 1000, "detected": round(power * 1000), "power": power, "se": se,
              "predicted": predicted, "predicted_no_dedup_correction": predicted + 0.01,
              "predicted_key_averaged": predicted, "predicted_kgw_bound": predicted - 0.05}
             for n in (50, 100)]  # fmt: skip
    return {"kind": "cell", "params": {"gamma": gamma, "delta": delta}, "gamma": gamma,
            "delta": delta, "cells": cells, "kl": kl, "green_rate": 0.4,
            "bound_rate": 0.38}  # fmt: skip


def _selection(power: float = 0.9, kl: float = 0.15) -> dict[str, Any]:
    measured = {"n": 100, "texts": 1000, "detected": round(power * 1000), "power": power,
                "se": math.sqrt(power * (1 - power) / 1000)}  # fmt: skip
    return {"kind": "select", "params": {}, "calibration_texts": 200, "n": 100, "target": 0.9,
            "alpha": 1e-3,
            "rows": [{"gamma": 0.5, "delta": 1.5, "kl": 0.16, "power": 0.9, "feasible": True},
                     {"gamma": 0.25, "delta": math.nan, "kl": math.nan, "power": 0.8,
                      "feasible": False}],
            "predicted_curves": {"0.5": [{"delta": 1.0, "power": 0.5, "kl": 0.07}]},
            "chosen": {"gamma": 0.5, "delta": 1.5, "kl": kl, "kl_predicted": 0.16, "power": 0.9,
                       "feasible": True, "measured": measured}}  # fmt: skip


def _student(method: str, strength: float, seed: int, arch: str, kl: float, excess: float,
             p: float) -> dict[str, Any]:  # fmt: skip
    test = {"mode": "open", "n": 900, "mean": 0.5 + excess, "excess": excess, "p_value": p,
            "neg_log10_p": -math.log10(p), "p_exact": math.nan}  # fmt: skip
    closed = {**test, "mode": "closed", "p_exact": p}
    res = {"open_supervised": test, "open_unsupervised": test, "closed_supervised": closed,
           "reading_supervised": closed}  # fmt: skip
    run = {"kind": "distill", "method": method, "strength": strength, "seed": seed,
           "arch": arch, "key": "1",
           "traces": {"kl": kl, "source_nll": 1.1, "error_rate": 0.0, "teacher_perplexity": 3.0,
                      "teacher_green_rate": 0.6},
           "losses": [1.0], "epochs": {"1": res, "3": res}}  # fmt: skip
    if method == "control" and seed == 0:
        run["fpr"] = {"clean_texts": 500, "keys": 1000, "alpha": 0.01, "contexts": 1000,
                      "clean_hits": 8, "clean_mean_excess": -0.01, "other_keys": 50,
                      "other_traces": 200, "other_hits": 0, "other_p": [0.5]}  # fmt: skip
    return run


def example_runs() -> dict[str, list[dict[str, Any]]]:
    """Runs of the three tasks: every check passes; one distill run errored."""
    cells = [_cell(g, d, p, p - 0.01, kl) for g, d, p, kl in
             ((0.25, 1.0, 0.3, 0.06), (0.25, 2.0, 0.9, 0.2), (0.5, 1.0, 0.45, 0.07),
              (0.5, 2.0, 0.98, 0.25))]  # fmt: skip
    students = []
    for seed in range(2):
        students.append(_student("control", 0.0, seed, "transformer", 0.0, -0.01, 1.0))
        for strength, kl in ((0.5, 0.015), (1.0, 0.06), (2.0, 0.23)):
            students.append(_student("kgw", strength, seed, "transformer", kl, kl / 3, 1e-3 * kl))
        for strength, kl in ((2.0, 0.018), (4.0, 0.07)):
            students.append(_student("adfp", strength, seed, "transformer", kl, kl / 2, 1e-4 * kl))
    students.append({"kind": "distill", "params": {}, "error": "RuntimeError('boom')"})
    return {"detect": [_fpr(), *cells], "select": [_selection()], "distill": students}


def example_report() -> Any:
    """The constructed report."""
    return report_from_runs("quick", "constructed", example_runs(), {"kl_targets": [0.02, 0.05]})


def test_the_checks_pass_on_runs_that_meet_them_and_render(tmp_path: Path):
    report = example_report()
    assert [c.passed for c in report.checks] == [True, True, True, True, None]
    assert ("distill", 13, 1) in report.counts  # 2 seeds x 6 runs, and the errored one
    assert json.loads(json.dumps(clean_json(report), allow_nan=False))
    out = SectionOutput(SECTION, (report,))
    files = write_plots(out, tmp_path / "r")
    assert len(files[0]) == 6 and all(Path(f).exists() for f in files[0])
    text = section_markdown(out, files)
    assert "Check 5 (reported)" in text and "errored" in text
    # matched KL: ADFP's v̄ − γ at KL 0.05 lies between its sweep points, over 2 seeds
    row = next(m for m in report.matched if (m.method, m.kl, m.metric, m.epoch, m.test) ==
               ("adfp", 0.05, "excess", 3, "open_supervised"))  # fmt: skip
    assert row.seeds_reached == 2 and 0.018 / 2 < row.interval.estimate < 0.07 / 2


def _check(runs: dict[str, list[dict[str, Any]]], number: int) -> bool | None:
    report = report_from_runs("quick", "t", runs, {"kl_targets": [0.02, 0.05]})
    return report.checks[number - 1].passed


def test_each_gate_fails_when_its_figure_does():
    runs = example_runs()
    bad = copy.deepcopy(runs)
    bad["detect"][0] = _fpr(hits_001=22)  # over the cap of 21 at 0.01
    assert _check(bad, 1) is False
    bad = copy.deepcopy(runs)
    bad["detect"][1] = _cell(0.25, 1.0, 0.3, 0.4, 0.06)  # the model misses by 0.1
    assert _check(bad, 2) is False
    bad = copy.deepcopy(runs)
    bad["select"] = [_selection(power=0.8)]  # below 0.9 - 3 SE
    assert _check(bad, 3) is False
    bad = copy.deepcopy(runs)
    bad["detect"].append(_cell(0.75, 1.0, 0.99, 0.99, 0.05))  # more power at less KL
    assert _check(bad, 3) is False
    bad = copy.deepcopy(runs)
    bad["distill"] = [r for r in bad["distill"] if r.get("method") != "control"]
    assert _check(bad, 4) is None  # no control: not decided
    bad = copy.deepcopy(runs)
    for r in bad["distill"]:
        if r.get("method") == "kgw" and r["strength"] == 2.0:
            r["epochs"]["3"]["open_supervised"]["p_value"] = 0.2
    assert _check(bad, 4) is False
    section = view(example_report())
    assert section.tables and all(len(r) == len(h) for _, h, rows in section.tables for r in rows)
