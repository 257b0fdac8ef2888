"""Golden scoring (spec §3): eq. 1's weights and the paper's weighted averages, reproduced.

The per-model rows in `golden/` are the authors' published result files
(`aisa-group/posttrainbench-website`, `data/aggregated_*.csv`, numbers only), kept as they are;
the zero-shot tables are `weights.PAPER_BASELINES`. Expected values: `factors.json` to 1e-6,
and spec §3's table (51.14, 7.53, 18.08, 23.16, 21.59, 21.38, 24.82) to 0.01.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from harness.suites.posttrainbench.weights import (
    PAPER_BASELINES,
    PAPER_FACTORS,
    PAPER_MODELS,
    benchmark_weights,
    mean_over_models,
    paper_weights,
    weighted_score,
)

GOLDEN = Path(__file__).parent / "golden"


def _rows(name: str) -> list[dict[str, float]]:
    with (GOLDEN / f"{name}.csv").open() as f:
        return [{k: float(v) for k, v in r.items() if k != "model"} for r in csv.DictReader(f)]


def test_weights_reproduce_factors_json() -> None:
    weights = paper_weights().weights
    assert set(weights) == set(PAPER_FACTORS)
    for name, factor in PAPER_FACTORS.items():
        assert weights[name] == pytest.approx(factor, abs=1e-6), name
    assert sum(weights.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("instruct", 51.14),
        ("base", 7.53),
        ("aggregated_baseline_fewshot", 18.08),
        ("aggregated_avg_Opus-4.6", 23.16),
        ("aggregated_avg_Gemini-3.1-Pro", 21.59),
        ("aggregated_avg_GPT-5.2", 21.38),
        ("aggregated_avg_Opus-4.6-1M", 24.82),
    ],
)
def test_weighted_scores_match_the_paper(rows: str, expected: float) -> None:
    if rows == "instruct":
        table = [PAPER_BASELINES[m] for m in PAPER_MODELS]
    elif rows == "base":
        table = [PAPER_BASELINES[b] for b in PAPER_MODELS.values()]
    else:
        table = _rows(rows)
        assert len(table) == 4  # one row per base model
    score = 100 * weighted_score(mean_over_models(table), PAPER_FACTORS)
    assert score == pytest.approx(expected, abs=0.01)
    # the recomputed weights give the same score to the same precision
    assert 100 * weighted_score(mean_over_models(table), paper_weights().weights) == (
        pytest.approx(expected, abs=0.01)
    )


def test_opus_per_benchmark_means() -> None:
    means = mean_over_models(_rows("aggregated_avg_Opus-4.6"))
    shown = {k: round(100 * v, 1) for k, v in means.items()}
    assert shown == {"aime2025": 5.0, "arenahardwriting": 7.8, "bfcl": 75.9, "gpqamain": 25.5,
                     "gsm8k": 41.0, "healthbench": 18.8, "humaneval": 24.7}  # fmt: skip


def test_weights_refuse_a_benchmark_instruct_does_not_beat() -> None:
    with pytest.raises(ValueError, match="does not beat"):
        benchmark_weights({"a": 0.5, "b": 0.3}, {"a": 0.1, "b": 0.3})
    assert math.isnan(weighted_score({"a": 1.0}, {"a": 0.5, "b": 0.5}))  # b has no score
