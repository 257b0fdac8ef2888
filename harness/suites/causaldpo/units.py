"""The spec's unit vectors (specs/causaldpo.md §3), computed by this suite's library.

Acceptance check 1 (§5): each holds to 1e-6, S-DPO with one negative equals DPO to 1e-7, and
CausalDPO with K = 1 and λ = 0 equals DPO on the same batch. The report recomputes them, so a
log's claims say whether the library it was read with passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from harness.suites.causaldpo import losses, metrics


@dataclass(frozen=True)
class UnitCheck:
    """One unit vector: what the library gives against the spec's value."""

    name: str  # what is computed
    value: float  # the library's value
    expected: float  # the spec's value
    tol: float  # absolute tolerance

    @property
    def ok(self) -> bool:
        """Whether the value is within the tolerance."""
        return abs(self.value - self.expected) <= self.tol


def _t(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    d_w, d_l, feats = (torch.randn(*shape, generator=g, dtype=torch.float64)
                       for shape in ((64,), (64,), (64, 16)))  # fmt: skip
    return d_w * 3, d_l * 3, feats


def unit_checks() -> tuple[UnitCheck, ...]:
    """Every §3 unit vector and the two equalities of check 1."""
    dpo = losses.dpo_loss
    q = losses.soft_assign(_t(0, 0)[None], _t(0, 0, 3, 4).reshape(2, 2))[0]
    top2 = np.array([[0, 1], [0, 2], [0, 1], [3, 4]])
    d_w, d_l, feats = _batch()
    causal = losses.causal_dpo_loss(d_w, d_l, torch.ones(64, 1, dtype=torch.float64), feats,
                                    beta=0.1, lam=0.0).total  # fmt: skip
    sdpo_one = losses.sdpo_loss(d_w, d_l[:, None], 0.1)
    return (
        UnitCheck("DPO, β 0.1, Δ_w 0.5, Δ_l −0.5", float(dpo(_t(0.5), _t(-0.5), 0.1)),
                  0.644397, 1e-6),
        UnitCheck("DPO, β 1", float(dpo(_t(0.5), _t(-0.5), 1.0)), 0.313262, 1e-6),
        UnitCheck("S-DPO, β 0.1, Δ_l ∈ {−0.5, 0, 1}",
                  float(losses.sdpo_loss(_t(0.5), _t(-0.5, 0, 1)[None], 0.1)), 1.362856, 1e-6),
        UnitCheck("clamp: Δ_w 30, Δ_l −30 = softplus(−2)", float(dpo(_t(30), _t(-30), 0.1)),
                  0.126928, 1e-6),
        UnitCheck("soft assignment q_1 of (0,0) to (0,0), (3,4)", float(q[0]), 0.993307, 1e-6),
        UnitCheck("soft assignment q_2", float(q[1]), 0.006693, 1e-6),
        UnitCheck("single-point MMD (0,0) vs (1,1), σ 1",
                  float(losses.single_point_mmd(_t(0, 0), _t(1, 1))), 2 - 2 / math.e, 1e-6),
        *(UnitCheck(f"NDCG@10 at r = {r}", metrics.ndcg(np.array([r]), 10), v, 1e-6)
          for r, v in ((0, 1.0), (1, 0.630930), (9, 0.289065), (10, 0.0))),
        UnitCheck("ORRatio@2 of [A,B],[A,C],[A,B],[D,E]", metrics.or_ratio(top2), 0.75, 1e-12),
        UnitCheck("S-DPO with one negative − DPO", float(sdpo_one - dpo(d_w, d_l, 0.1)), 0.0,
                  1e-7),
        UnitCheck("CausalDPO (K 1, λ 0) − DPO, same batch", float(causal - dpo(d_w, d_l, 0.1)),
                  0.0, 1e-7),
    )  # fmt: skip
