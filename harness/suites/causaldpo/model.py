"""The §5 recommender (ours): a 2-layer pre-LN causal transformer over item ids and a query token.

The input is the 8 history items followed by a query token; the next-item logits come from the
last position, so a response is one token and log π(y|x) is one log-softmax entry. The pooled
state (the final layer's output averaged over positions) feeds the environment clustering.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the recommender (specs/causaldpo.md §5)."""

    items: int = 120  # vocabulary of responses; the query token is id `items`
    length: int = 9  # 8 history items + the query token
    d: int = 64  # width
    heads: int = 4  # attention heads
    layers: int = 2  # transformer blocks


class Recommender(nn.Module):
    """Logits over items and the pooled state, from a history."""

    def __init__(self, cfg: ModelConfig) -> None:
        """Embeddings, blocks, final norm and the item head."""
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.items + 1, cfg.d)
        self.pos = nn.Parameter(torch.randn(cfg.length, cfg.d) * 0.02)
        block = nn.TransformerEncoderLayer(cfg.d, cfg.heads, 4 * cfg.d, dropout=0.0,
                                           batch_first=True, norm_first=True)  # fmt: skip
        self.blocks = nn.TransformerEncoder(block, cfg.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d)
        self.head = nn.Linear(cfg.d, cfg.items)
        mask = nn.Transformer.generate_square_subsequent_mask(cfg.length)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, history: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """History (B, 8) -> logits (B, items) and pooled state (B, d)."""
        query = torch.full_like(history[:, :1], self.cfg.items)  # (B, 1)
        x = self.embed(torch.cat([history, query], dim=1)) + self.pos  # (B, T, d)
        h = self.norm(self.blocks(x, mask=self.mask, is_causal=True))  # (B, T, d)
        return self.head(h[:, -1]), h.mean(dim=1)
