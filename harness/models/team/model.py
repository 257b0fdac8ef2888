"""A tiny block-diffusion MoE transformer (specs/team.md §5-6; the model is our construction).

- Block-causal attention with rotary positions (as in SDAR's Qwen3 layout; learned absolute
  embeddings learned `reverse` far slower in the CPU budget): a token sees every earlier block
  and its own block both ways.
- MoE feed-forward: softmax over all experts, top-k, renormalised (`norm_topk_prob`), SiLU
  expert MLPs computed grouped by expert (`harness.kernels.grouped_experts`), and a Switch-style
  load-balancing loss E·Σ_e f_e·P_e during training.
- Decoding runs on rows: any set of (token, position, group) rows over a KV cache of finished
  blocks. A row attends to the whole cache and to the rows of its own group (TEAM's candidates
  are groups). A per-layer `MoeControl` lets a decoder reuse stored MoE outputs for some rows
  (TEAM's delayed caching) and restrict others to a set of experts (limited activation); each
  MoE layer reports the experts it used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from harness.kernels.grouped_experts import grouped_experts
from harness.models.rotary import rotary


@dataclass(frozen=True)
class MoeConfig:
    """Shape of the model (defaults: the spec's measured CPU setting, §6)."""

    vocab: int = 18
    seq_len: int = 32
    block: int = 8  # block length L
    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_expert: int = 16
    top_k: int = 2
    d_expert: int = 128  # hidden width of each expert MLP

    def __post_init__(self) -> None:
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} must be a multiple of n_head {self.n_head}")
        if not 1 <= self.top_k <= self.n_expert:
            raise ValueError(f"top_k {self.top_k} must be in 1..n_expert {self.n_expert}")
        if self.seq_len % self.block:
            raise ValueError(f"seq_len {self.seq_len} must be a multiple of block {self.block}")


@dataclass
class MoeControl:
    """What a decoder asks of one MoE layer for one forward over R rows.

    cached: (R,) bool, rows whose MoE output is taken from `stored` (no routing, no experts).
    stored: (R, d) the outputs to reuse for cached rows (other rows ignored).
    cold: (R,) bool, rows that may only use experts that non-cold, non-cached rows selected.
    """

    cached: Tensor | None = None
    stored: Tensor | None = None
    cold: Tensor | None = None


@dataclass
class MoeStats:
    """What one MoE layer did in one forward."""

    experts: set[int] = field(default_factory=set)  # distinct experts with non-zero weight
    calls: int = 0  # (row, expert) pairs computed
    rows: int = 0  # rows that ran the router
    cold_violations: int = 0  # cold rows given an expert outside `necessary` (must be 0)


