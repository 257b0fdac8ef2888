"""Attention for short sequences on the CPU: batched matmuls and an explicit softmax, by hand.

At the k-parity model's shapes (T = 13, head size 8, 1,024 sequence-heads a batch) PyTorch's CPU
flash kernel costs about 5 µs per sequence and head, forward and backward, and its softmax over a
last dimension of 13 is slower still. Two contiguous batched matmuls with the softmax written
out, and the backward written out the same way, make a whole training step 13-18% faster
(measured in one process, interleaved; `benchmarks/k_parity.py`). The result equals
`F.scaled_dot_product_attention` to float32 rounding (tested, forward and gradients). CUDA keeps
the fused kernel: `attention` dispatches.

Forward, per sequence-head with scale s = 1/sqrt(D):
    S = s · Q Kᵀ (masked above the diagonal when causal), P = softmax(S), O = P V
Backward:
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),  dQ = s · dS K,  dK = s · dSᵀ Q
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.nn import functional as F


class _SmallAttention(torch.autograd.Function):
    """softmax(s · Q Kᵀ) V on (N, T, D) tensors, with its backward written out."""

    @staticmethod
    def forward(
        ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
    ) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = torch.bmm(q, k.transpose(1, 2).contiguous()).mul_(scale)  # (N, T, T)
        if causal:
            t = s.shape[-1]
            s.masked_fill_(torch.ones(t, t, dtype=torch.bool, device=s.device).triu_(1), -math.inf)
        s.sub_(s.amax(-1, keepdim=True)).exp_()
        p = s.div_(s.sum(-1, keepdim=True))  # P, in place of S
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return torch.bmm(p, v)  # (N, T, D)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v, p = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        dv = torch.bmm(p.transpose(1, 2).contiguous(), grad_out)
        dp = torch.bmm(grad_out, v.transpose(1, 2).contiguous())
        ds = dp.sub_((dp * p).sum(-1, keepdim=True)).mul_(p).mul_(ctx.scale)
        dq = torch.bmm(ds, k)
        dk = torch.bmm(ds.transpose(1, 2).contiguous(), q)
        return dq, dk, dv, None


def small_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """Attention over (B, H, T, D) tensors by batched matmuls: (B, H, T, D) out."""
    b, h, t, d = q.shape
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must share one shape, got {q.shape}, {k.shape}, {v.shape}")
    flat = [z.reshape(b * h, t, d).contiguous() for z in (q, k, v)]
    return _SmallAttention.apply(*flat, causal).view(b, h, t, d)


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """CUDA: the fused kernel. Elsewhere: `small_attention`, the faster one at short T."""
    if q.is_cuda:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return small_attention(q, k, v, causal)
