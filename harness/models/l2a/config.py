"""The l2a model's presets and the training run each (variant, λ′, seed, preset) gives.

The `l2a-recall` and `l2a-queries` suites and `local/l2a-recall` all read them from here;
importing this module does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.models.l2a.train import RecallRun

PRESETS: dict[str, dict[str, Any]] = {
    "quick": dict(seq_len=128, window=16, n_layer=2, d_model=64, n_head=4, steps=1200),
    "tiny": dict(seq_len=64, window=8, n_layer=2, d_model=64, n_head=4, steps=500, n_test=512),
    "paper": dict(seq_len=512, window=32, n_layer=4, d_model=128, n_head=4, steps=3000),
}


def run_spec(variant: str, lam: float, seed: int, settings: dict[str, Any]) -> RecallRun:
    """The RecallRun of one sample."""
    from harness.models.l2a.train import RecallRun

    return RecallRun(variant=variant, lam=lam, seed=seed, **settings)
