"""L2A at inference: its two KV caches, token-by-token decoding, and pruning of global layers.

- The sliding-window cache of each layer keeps the last W tokens' keys and values.
- The global cache keeps every token's, routed or not: a later routed query may read any of
  them (specs/l2a.md §2). So L2A alone saves no KV memory; the savings come from pruning.
- Pruning switches off the global attention of layers whose routing rate (the share of tokens
  with d_t = 1, measured on sample data) is under a threshold; a pruned layer keeps only its
  window cache. Decoding then reports the cache bytes against a standard dense model that keeps
  every token in every layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch import Tensor
from torch.nn import functional as F

from harness.models.l2a.model import L2AConfig, L2AModel


@dataclass
class LayerCache:
    """One layer's keys and values, each (B, H, tokens, hd)."""

    window_k: Tensor | None = None  # the last W tokens
    window_v: Tensor | None = None
    global_k: Tensor | None = None  # every token (None in a pruned or SWA-only layer)
    global_v: Tensor | None = None

    def nbytes(self) -> int:
        """Bytes held."""
        parts = (self.window_k, self.window_v, self.global_k, self.global_v)
        return sum(t.numel() * t.element_size() for t in parts if t is not None)


@dataclass
class L2ACache:
    """Every layer's caches and the number of tokens decoded so far."""

    layers: list[LayerCache] = field(default_factory=list)
    length: int = 0

    def nbytes(self) -> int:
        """Bytes held by all layers."""
        return sum(layer.nbytes() for layer in self.layers)


@dataclass(frozen=True)
class Decoded:
    """Logits of a decoded stretch and the routing decisions taken on it."""

    logits: Tensor  # (B, T, vocab)
    routed: Tensor  # (B, T, layers) bool; False in layers without (or with pruned) global attention


def _append(cache: Tensor | None, new: Tensor, keep: int | None = None) -> Tensor:
    out = new if cache is None else torch.cat([cache, new], dim=2)
    return out if keep is None else out[:, :, -keep:]


@torch.no_grad()
def decode_step(model: L2AModel, tokens: Tensor, cache: L2ACache) -> tuple[Tensor, Tensor]:
    """One token per sequence (B,): logits (B, vocab) and routing (B, layers), caches updated.

    Global attention is computed only for the sequences whose token is routed.
    """
    cfg = model.cfg
    if not cache.layers:
        cache.layers = [LayerCache() for _ in model.blocks]
    positions = torch.tensor([cache.length], device=tokens.device)
    x = model.embed(tokens)[:, None, :]  # (B, 1, d)
    routed = torch.zeros(tokens.shape[0], len(model.blocks), dtype=torch.bool)
    for i, (block, lc) in enumerate(zip(model.blocks, cache.layers, strict=True)):
        q, k, v = block.swa.project(block.norm1(x), positions)
        lc.window_k = _append(lc.window_k, k, cfg.window)
        lc.window_v = _append(lc.window_v, v, cfg.window)
        x = x + block.swa.merge(F.scaled_dot_product_attention(q, lc.window_k, lc.window_v))
        if block.global_enabled:
            h = block.norm_g(x)
            q, k, v = block.glob.project(h, positions)
            lc.global_k = _append(lc.global_k, k)  # every token, routed or not
            lc.global_v = _append(lc.global_v, v)
            if cfg.attention == "full":
                rows = torch.ones(tokens.shape[0], dtype=torch.bool, device=x.device)
            else:
                rows = block.router(h)[:, 0, 0] >= 0  # g ≥ 0.5 ⇔ w·h ≥ 0
            if rows.any():
                a = F.scaled_dot_product_attention(q[rows], lc.global_k[rows], lc.global_v[rows])
                x = x.index_add(0, rows.nonzero()[:, 0], block.glob.merge(a))
            routed[:, i] = rows.cpu()
        x = x + block.mlp(block.norm2(x))
    cache.length += 1
    return model.head(model.norm(x))[:, 0], routed


def decode(model: L2AModel, idx: Tensor, cache: L2ACache | None = None) -> Decoded:
    """Feed tokens (B, T) one at a time through the caches (eval mode), as generation would."""
    cache = cache if cache is not None else L2ACache()
    logits, routed = [], []
    for t in range(idx.shape[1]):
        out, r = decode_step(model, idx[:, t], cache)
        logits.append(out)
        routed.append(r)
    return Decoded(torch.stack(logits, dim=1), torch.stack(routed, dim=1))


@dataclass(frozen=True)
class Pruning:
    """Which layers lost their global attention, and why."""

    rates: tuple[float, ...]  # routing rate per layer (1.0 for `full`, 0.0 without global)
    threshold: float
    pruned: tuple[int, ...]  # layer indices


@torch.no_grad()
def routing_rates(model: L2AModel, batches: Iterable[Tensor]) -> tuple[float, ...]:
    """Share of tokens with d_t = 1 per layer over `batches` of tokens (B, T), in eval mode."""
    was_training = model.training
    model.eval()
    routed = torch.zeros(len(model.blocks))
    count = 0
    for idx in batches:
        _, routings = model(idx)
        it = iter(routings)
        for i, block in enumerate(model.blocks):
            if not block.global_enabled:
                continue
            if model.cfg.attention == "full":
                routed[i] += idx.numel()
            else:
                routed[i] += float(next(it).routed.sum())
        count += idx.numel()
    model.train(was_training)
    return tuple(float(r) / max(count, 1) for r in routed)


def prune_global_layers(model: L2AModel, rates: tuple[float, ...], threshold: float) -> Pruning:
    """Switch off global attention in layers routing under `threshold` of tokens (in place)."""
    if len(rates) != len(model.blocks):
        raise ValueError(f"{len(rates)} routing rates for {len(model.blocks)} layers")
    pruned = []
    for i, (block, rate) in enumerate(zip(model.blocks, rates, strict=True)):
        if block.global_enabled and rate < threshold:
            block.global_enabled = False
            pruned.append(i)
    return Pruning(rates=tuple(rates), threshold=threshold, pruned=tuple(pruned))


@dataclass(frozen=True)
class KVBytes:
    """KV-cache bytes at one length: a dense model's against this model's."""

    length: int  # tokens cached
    dense: int  # a standard model: every token's K and V in every layer
    model: int  # this model: W tokens per layer plus every token in layers keeping global
    saved: float  # 1 − model / dense (negative when unpruned L2A holds both caches)


def kv_cache_bytes(
    cfg: L2AConfig, length: int, global_layers: int, batch: int = 1, element_size: int = 4
) -> KVBytes:
    """The cache sizes of `decode` after `length` tokens, computed from the shapes."""
    per_token = 2 * cfg.d_model * element_size * batch  # K and V over all heads
    dense = cfg.n_layer * length * per_token
    model = (cfg.n_layer * min(cfg.window, length) + global_layers * length) * per_token
    return KVBytes(length, dense, model, 1.0 - model / dense)
