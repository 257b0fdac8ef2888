"""Tiny language models for the provenance suite: a causal transformer with a KV cache, and a GRU.

Both read token ids (B, T) and return next-token logits (B, T, V); both decode incrementally
(`start` on a prefix, then `step` one token at a time) so that generating a batch of texts
costs one position per step. The GRU is the suite's "unknown architecture" student: the proxy
that ADFP perturbs with is a transformer. Shapes and sizes are ours (specs/provenance.md §5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

Arch = Literal["transformer", "gru"]


@dataclass(frozen=True)
class LMConfig:
    """A tiny language model's shape.

    Attributes:
        arch: transformer or gru.
        vocab: Vocabulary size.
        d_model: Width.
        n_layer: Blocks (transformer) or stacked GRU layers.
        n_head: Attention heads (transformer).
        max_len: Longest sequence a transformer reads (learned positions).

    """

    arch: Arch = "transformer"
    vocab: int = 256
    d_model: int = 128
    n_layer: int = 2
    n_head: int = 4
    max_len: int = 264

    def __post_init__(self) -> None:
        """Refuse a shape that cannot be built."""
        if self.arch not in ("transformer", "gru"):
            raise ValueError(f"arch must be transformer or gru, got {self.arch!r}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_head {self.n_head}")


class Block(nn.Module):
    """Pre-norm attention and MLP, with an optional cache of past keys and values."""

    def __init__(self, cfg: LMConfig) -> None:
        """Layers of one block."""
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))  # fmt: skip

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Map x (B, T, d) to (B, T, d); returns the keys and values including the past ones."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, nh, past + T, hs)
            v = torch.cat([cache[1], v], dim=2)
        causal = cache is None and t > 1
        if cache is not None and t > 1:
            raise ValueError("a cached step reads one token at a time")
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, nh, T, hs)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), (k, v)


class TinyLM(nn.Module):
    """A transformer or GRU language model over a small vocabulary."""

    def __init__(self, cfg: LMConfig) -> None:
        """Embeddings, body and head for `cfg`."""
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        if cfg.arch == "transformer":
            self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        else:
            self.gru = nn.GRU(cfg.d_model, cfg.d_model, cfg.n_layer, batch_first=True)
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Map tokens (B, T) to next-token logits (B, T, V)."""
        logits, _ = self._run(tokens, None, 0)
        return logits

    def _run(self, tokens: torch.Tensor, state: Any, offset: int) -> tuple[torch.Tensor, Any]:
        x = self.embed(tokens)  # (B, T, d)
        if self.cfg.arch == "gru":
            y, hidden = self.gru(x, state)  # (B, T, d)
            return self.head(self.ln(y)), hidden
        t = tokens.shape[1]
        if offset + t > self.cfg.max_len:
            raise ValueError(f"sequence of {offset + t} tokens exceeds max_len {self.cfg.max_len}")
        x = x + self.pos(torch.arange(offset, offset + t, device=tokens.device))
        caches = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if state is None else state[i])
            caches.append(kv)
        return self.head(self.ln(x)), caches

    @torch.no_grad()
    def start(self, prefix: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Read a prefix (B, P): the next-token logits (B, V) and the decoding state."""
        logits, state = self._run(prefix, None, 0)
        return logits[:, -1], (state, prefix.shape[1])

    @torch.no_grad()
    def step(self, state: Any, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Append one token per row (B,): the next logits (B, V) and the new state."""
        inner, offset = state
        logits, inner = self._run(tokens[:, None], inner, offset)
        return logits[:, -1], (inner, offset + 1)


def train_lm(
    model: TinyLM,
    tokens: torch.Tensor,
    loss_mask: torch.Tensor | None,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    after_epoch: Any = None,
) -> list[float]:
    """Next-token training with AdamW; the loss counts targets where `loss_mask` (B, T) is set.

    `loss_mask[:, t]` says whether token t is a target (t >= 1). `after_epoch(epoch, model)` is
    called after each epoch (the 1-epoch student is the 3-epoch run's first checkpoint).
    Returns the mean loss of each epoch.
    """
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    targets_ok = torch.ones_like(tokens, dtype=torch.bool) if loss_mask is None else loss_mask
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(tokens.shape[0], generator=gen)
        total, count = 0.0, 0
        for start in range(0, tokens.shape[0], batch_size):
            batch = tokens[order[start : start + batch_size]]
            ok = targets_ok[order[start : start + batch_size], 1:]
            logits = model(batch[:, :-1])  # (B, T-1, V)
            loss_all = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
            loss = (loss_all * ok).sum() / ok.sum().clamp(min=1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            total += float(loss.detach()) * int(ok.sum())
            count += int(ok.sum())
        losses.append(total / max(count, 1) if count else math.nan)
        if after_epoch is not None:
            model.eval()
            after_epoch(epoch, model)
    model.eval()
    return losses
