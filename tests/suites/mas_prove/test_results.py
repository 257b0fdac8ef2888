"""mas-prove's results on a constructed log: errored samples, and the pairs the engine gives."""

from __future__ import annotations

import json

import numpy as np

from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.stats._compare import clean_json, pair_family
from harness.suites.catalog import get_suite
from harness.suites.mas_prove.results import build_mas_report
from harness.suites.mas_prove.section import grid_table, notes


def _sample(config: tuple[str, str, str, str], problem: int, seed: int, right: bool,
            tokens: int, error: str = "") -> SampleScore:  # fmt: skip
    pattern, verifier, granularity, context = config
    meta = {"mp_pattern": pattern, "mp_verifier": verifier, "mp_granularity": granularity,
            "mp_context": context, "mp_problem": f"p{problem}", "mp_seed": seed,
            "mp_agent_tokens": tokens, "mp_verifier_tokens": 0}  # fmt: skip
    sid = f"{pattern}.{verifier}.s{seed}.p{problem}"
    raw = () if error else (("mp_score", "C" if right else "I"),)
    return SampleScore(sid, 1, raw, error, meta, {})


def _record(samples: list[SampleScore]) -> LogRecord:
    identity = LogIdentity("mas-prove", "mas_prove", (("n", "3"),), "0" * 12, len(samples),
                           "scripted/agent", ())  # fmt: skip
    return LogRecord("x.eval", identity, "2026-01-01", {"n": 3}, tuple(samples))


BASE = ("single", "none", "-", "-")
ORACLE = ("single", "oracle", "agent", "raw")
RANDOM = ("single", "random", "agent", "raw")


def _grid(seeds: int, rng: np.random.Generator) -> list[SampleScore]:
    out = []
    for seed in range(seeds):
        for p in range(30):
            out.append(_sample(BASE, p, seed, bool(rng.random() < 0.4), 100))
            out.append(_sample(ORACLE, p, seed, bool(rng.random() < 0.7), 180))
            out.append(_sample(RANDOM, p, seed, bool(rng.random() < 0.45), 150))
    return out


def test_an_errored_sample_counts_wrong_and_is_counted():
    samples = [_sample(BASE, p, 0, True, 100) for p in range(10)]
    samples += [_sample(ORACLE, p, 0, True, 150) for p in range(8)]
    samples += [_sample(ORACLE, p, 0, True, 0, error="RuntimeError('x')") for p in (8, 9)]
    report = build_mas_report("t", _record(samples))
    base, oracle = report.rows
    assert (oracle.n, oracle.errors, base.errors) == (10, 2, 0)
    assert oracle.accuracy.estimate == 0.8 and oracle.diff.estimate == -0.2
    assert (oracle.diff.b01, oracle.diff.b10) == (2, 0)  # McNemar on the 10 shared problems


def test_pairs_are_the_engines_clustered_by_problem():
    design = get_suite("mas-prove").design
    for seeds in (1, 3):
        samples = _grid(seeds, np.random.default_rng(seeds))
        report = build_mas_report("t", _record(samples))

        def items(config, value, samples=samples):
            return {f"p{s.metadata['mp_problem'][1:]}|s{s.metadata['mp_seed']}": value(s)
                    for s in samples if s.metadata["mp_verifier"] == config[1]}  # fmt: skip

        clusters = {f"{s.metadata['mp_problem']}|s{s.metadata['mp_seed']}": s.metadata["mp_problem"]
                    for s in samples}  # fmt: skip
        right = items(BASE, lambda s: float(s.raw[0][1] == "C"))
        want = pair_family(design, [
            (" / ".join(c), "none", items(c, lambda s: float(s.raw[0][1] == "C")), right)
            for c in (ORACLE, RANDOM)
        ], clusters)  # fmt: skip
        rows = {r.verifier: r for r in report.rows}
        got = [(rows[c[1]].diff, rows[c[1]].p_holm) for c in (ORACLE, RANDOM)]
        assert got == [(w.test, w.p_holm) for w in want]
        expected = "mcnemar" if seeds == 1 else "over 30 mp_problem means"
        assert expected in rows["oracle"].diff.method
        assert rows["oracle"].extra_tokens.estimate == 80.0
        json.dumps(clean_json(report), allow_nan=False)
        caption, _, table = grid_table(report)
        assert len(table) == 3 and "Wilson" in caption
        assert "after Holm at 5% (Holm p <= 0.05)" in notes(report)[0]
