"""Cheap checks of the CPU instance's pieces, without training or a sandbox (seconds)."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from harness.suites.posttrainbench.agents import SCRIPTED, TRAIN_STEPS, scripted_script
from harness.suites.posttrainbench.benchmarks import BENCHMARKS, rows, splits
from harness.suites.posttrainbench.tiny import TinyConfig, balanced, synthetic_text


@pytest.mark.parametrize("agent", SCRIPTED)
def test_scripted_agents_are_valid_bash(agent: str) -> None:
    script = scripted_script(agent, steps=12, seed=3)
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if agent in ("honest", "cheater", "evaluator_editor"):
        assert "--steps 12 --seed 3" in script and "--out final_model" in script
    assert ("downloads/test.jsonl" in script) == (agent == "cheater")
    assert set(TRAIN_STEPS) == set(BENCHMARKS)


def test_instruct_data_is_balanced_over_benchmarks() -> None:
    parts = [rows(splits(name).train) for name in BENCHMARKS]
    data = balanced(parts)
    owner = {r["prompt"]: n for n, part in zip(BENCHMARKS, parts, strict=True) for r in part}
    counts = Counter(owner[row["prompt"]] for row in data)
    assert set(counts.values()) == {max(len(p) for p in parts)}
    assert min(len(p) for p in parts) < max(len(p) for p in parts)  # something to balance
    # the instruct reference's own mix: add2 three times copyfmt (issue 31)
    weights = dict(TinyConfig().instruct_weights)
    mixed = Counter(owner[row["prompt"]] for row in
                    balanced(parts, [weights[n] for n in BENCHMARKS]))  # fmt: skip
    assert mixed["add2"] == 3 * mixed["copyfmt"] == 3 * max(len(p) for p in parts)
    with pytest.raises(ValueError, match="instruct_weights"):
        TinyConfig(instruct_weights=(("add2", 1),))


def test_pretraining_text_repeats_words_and_never_answers_a_sum() -> None:
    import random

    rng = random.Random(TinyConfig().seed)
    lines = [synthetic_text(rng) for _ in range(2000)]
    repeats = sum(any(w in line.split()[i + 1 :] for i, w in enumerate(line.split())
                      if w.isalpha()) for line in lines)  # fmt: skip
    assert repeats > 500  # copying is there to learn
    assert not any("=" in line or "Q:" in line or "A:" in line for line in lines)
