"""The analysis of `harness.validation.judge_smollm2` on constructed verdicts (no model)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.validation.judge_smollm2 import (
    VerdictCache,
    analyse,
    judge_rates,
    verdicts,
)


def test_verdicts_per_order_and_both() -> None:
    p12 = np.array([0.9, 0.6, 0.2, 0.5, 0.3])
    p21 = np.array([0.8, 0.3, 0.1, 0.5, 0.9])
    v = verdicts(p12, p21)
    assert v["a-first"].tolist() == [1, 1, 0, 0, 0]  # 0.5 (no Yes/No read) is "not output 1"
    assert v["b-first"].tolist() == [1, 0, 0, 0, 1]
    assert v["mean of orders"].tolist() == [1, 0, 0, 0, 1]  # means .85 .45 .15 .5 .6


def test_rates_are_the_hand_counts() -> None:
    human = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0])
    judge = np.array([1, 1, 1, 0, 0, 0, 1, 1, 0])
    r = judge_rates(human, judge)
    assert (r.m0, r.m1) == (5, 4)
    assert r.q1 == pytest.approx(3 / 4)  # judge 1 on 3 of the 4 truly-1
    assert r.q0 == pytest.approx(3 / 5)  # judge 0 on 3 of the 5 truly-0
    assert r.youden_j == pytest.approx(3 / 4 + 3 / 5 - 1)
    assert r.accuracy == pytest.approx(6 / 9)


def _judge(human: np.ndarray, q0: float, q1: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(human.size)
    return np.where(human == 1, u < q1, u >= q0).astype(int)


def test_a_chance_judge_is_refused_on_every_split() -> None:
    human = np.array([0] * 60 + [1] * 60)
    always_yes = np.ones(120, int)  # q0 = 0, q1 = 1: J = 0 on every calibration draw
    [res] = [
        r for r in analyse(human, {"yes": always_yes}, m=15, splits=50, seed=0) if r.order == "yes"
    ]
    assert res.rates.youden_j == 0
    assert res.splits.refused == 50
    assert np.isnan(res.splits.rg_coverage)
    assert res.recommendation == "label by hand"


def test_correction_removes_a_biased_judges_bias() -> None:
    rng = np.random.default_rng(5)
    human = (rng.random(400) < 0.3).astype(int)
    judge = _judge(human, q0=0.6, q1=0.95, rng=rng)  # says "1" far too often: naive is biased
    [res] = analyse(human, {"j": judge}, m=40, splits=100, seed=1)
    assert res.rates.youden_j > 0.4
    assert res.splits.refused == 0
    naive_bias = judge.mean() - human.mean()
    assert naive_bias > 0.2
    assert abs(res.splits.rg_bias) < naive_bias / 4
    assert res.splits.rg_coverage > res.splits.naive_coverage


def test_cache_round_trip_and_refuses_a_foreign_file(tmp_path) -> None:
    cache = VerdictCache.open(tmp_path / "out", model="m", prompt="p", max_chars=10)
    cache.add({3: ("k3", 0.7, 0.4), 8: ("k8", 0.2, 0.9)})
    again = VerdictCache.open(tmp_path / "out", model="m", prompt="p", max_chars=10)
    assert again.get(3, "k3") == (0.7, 0.4)
    assert again.get(3, "other text") is None  # the pair's text changed: not reused
    assert again.get(5, "k5") is None
    foreign = cache.path
    foreign.write_text(json.dumps({"pair": 1}) + "\n")
    before = foreign.read_bytes()
    with pytest.raises(HarnessUsageError, match="not written by"):
        VerdictCache.open(tmp_path / "out", model="m", prompt="p", max_chars=10)
    assert foreign.read_bytes() == before
