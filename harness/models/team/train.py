"""Training the tiny block-diffusion MoE from a seed, and its checkpoint cache.

The objective is the spec's block-masking one (specs/team.md §5): per sequence, pick one block b
uniformly among those that hold answer tokens (EOS included; blocks of padding only are never
picked), keep earlier blocks clean, mask each answer token of b with probability
t ~ U[t_min, 1], and take (1/t)·CE on the masked tokens. Later blocks need not be dropped: the
block-causal mask keeps them out of b's logits. Prompt tokens are never masked (at decode time
they are given). Settings are the spec's measured ones (§6): batch 64, AdamW lr 2e-3, betas
(0.9, 0.98), weight decay 0.01, 100 warm-up steps then cosine to 10%, clip 1.0, load-balancing
weight 0.01, t >= 0.02. The spec trained for 540 s (about 2,400 steps); here the budget is steps,
so that a seed gives the same model on any machine with the same thread count.

Checkpoints are cached under $HARNESS_CACHE_DIR/team (default ~/.cache/harness/team), keyed by
the settings, so a later run only decodes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn import functional as F

from harness.models.team.model import BlockDiffusionMoE, MoeConfig
from harness.models.team.tasks import EOS, MASK, TASKS, training_batch

# Bumped whenever the model or the objective changes, so that no stale checkpoint is loaded.
MODEL_VERSION = 2


@dataclass(frozen=True)
class TrainConfig:
    """One training run."""

    seed: int = 0
    steps: int = 2400
    batch: int = 64
    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup: int = 100
    aux_weight: float = 0.01
    t_min: float = 0.02
    tasks: tuple[str, ...] = TASKS
    model: MoeConfig = MoeConfig()

    def key(self) -> str:
        """A short hash of every setting and the model version, naming the checkpoint."""
        blob = json.dumps({**asdict(self), "version": MODEL_VERSION}, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def block_mask_batch(
    seqs: torch.Tensor, plens: torch.Tensor, block: int, t_min: float, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs with one block per row noised, the masked positions, and each row's t.

    Returns inputs (B, T), masked (B, T) bool, t (B,).
    """
    b, length = seqs.shape
    pos = torch.arange(length)
    answer = pos[None, :] >= plens[:, None]  # (B, T): answer (and padding) positions
    first = plens // block  # the first block holding an answer token
    ends = torch.where(seqs == EOS, pos[None, :], length - 1).min(dim=1).values  # EOS position
    last = ends // block  # the last block holding an answer token (EOS included)
    pick = first + (torch.rand(b, generator=g) * (last - first + 1)).long()  # uniform in range
    in_block = (pos[None, :] // block) == pick[:, None]
    t = t_min + (1 - t_min) * torch.rand(b, generator=g)
    masked = in_block & answer & (torch.rand(b, length, generator=g) < t[:, None])
    inputs = torch.where(masked, torch.full_like(seqs, MASK), seqs)
    return inputs, masked, t


def train(
    cfg: TrainConfig, progress: Callable[[int, float], None] | None = None
) -> tuple[BlockDiffusionMoE, dict]:
    """Train from scratch; returns the model (eval mode) and a summary."""
    start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    g = torch.Generator().manual_seed(1_000 + cfg.seed)
    model = BlockDiffusionMoE(cfg.model)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0}],
        lr=cfg.lr, betas=(0.9, 0.98),
    )  # fmt: skip

    def lr_at(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))  # cosine down to 10%

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    losses = []
    for step in range(cfg.steps):
        seqs, plens = training_batch(g, cfg.batch, cfg.tasks)
        inputs, masked, t = block_mask_batch(seqs, plens, cfg.model.block, cfg.t_min, g)
        logits, aux = model(inputs)
        ce = F.cross_entropy(logits.transpose(1, 2), seqs, reduction="none")  # (B, T)
        per_row = (ce * masked).sum(1) / t / cfg.model.block
        loss = per_row.mean() + cfg.aux_weight * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress is not None and (step + 1) % 100 == 0:
            progress(step + 1, sum(losses[-100:]) / 100)
    model.eval()
    return model, {"steps": cfg.steps, "final_loss": sum(losses[-100:]) / min(100, len(losses)),
                   "seconds": time.perf_counter() - start}  # fmt: skip


def cache_dir() -> Path:
    """Where trained checkpoints are kept."""
    root = os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness"
    return Path(root) / "team"


def checkpoint_path(cfg: TrainConfig) -> Path:
    """Where the checkpoint of these settings is cached."""
    return cache_dir() / f"moe-seed{cfg.seed}-{cfg.key()}.pt"


def load_or_train(
    cfg: TrainConfig, progress: Callable[[int, float], None] | None = None
) -> tuple[BlockDiffusionMoE, dict]:
    """The cached checkpoint for these settings, training and saving it on first use."""
    path = checkpoint_path(cfg)
    if path.is_file():
        blob = torch.load(path, weights_only=True)
        model = BlockDiffusionMoE(cfg.model)
        model.load_state_dict(blob["state"])
        model.eval()
        return model, {**blob["summary"], "cached": True}
    model, summary = train(cfg, progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"state": model.state_dict(), "summary": summary, "config": asdict(cfg)}, tmp)
    tmp.replace(path)  # atomic: a killed run leaves no half-written checkpoint
    return model, {**summary, "cached": False}
