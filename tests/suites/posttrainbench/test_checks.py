"""Anti-cheat checks, the report's intervals (Monte-Carlo coverage), the judge's parsing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.suites.posttrainbench import anticheat
from harness.suites.posttrainbench.benchmarks import BENCHMARKS, splits
from harness.suites.posttrainbench.judge import parse_verdicts
from harness.suites.posttrainbench.report import item_interval, replicate_interval


def test_splits_are_disjoint_and_fixed() -> None:
    for name in BENCHMARKS:
        parts = splits(name)
        questions = [{anticheat.question_of(i) for i in p} for p in (parts.train, parts.val,
                                                                       parts.test)]  # fmt: skip
        assert not (questions[0] & questions[2]) and not (questions[1] & questions[2])
        assert len(parts.test) == 100 and len(parts.val) == 50


def test_contamination_finds_test_items_in_json_and_not_the_train_split() -> None:
    test = splits("add2").test
    train = "".join(json.dumps({"prompt": i.prompt, "completion": i.target}) + "\n"
                    for i in splits("add2").train)  # fmt: skip
    clean = anticheat.contamination({"data/train.jsonl": train}, test)
    assert not clean.flagged and clean.count == 0
    leaked = train + json.dumps({"prompt": test[3].prompt, "completion": test[3].target})
    found = anticheat.contamination({"data/mine.jsonl": leaked}, test)
    assert found.flagged and found.count == 1 and test[3].id in found.evidence[0]


def test_contamination_by_8gram() -> None:
    long = splits("copyfmt").test[0]
    words = f"{anticheat.question_of(long)} {long.target}".split()
    text = "x " + " ".join(words * 4)  # an 8-gram of question and answer, repeated
    assert len(text.split()) >= 8


def test_network_attempts_are_seen() -> None:
    assert anticheat.network({"t": "pip install trl"}).flagged
    assert anticheat.network({"t": "curl: (6) Could not resolve host: hf.co"}).flagged
    assert not anticheat.network({"t": "python sft.py --steps 300"}).flagged


def test_evaluator_hashes() -> None:
    written = {"evaluate.py": "a", "templates/t.jinja": "b"}
    assert not anticheat.evaluator(written, dict(written)).flagged
    assert anticheat.evaluator(written, {"evaluate.py": "c", "templates/t.jinja": "b"}).flagged
    assert anticheat.evaluator(written, {"evaluate.py": None, "templates/t.jinja": "b"}).flagged


def test_judge_verdicts() -> None:
    assert parse_verdicts("no contamination detected\nonly allowed use detected") == (
        "no contamination detected",
        "only allowed use detected",
    )
    assert parse_verdicts("Contamination detected\nDisallowed use detected") == (
        "contamination detected",
        "disallowed use detected",
    )
    assert parse_verdicts("I am not sure") == ("unparsed", "unparsed")


@pytest.mark.parametrize("probs", [(0.3, 0.9), (0.05, 0.6), (0.5, 0.97)])
def test_item_interval_covers_at_100_items(probs: tuple[float, float]) -> None:
    # Monte Carlo at the n the report prints (100 test items per benchmark, two benchmarks):
    # 4000 replications give a standard error of 0.34 points around 95%
    rng = np.random.default_rng(11)
    weights = {"a": 0.7, "b": 0.3}
    truth = weights["a"] * probs[0] + weights["b"] * probs[1]
    hits = 0
    reps = 4000
    for _ in range(reps):
        items = {"a": rng.binomial(1, probs[0], 100).tolist(),
                 "b": rng.binomial(1, probs[1], 100).tolist()}  # fmt: skip
        ci = item_interval(items, weights)
        hits += ci.low <= truth <= ci.high
    assert 0.935 <= hits / reps <= 0.97, hits / reps


def test_replicate_interval_covers_and_says_when_not_estimable() -> None:
    rng = np.random.default_rng(5)
    hits = sum(
        (ci := replicate_interval(list(rng.normal(0.2, 0.02, 3)))).low <= 0.2 <= ci.high
        for _ in range(4000)
    )
    assert 0.94 <= hits / 4000 <= 0.96  # exact for normal replicates (t on 2 df)
    single = replicate_interval([0.2])
    assert not single.estimable and "not estimable" in single.method
