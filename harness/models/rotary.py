"""Rotary position embedding (RoPE), shared by the models trained from a seed."""

from __future__ import annotations

import torch
from torch import Tensor


def rotary(x: Tensor, positions: Tensor, base: float = 10_000.0) -> Tensor:
    """Rotary position embedding of x (B, heads, T, hd) at absolute `positions` (T,)."""
    half = x.shape[-1] // 2
    freqs = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = positions.to(torch.float32)[:, None] * freqs[None, :]  # (T, hd/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
