"""A small nanoGPT-style transformer for k-parity: causal for AR, bidirectional for MD.

Tokens are the bits 0 and 1 and the mask token M = 2; every target is a bit, so the output head
has two classes. Attention on the CPU is `harness.models.small_attention` (batched matmuls,
faster than the flash kernel at these short sequences), and on CUDA the fused kernel.
Pre-LayerNorm blocks, learned positions, GELU MLP of width 4d, and nanoGPT's
initialisation: weights and embeddings N(0, 0.02), biases zero, and the two residual output
projections of each block N(0, 0.02 / sqrt(2 · n_layer)).

References:
    Huang and Mirzasoleiman, "Tuning the Implicit Regularizer of Masked Diffusion Language
    Models: Enhancing Generalization via Insights from k-Parity", arXiv 2601.22450. The model
    shape is ours (the paper's was not available); specs/k-parity.md §5-6.

"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from harness.models.small_attention import attention

MASK = 2  # the mask token; 0 and 1 are the bits


@dataclass(frozen=True)
class ParityModelConfig:
    """Shape of the parity transformer."""

    seq_len: int  # n bits plus the label
    d_model: int = 32  # width (the quick preset's, measured on 2 cores)
    n_layer: int = 2  # blocks
    n_head: int = 4  # attention heads
    causal: bool = False  # True for AR, False (bidirectional) for MD

    def __post_init__(self) -> None:
        if self.seq_len < 2:
            raise ValueError(f"seq_len must be at least 2, got {self.seq_len}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} must be a multiple of n_head {self.n_head}")


class SelfAttention(nn.Module):
    """Multi-head self-attention, causal or not."""

    def __init__(self, cfg: ParityModelConfig) -> None:
        super().__init__()
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.n_head = cfg.n_head
        self.causal = cfg.causal

    def forward(self, x: torch.Tensor, query: int | None = None) -> torch.Tensor:
        """Attend over the sequence: every position (B, T, C), or only `query` (B, 1, C)."""
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)  # (B, T, C) each
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        if query is None:
            y = attention(q, k, v, causal=self.causal)  # (B, nh, T, hs)
        else:  # one query row; causally it sees the keys up to itself, so no mask is left
            keys = query + 1 if self.causal else t
            q, k, v = q[:, :, query : query + 1], k[:, :, :keys], v[:, :, :keys]
            y = F.scaled_dot_product_attention(q, k, v)  # (B, nh, 1, hs)
        return self.proj(y.transpose(1, 2).reshape(b, y.shape[2], c))


class Block(nn.Module):
    """Pre-LayerNorm transformer block."""

    def __init__(self, cfg: ParityModelConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model),
            nn.GELU(),
            nn.Linear(4 * cfg.d_model, cfg.d_model),
        )

    def forward(self, x: torch.Tensor, query: int | None = None) -> torch.Tensor:
        """Residual attention then residual MLP, at every position or only at `query`."""
        rows = x if query is None else x[:, query : query + 1]
        x = rows + self.attn(self.ln1(x), query)
        return x + self.mlp(self.ln2(x))


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class ParityTransformer(nn.Module):
    """Token and position embeddings, blocks, and a two-way head at every position."""

    def __init__(self, cfg: ParityModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(3, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, 2)
        self.apply(_init_weights)
        for block in self.blocks:  # residual projections, scaled by depth as in nanoGPT
            for proj in (block.attn.proj, block.mlp[2]):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits over {0, 1} at every position: (B, T) tokens -> (B, T, 2)."""
        x = self._embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def logits_at(self, idx: torch.Tensor, position: int) -> torch.Tensor:
        """Logits at one position only: (B, T) tokens -> (B, 2), as `forward(idx)[:, position]`.

        The last block computes that position's row alone (its query, MLP and head), which is
        what evaluation needs: about half the cost of a full forward with two blocks.
        """
        if not -idx.shape[1] <= position < idx.shape[1]:
            raise IndexError(f"position {position} is outside a sequence of {idx.shape[1]}")
        position %= idx.shape[1]
        x = self._embed(idx)
        for block in self.blocks[:-1]:
            x = block(x)
        x = self.blocks[-1](x, position)  # (B, 1, C)
        return self.head(self.ln_f(x))[:, 0]

    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        return self.tok(idx) + self.pos(torch.arange(t, device=idx.device))  # (B, T, C)
