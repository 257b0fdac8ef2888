"""The experimental design is data (issue 30): a walk over the catalog and the source tree.

- every suite declares its `Design` in the catalog, explicitly;
- (no module outside the engine pairs, tests or corrects: tests/test_layout.py holds that, as
  the public faces' boundary;)
- every suite's report section builds, renders and writes strict JSON
  (`clean_json` + `json.dumps(allow_nan=False)`) from a small constructed input that holds an
  errored run, so a script that reads `harness report --format json` gets every section.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.sections import load_section
from harness.stats import Design, clean_json
from harness.suites.catalog import all_suites

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "harness"
CATALOG = HARNESS / "suites" / "catalog.py"


def test_every_suite_declares_its_design_in_the_catalog():
    tree = ast.parse(CATALOG.read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "Suite"]  # fmt: skip
    assert len(calls) == len(all_suites())
    for call in calls:
        name = ast.literal_eval(call.args[0])
        keywords = {k.arg for k in call.keywords}
        assert "design" in keywords, f"suite {name} takes the default Design: declare its own"
    for suite in all_suites().values():
        assert isinstance(suite.design, Design)
        if suite.section:  # a section's numbers need a unit that names what n counts
            assert suite.design.unit in ("seed", "item", "instance", "chain", "problem", "run")


# --- every section's result, from a small constructed input with an errored run ---------------


def _k_parity() -> Any:
    from harness.suites.k_parity.results import build_parity_report

    runs: list[dict[str, Any]] = []
    for arm, hits in {"ar": [100, None, 300], "md-optimal": [400, 500, 450]}.items():
        for seed, hit in enumerate(hits):
            runs.append({"arm": arm, "seed": seed, "steps_to_generalize": hit,
                         "steps": [50, hit or 600], "train_acc": [0.5, 1.0],
                         "test_acc": [0.5, 1.0 if hit else 0.5],
                         "final_test_acc": 1.0 if hit else 0.5})  # fmt: skip
    runs.append({"arm": "ar", "seed": 3, "error": "RuntimeError('boom')"})
    return build_parity_report("t", runs, preset="quick")


def _lokra() -> Any:
    from harness.suites.lokra.results import build_lokra_report

    def run(method: str, lam: float, seed: int, score: float) -> dict[str, Any]:
        return {"experiment": "fit", "method": method, "lam": lam, "seed": seed,
                "target": "flat", "score": score, "optimum": 0.4, "krank": 4, "sigma": 0.1,
                "params": 64}  # fmt: skip

    runs = [run("lora", 0.0, s, 0.5 + s / 100) for s in range(3)]
    runs += [run("lokra", 1e-2, s, 0.48 + s / 90) for s in range(3)]
    runs.append({"experiment": "fit", "method": "lokra_plus", "lam": 0.0, "seed": 0,
                 "target": "flat", "error": "RuntimeError('boom')"})  # fmt: skip
    return build_lokra_report("t", runs)


def _l2a() -> Any:
    from harness.suites.l2a.results import build_l2a_report

    def run(variant: str, lam: float, seed: int, ce: float) -> dict[str, Any]:
        return {"variant": variant, "lam": lam, "seed": seed, "accuracy": 0.9, "routed": 0.2,
                "query_routed_per_layer": [0.9, 0.1], "ce": ce, "accuracy_pruned": 0.9,
                "pruned_layers": [1], "kv_saved": 0.3,
                "curve": {"step": [1, 2], "routed": [0.5, 0.2]}}  # fmt: skip

    runs = [run("full", 0.0, s, 0.1 + s / 50) for s in range(2)]
    runs += [run("l2a", 1e-4, s, 0.2 + s / 40) for s in range(2)]
    runs.append({"variant": "swa", "lam": 0.0, "seed": 0, "error": "RuntimeError('boom')"})
    return build_l2a_report("t", runs)


def _team() -> Any:
    from harness.suites.team.results import build_team_report

    def run(variant: str, seed: int, pid: int, correct: bool, tpf: float) -> dict[str, Any]:
        return {"variant": variant, "seed": seed, "prompt_id": pid, "task": "reverse",
                "correct": correct, "tpf": tpf, "apf": 6.0, "apt": 6.0 / tpf,
                "tpf_with_commits": tpf, "cold_share": 0.1}  # fmt: skip

    runs = [run("vanilla", s, p, p % 2 == 0, 2.0 + p / 10) for s in range(2) for p in range(6)]
    runs += [run("team", s, p, p % 3 != 0, 3.0 + p / 10) for s in range(2) for p in range(5)]
    runs.append({"variant": "team", "seed": 1, "prompt_id": 5, "task": "reverse",
                 "correct": False, "error": "RuntimeError('boom')"})  # fmt: skip
    return build_team_report("t", runs)


def _posttrainbench() -> Any:
    from harness.suites.posttrainbench.results import build_report

    base = {f"q{i}": float(i % 3 == 0) for i in range(24)}

    def run(agent: str, n: int, right: int) -> dict[str, Any]:
        items = {k: float(i < right) for i, k in enumerate(base)}
        return {"agent": agent, "base_model": "tiny-base", "benchmark": "add2", "run": n,
                "configuration": "tiny-base/add2", "final_score": right / 24,
                "raw_score": right / 24, "base_score": 8 / 24, "instruct_score": 0.9,
                "flags": [], "why": "ok", "anticheat": None, "judge": None, "exit": {},
                "final_model": True, "items": items, "base_items": base,
                "raw_items": items}  # fmt: skip

    runs = [run("honest", 0, 20), run("honest", 1, 18), run("weak", 0, 9)]
    runs.append({"agent": "weak", "base_model": "tiny-base", "benchmark": "add2", "run": 1,
                 "configuration": "tiny-base/add2", "error": "RuntimeError('boom')"})  # fmt: skip
    return build_report("t", runs)


def _record(suite: str, task: str, samples: list[Any], model: str = "m",
            metadata: dict[str, Any] | None = None) -> Any:  # fmt: skip
    from harness.logs import LogIdentity, LogRecord

    identity = LogIdentity(suite, task, (), "0" * 12, len(samples), model, ())
    return LogRecord(f"{model.replace('/', '_')}.eval", identity, "2026-01-01",
                     metadata or {}, tuple(samples))  # fmt: skip


def _mas_prove() -> Any:
    from harness.logs import SampleScore
    from harness.suites.mas_prove.results import build_mas_report

    samples = []
    for verifier, granularity in (("none", "-"), ("oracle", "agent")):
        for problem in range(6):
            for seed in range(2):
                meta = {"mp_pattern": "single", "mp_verifier": verifier,
                        "mp_granularity": granularity, "mp_context": "-" if verifier == "none"
                        else "raw", "mp_problem": f"p{problem}", "mp_seed": seed,
                        "mp_agent_tokens": 100, "mp_verifier_tokens": 20}  # fmt: skip
                error = (
                    "RuntimeError('boom')" if (problem, seed, verifier) == (5, 1, "oracle") else ""
                )
                raw = () if error else (("mp_score", "C" if problem % 2 else "I"),)
                samples.append(SampleScore(f"{verifier}.{problem}.{seed}", 1, raw, error, meta, {}))
    return build_mas_report("t", _record("mas-prove", "mas_prove", samples, metadata={"n": 3}))


def _iwg() -> Any:
    from harness.logs import SampleScore
    from harness.suites.iwg.results import build_group

    rng = np.random.default_rng(0)
    records = []
    for model in ("iwg/perfect", "iwg/diffuser"):
        samples = []
        for i in range(8):
            entropy = list(np.cumsum(rng.normal(0.0, 0.1, 5)) + 1.0)
            meta = {"iwg_entropy": entropy, "iwg_context": [0.5] * 5,
                    "iwg_failures": {"format": int(i == 0)}}  # fmt: skip
            error = "RuntimeError('boom')" if (model, i) == ("iwg/diffuser", 7) else ""
            raw = () if error else (("task_success", "C" if i % 2 else "I"),
                                    ("step_sr", float(rng.random())))  # fmt: skip
            samples.append(SampleScore(f"iwg-{i:04d}", 1, raw, error, meta, {}))
        records.append(_record("iwg", "iwg", samples, model=model))
    return build_group(records, n_boot=20)


def _serving() -> Any:
    from harness.logs import SampleScore
    from harness.suites.serving.results import build_group

    rng = np.random.default_rng(0)
    records = []
    for model in ("serving/fcfs", "serving/sjf", "serving/uniboost"):
        samples = []
        for i in range(4):
            ttlt = np.round(rng.exponential(5000.0, 300), 2)
            meta = {"slice": i // 2, "ttlt_ms": list(ttlt), "ttft_ms": list(ttlt / 10),
                    "max_wait_s": 1.0, "preemptions": 0}  # fmt: skip
            if model == "serving/uniboost":
                meta.update(gamma_time=[5.0, 10.0], gamma=[67.0, 107.0], gamma_converged=False)
            error = "RuntimeError('boom')" if (model, i) == ("serving/sjf", 3) else ""
            raw = () if error else (("ttlt_p99", float(np.percentile(ttlt, 99)) / 1e3),)
            samples.append(SampleScore(f"conv-s{i // 2}-seed{i % 2}", 1, raw, error, meta, {}))
        records.append(_record("serving", "serving", samples, model=model,
                               metadata={"settings": {"load": 0.85}}))  # fmt: skip
    return build_group(records)


def _bandpo() -> Any:
    from tests.test_bandpo import bandit_report

    return bandit_report()


def _provenance() -> Any:
    from tests.test_provenance_results import example_report

    return example_report()


def _protokv() -> Any:
    from tests.suites.test_protokv import example_report

    return example_report()


def _imgcot() -> Any:
    from tests.suites.test_imgcot import example_report

    return example_report()


def _causaldpo() -> Any:
    from tests.suites.test_causaldpo_suite import example_report

    return example_report()


BUILDERS: dict[str, Callable[[], Any]] = {
    "k-parity": _k_parity, "lokra": _lokra, "l2a-recall": _l2a, "team": _team,
    "posttrainbench": _posttrainbench, "mas-prove": _mas_prove, "iwg": _iwg,
    "provenance": _provenance,
    "serving": _serving,
    "bandpo": _bandpo,
    "protokv": _protokv,
    "imgcot": _imgcot,
    "causaldpo": _causaldpo,
}  # fmt: skip


def test_every_section_has_a_constructed_input_here():
    with_sections = {name for name, s in all_suites().items() if s.section}
    assert with_sections == set(BUILDERS)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_section_result_is_strict_json_and_renders(name):
    result = BUILDERS[name]()
    text = json.dumps(clean_json(result), allow_nan=False)
    assert json.loads(text)
    view = load_section(all_suites()[name].section).view(result)
    assert view.tables and all(len(row) == len(head) for _, head, rows in view.tables
                               for row in rows)  # fmt: skip
    # the input's one errored run is counted in an "errored" (or "errors") column
    counts = [row[head.index(col)] for _, head, rows in view.tables for row in rows
              for col in ("errored", "errors") if col in head]  # fmt: skip
    assert sorted(counts)[-1] == "1" and set(counts) <= {"0", "1"}, counts


def test_own_table_needs_a_section_and_the_catalogs_lookup_attaches_both():
    from harness.suites.catalog import all_suites, catalog_design

    with pytest.raises(ValueError, match="own_table needs a section"):
        Design(own_table=True)
    for suite in all_suites().values():
        design = catalog_design(suite.name)
        assert (design.section, design.own_table) == (suite.section, suite.own_table)
    assert catalog_design("no-such-suite") == Design()
