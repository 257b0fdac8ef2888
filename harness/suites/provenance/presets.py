"""The suite's presets: `quick` (the demo, minutes on 2 CPU cores) and `full` (the spec's §5 run).

Sizes and model shapes are ours (specs/provenance.md §5, reconstructed). Differences of `quick`
from `full`, all stated in the log's metadata and the docs:
- the teacher is the source itself (its exact next-token distributions), not a transformer
  trained on it;
- students are d=64 (transformer and GRU), the proxy trains 2 epochs, 2 seeds, three strengths
  per method, and the GRU student only at two strengths per method.
"""

from __future__ import annotations

from typing import Any


def _base(arch: str, d: int, layers: int, seed: int, epochs: int, texts: int = 2000) -> dict:
    return {"lm": {"arch": arch, "vocab": 256, "d_model": d, "n_layer": layers, "n_head": 4,
                   "max_len": 264},
            "seed": seed, "texts": texts, "length": 128, "epochs": epochs, "lr": 3e-3,
            "batch_size": 32}  # fmt: skip


_COMMON = {"source_seed": 0, "successors": 4, "seed": 0}

DETECT: dict[str, dict[str, Any]] = {
    "quick": {**_COMMON, "teacher": "source", "teacher_spec": None, "texts": 1000,
              "length": 256, "fpr_scored": 200, "fpr_gammas": [0.25, 0.5], "fixed_keys": 40,
              "ns": [25, 50, 100, 200], "alpha": 1e-3, "gammas": [0.25, 0.5, 0.75],
              "deltas": [0.5, 1.0, 2.0, 4.0], "calib_texts": 200, "calib_n": 100,
              "calib_masks": 64, "select_gammas": [0.25, 0.5, 0.75], "target": 0.9},
}  # fmt: skip
DETECT["full"] = {**DETECT["quick"], "teacher": "trained",
                  "teacher_spec": _base("transformer", 128, 2, 0, 8, texts=4000)}  # fmt: skip

DISTILL: dict[str, dict[str, Any]] = {
    "quick": {**_COMMON, "teacher": "source", "teacher_spec": None,
              "proxy_spec": _base("transformer", 96, 2, 1, 2),
              "students": {"transformer": _base("transformer", 64, 1, 2, 3),
                           "gru": _base("gru", 64, 1, 2, 3)},
              "prompts": 1000, "fresh_prompts": 200, "prompt_len": 8, "continuation": 128,
              "gamma": 0.5, "epochs": 3, "lr": 1e-3, "batch_size": 32, "fpr_alpha": 0.01,
              "fpr_texts": 500, "fpr_length": 256, "fpr_keys": 1000, "other_keys": 50,
              "other_traces": 200, "fpr_delta": 2.0, "kl_targets": [0.02, 0.05, 0.1]},
}  # fmt: skip
DISTILL["full"] = {
    **DISTILL["quick"], "teacher": "trained", "teacher_spec": DETECT["full"]["teacher_spec"],
    "proxy_spec": _base("transformer", 96, 2, 1, 4),
    "students": {"transformer": _base("transformer", 128, 1, 2, 4),
                 "gru": _base("gru", 128, 1, 2, 4)},
}  # fmt: skip

# (method, strength) sweeps and seeds per preset and student architecture
SWEEPS: dict[str, dict[str, list[tuple[str, float]]]] = {
    "quick": {
        "transformer": [("control", 0.0), ("kgw", 0.5), ("kgw", 1.0), ("kgw", 2.0),
                        ("adfp", 2.0), ("adfp", 4.0), ("adfp", 8.0)],
        "gru": [("control", 0.0), ("kgw", 0.5), ("kgw", 1.0), ("adfp", 2.0), ("adfp", 4.0)],
    },
    "full": {
        arch: [("control", 0.0)] + [("kgw", d) for d in (0.5, 1.0, 2.0, 3.0, 4.0)]
        + [("adfp", float(2**i)) for i in range(1, 8)]
        for arch in ("transformer", "gru")
    },
}  # fmt: skip
SEEDS = {"quick": 2, "full": 3}
PRESETS = tuple(DETECT)

RECONSTRUCTED = (
    "power model, parameter selection, the synthetic source, model shapes, presets and the "
    "logit-space reading of ADFP are ours (specs/provenance.md §2, §4, §5); the sampling rule, "
    "hash-based green lists, Hoeffding statistic and p-value follow ADFP's code; the quick "
    "preset uses the source itself as the teacher"
)
