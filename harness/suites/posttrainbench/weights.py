"""PostTrainBench's aggregation (paper eq. 1): benchmark weights and the weighted score.

s_i is an agent's score on benchmark i averaged over base models (runs averaged first);
w_i = 1 / (s_i^instruct - s_i^base), with both means over the instruct and the base models;
the weights are normalised to sum to 1, and the score is sum_i w_i * s_i. Hard-to-improve
benchmarks, where instruct models gain little over their bases, weigh more.

`PAPER_FACTORS` are the authors' `scripts/factors.json`; `PAPER_BASELINES` the zero-shot
scores of spec §3 (fractions, from the authors' published result files), from which
`benchmark_weights` recomputes those factors (tests/suites/posttrainbench/test_golden.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PAPER_BENCHMARKS = (
    "aime2025",
    "arenahardwriting",
    "bfcl",
    "gpqamain",
    "gsm8k",
    "healthbench",
    "humaneval",
)

PAPER_FACTORS: Mapping[str, float] = {
    "aime2025": 0.226536549919078,
    "arenahardwriting": 0.0903518275042778,
    "bfcl": 0.0746078457817324,
    "gpqamain": 0.22462215653948,
    "gsm8k": 0.0935882347031865,
    "healthbench": 0.184144830733019,
    "humaneval": 0.106148554819225,
}

# instruct model -> its base model, the paper's four pairs
PAPER_MODELS: Mapping[str, str] = {
    "Qwen3-1.7B": "Qwen3-1.7B-Base",
    "Qwen3-4B": "Qwen3-4B-Base",
    "SmolLM3-3B": "SmolLM3-3B-Base",
    "gemma-3-4b-it": "gemma-3-4b-pt",
}


@dataclass(frozen=True, slots=True)
class BenchmarkWeights:
    """Normalised weights of eq. 1 and what they were made from.

    Attributes:
        weights: Benchmark -> normalised weight (they sum to 1).
        instruct: Benchmark -> mean instruct score s^instruct (a fraction).
        base: Benchmark -> mean base score s^base.

    """

    weights: Mapping[str, float]
    instruct: Mapping[str, float]
    base: Mapping[str, float]

    def summary(self) -> str:
        """One line per benchmark: weight, instruct and base means."""
        return "\n".join(
            f"{b}: w={w:.6f} (instruct {self.instruct[b]:.4f}, base {self.base[b]:.4f})"
            for b, w in self.weights.items()
        )


def mean_over_models(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-benchmark mean over models (each row: benchmark -> score)."""
    if not rows:
        raise ValueError("mean_over_models needs at least one row")
    keys = list(rows[0])
    for row in rows:
        if set(row) != set(keys):
            raise ValueError(f"rows name different benchmarks: {sorted(row)} vs {sorted(keys)}")
    return {k: sum(float(r[k]) for r in rows) / len(rows) for k in keys}


def benchmark_weights(instruct: Mapping[str, float], base: Mapping[str, float]) -> BenchmarkWeights:
    """Eq. 1's normalised weights from mean instruct and base scores per benchmark.

    Raises:
        ValueError: A benchmark where instruct does not beat base (its weight is undefined or
            negative), or the two name different benchmarks.

    """
    if set(instruct) != set(base):
        raise ValueError(f"instruct and base name different benchmarks: {instruct} vs {base}")
    raw: dict[str, float] = {}
    for name in instruct:
        gap = float(instruct[name]) - float(base[name])
        if not gap > 0:
            raise ValueError(
                f"benchmark {name!r}: instruct {instruct[name]:.4f} does not beat base "
                f"{base[name]:.4f}, so its weight 1/(instruct - base) is undefined"
            )
        raw[name] = 1.0 / gap
    total = sum(raw.values())
    return BenchmarkWeights({k: v / total for k, v in raw.items()}, dict(instruct), dict(base))


def weighted_score(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Sum_i w_i * s_i over the weights' benchmarks; nan when a benchmark has no score."""
    missing = [b for b in weights if b not in scores]
    if missing:
        return math.nan
    return sum(float(weights[b]) * float(scores[b]) for b in weights)


def paper_weights() -> BenchmarkWeights:
    """The weights recomputed from spec §3's zero-shot tables (equal to `PAPER_FACTORS`)."""
    instruct = mean_over_models([PAPER_BASELINES[m] for m in PAPER_MODELS])
    base = mean_over_models([PAPER_BASELINES[b] for b in PAPER_MODELS.values()])
    return benchmark_weights(instruct, base)


def _row(*values: float) -> dict[str, float]:
    return dict(zip(PAPER_BENCHMARKS, values, strict=True))


# zero-shot scores per model, full precision (authors' `aggregated_baseline.csv`)
PAPER_BASELINES: Mapping[str, Mapping[str, float]] = {
    "Qwen3-1.7B": _row(0.26666666666666666, 0.5, 0.94, 0.3549107142857143,
                       0.8847611827141774, 0.44918867035528026, 0.6890243902439024),
    "Qwen3-1.7B-Base": _row(0.0, 0.009142053445850914, 0.0, 0.140625,
                            0.12661106899166036, 0.07537565969807473, 0.07926829268292683),
    "Qwen3-4B": _row(0.5333333333333333, 0.8683943089430894, 0.95, 0.44642857142857145,
                     0.9378316906747536, 0.5272399437524256, 0.774390243902439),
    "Qwen3-4B-Base": _row(0.03333333333333333, 0.03417533432392273, 0.0, 0.13392857142857142,
                          0.4184988627748294, 0.13383521639663787, 0.36585365853658536),
    "SmolLM3-3B": _row(0.26666666666666666, 0.492, 0.84, 0.3325892857142857,
                       0.8218347232752085, 0.2957717718639611, 0.7012195121951219),
    "SmolLM3-3B-Base": _row(0.03333333333333333, 0.004225352112676056, 0.0, 0.049107142857142856,
                            0.21076573161485973, 0.0, 0.06097560975609756),
    "gemma-3-4b-it": _row(0.1, 0.948, 0.67, 0.31473214285714285,
                          0.8354814253222138, 0.46063396051286026, 0.6951219512195121),
    "gemma-3-4b-pt": _row(0.0, 0.0028530670470756064, 0.06, 0.015625,
                          0.06141015921152388, 0.17039403723633986, 0.006097560975609756),
}  # fmt: skip