class MoeFFN(nn.Module):
    """Softmax-then-top-k routing over SiLU expert MLPs."""

    def __init__(self, cfg: MoeConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.router = nn.Linear(cfg.d_model, cfg.n_expert, bias=False)
        self.w1 = nn.Parameter(torch.randn(cfg.n_expert, cfg.d_model, cfg.d_expert) * 0.02)
        self.w2 = nn.Parameter(torch.randn(cfg.n_expert, cfg.d_expert, cfg.d_model) * 0.02)
        self.aux_loss: Tensor | None = None  # load-balancing loss of the last training forward

    def route(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Router probabilities (N, E), top-k ids (N, k) and renormalised weights (N, k)."""
        probs = F.softmax(self.router(x).float(), dim=-1)
        w, ids = probs.topk(self.cfg.top_k, dim=-1)
        return probs, ids, (w / w.sum(-1, keepdim=True)).to(x.dtype)

    def forward(
        self, x: Tensor, control: MoeControl | None = None, stats: MoeStats | None = None
    ) -> Tensor:
        """MoE output for rows x (N, d); training also sets `aux_loss`."""
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        n = x.shape[0]
        cached = control.cached if control is not None and control.cached is not None else None
        live = ~cached if cached is not None else torch.ones(n, dtype=torch.bool, device=x.device)
        xs = x[live]
        probs, ids, w = self.route(xs)
        if control is not None and control.cold is not None:
            ids, w = self._limit(probs, ids, w, control.cold[live], stats)
        if self.training:
            frac = (
                torch.zeros(self.cfg.n_expert, device=x.device).scatter_add_(
                    0, ids.reshape(-1), torch.ones(ids.numel(), device=x.device)
                )
                / ids.numel()
            )
            self.aux_loss = self.cfg.n_expert * (frac * probs.mean(0)).sum()
        out = torch.zeros_like(x)
        out[live] = grouped_experts(xs, ids, w, self.w1, self.w2)
        if cached is not None and bool(cached.any()):
            out[cached] = control.stored[cached].to(x.dtype)
        if stats is not None:
            used = ids[w > 0]
            stats.experts |= set(used.tolist())
            stats.calls += int(used.numel())
            stats.rows += int(xs.shape[0])
        return out.reshape(shape)

    def _limit(
        self, probs: Tensor, ids: Tensor, w: Tensor, cold: Tensor, stats: MoeStats | None
    ) -> tuple[Tensor, Tensor]:
        """Limited activation: cold rows re-take top-k among the experts the others need."""
        if not bool(cold.any()) or bool(cold.all()):
            return ids, w  # no cold rows, or nobody to define `necessary` (ours: route freely)
        necessary = torch.zeros(self.cfg.n_expert, dtype=torch.bool, device=probs.device)
        necessary[ids[~cold].reshape(-1)] = True
        limited = probs[cold] * necessary  # zero outside `necessary`
        lw, lids = limited.topk(self.cfg.top_k, dim=-1)
        total = lw.sum(-1, keepdim=True)
        lw = torch.where(total > 0, lw / total.clamp_min(1e-30), lw)  # surplus experts: weight 0
        ids, w = ids.clone(), w.clone()
        ids[cold], w[cold] = lids, lw.to(w.dtype)
        if stats is not None:
            outside = ~necessary[lids] & (lw > 0)
            stats.cold_violations += int(outside.sum())
        return ids, w


class Attention(nn.Module):
    """Multi-head attention with rotary positions over the cache plus the current rows."""

    def __init__(self, cfg: MoeConfig) -> None:
        super().__init__()
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.n_head = cfg.n_head

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        positions: Tensor,
        past: tuple[Tensor, Tensor] | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Attend: x (B, T, d) at `positions` (T,), mask (T, P+T) True where allowed.

        Returns the output and this step's (k, v), keys already rotated, for a cache.
        """
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        q, k = rotary(q, positions), rotary(k, positions)
        kv = (k, v)
        if past is not None:
            k = torch.cat([past[0].expand(b, -1, -1, -1), k], dim=2)
            v = torch.cat([past[1].expand(b, -1, -1, -1), v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, c)), kv


class Block(nn.Module):
    """Pre-norm attention then pre-norm MoE."""

    def __init__(self, cfg: MoeConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.moe = MoeFFN(cfg)


class BlockDiffusionMoE(nn.Module):
    """Token and position embeddings, MoE blocks, and a head over the vocabulary."""

    def __init__(self, cfg: MoeConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def block_causal_mask(self, t: int, device: torch.device) -> Tensor:
        """(t, t) True where position i may see j: block(j) <= block(i)."""
        blk = torch.arange(t, device=device) // self.cfg.block
        return blk[None, :] <= blk[:, None]

    def forward(self, idx: Tensor) -> tuple[Tensor, Tensor]:
        """Training forward: (B, T) tokens -> logits (B, T, V) and the summed aux loss."""
        t = idx.shape[1]
        x = self.tok(idx)
        positions = torch.arange(t, device=idx.device)
        mask = self.block_causal_mask(t, idx.device)
        aux = x.new_zeros(())
        for blk in self.blocks:
            x = x + blk.attn(blk.ln1(x), mask, positions)[0]
            x = x + blk.moe(blk.ln2(x))
            if blk.moe.aux_loss is not None:
                aux = aux + blk.moe.aux_loss
        return self.head(self.ln_f(x)), aux

    def prefill(self, idx: Tensor) -> list[tuple[Tensor, Tensor]]:
        """KV cache (per layer (k, v), each (1, heads, P, hd)) of whole blocks `idx` (P,)."""
        cache: list[tuple[Tensor, Tensor]] = []
        if idx.numel() == 0:
            return [self._empty_kv(idx.device) for _ in self.blocks]
        x = self.tok(idx)[None]
        positions = torch.arange(idx.numel(), device=idx.device)
        mask = self.block_causal_mask(idx.numel(), idx.device)
        for blk in self.blocks:
            a, kv = blk.attn(blk.ln1(x), mask, positions)
            cache.append(kv)
            x = x + a
            x = x + blk.moe(blk.ln2(x))
        return cache

    def _empty_kv(self, device: torch.device) -> tuple[Tensor, Tensor]:
        hd = self.cfg.d_model // self.cfg.n_head
        z = torch.zeros(1, self.cfg.n_head, 0, hd, device=device)
        return z, z

    def rows(
        self,
        tokens: Tensor,
        positions: Tensor,
        groups: Tensor,
        cache: list[tuple[Tensor, Tensor]],
        controls: list[MoeControl] | None = None,
        stats: list[MoeStats] | None = None,
    ) -> tuple[Tensor, list[Tensor], list[tuple[Tensor, Tensor]]]:
        """Decode-time forward of R rows over the cache.

        Args:
            tokens: (R,) token ids.
            positions: (R,) absolute positions (TEAM's candidates share them).
            groups: (R,) group ids; a row sees the cache and the rows of its own group.
            cache: per layer (k, v) of the finished prefix, read only.
            controls: per layer MoE control (caching, limited activation), or None.
            stats: per layer, filled with what the MoE layer did.

        Returns:
            logits (R, V), per layer the MoE outputs (R, d), per layer this forward's (k, v).

        """
        x = self.tok(tokens)[None]  # (1, R, d); positions enter through the rotary keys
        past_len = cache[0][0].shape[2]
        own = groups[:, None] == groups[None, :]  # (R, R)
        mask = torch.cat([own.new_ones(len(tokens), past_len), own], dim=1)
        moe_out: list[Tensor] = []
        kvs: list[tuple[Tensor, Tensor]] = []
        for i, blk in enumerate(self.blocks):
            a, kv = blk.attn(blk.ln1(x), mask, positions, cache[i])
            kvs.append(kv)
            x = x + a
            m = blk.moe(
                blk.ln2(x)[0],
                controls[i] if controls else None,
                stats[i] if stats is not None else None,
            )
            moe_out.append(m)
            x = x + m[None]
        return self.head(self.ln_f(x))[0], moe_out, kvs


def param_count(model: nn.Module) -> int:
    """Number of parameters."""
    return sum(p.numel() for p in model.parameters())
