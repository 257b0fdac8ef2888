"""The team model's presets and the training config each preset gives.

The `team` suite and `local/team-moe` both read them from here; importing this module does not
import torch.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # the spec's measured CPU setting (§6): d = 128, 4 layers, 16 experts top-2, L = 8
    "quick": dict(steps=2400, d_model=128, n_layer=4, n_expert=16, d_expert=128, n_test=300),
    # a smaller model for tests and smoke runs
    "tiny": dict(steps=300, d_model=64, n_layer=2, n_expert=8, d_expert=64, n_test=30),
}


def train_config(seed: int, settings: dict[str, Any]):
    """The TrainConfig of a preset's settings."""
    from harness.models.team.model import MoeConfig
    from harness.models.team.train import TrainConfig

    model = MoeConfig(d_model=settings["d_model"], n_layer=settings["n_layer"],
                      n_expert=settings["n_expert"], d_expert=settings["d_expert"])  # fmt: skip
    return TrainConfig(seed=seed, steps=settings["steps"], model=model)
