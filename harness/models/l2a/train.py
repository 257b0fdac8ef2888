"""One L2A recall run: train a variant from a seed, then measure recall, routing and pruning.

Training follows the spec's measured CPU setting (specs/l2a.md §6): AdamW with betas
(0.9, 0.98), lr 2e-3 on a cosine schedule with 5% linear warm-up, gradient clip 1.0, batch 32,
fresh sequences every step, loss = CE on the query positions + λ(step)·R with λ 0 for the first
10% of steps and then a linear ramp to λ′. Weight decay 0.01 (torch's default) is ours; the spec
does not give one.

Afterwards, on `n_test` fresh sequences: recall accuracy and CE at the query positions, the
routing rate of each layer overall and at query positions, then the layers routing under
`prune_threshold` are pruned, accuracy is measured again and the KV-cache bytes at T are set
against a dense model's. The checkpoint is kept under $HARNESS_CACHE_DIR/l2a, keyed by the
settings, for `local/l2a-recall`. Deterministic for a given seed and thread count.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from harness.models.l2a.inference import kv_cache_bytes, prune_global_layers
from harness.models.l2a.model import L2AConfig, L2AModel, lambda_at, sparsity_regulariser
from harness.models.l2a.recall import IGNORE, VOCAB, recall_batch
from harness.paths import cache_dir

MODEL_VERSION = 1  # part of the checkpoint key: bump when the model or training changes


@dataclass(frozen=True)
class RecallRun:
    """Everything that defines one run (defaults: the quick preset)."""

    variant: str  # full, swa or l2a
    lam: float  # λ′, the regulariser weight after the ramp (L2A only)
    seed: int
    seq_len: int = 128
    window: int = 16
    pairs: int = 8
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    steps: int = 1200
    batch: int = 32
    lr: float = 2e-3
    warmup: float = 0.05  # share of steps of linear lr warm-up
    lam_warmup: float = 0.1  # share of steps with λ = 0
    tau: float = 0.1
    leakage: float = 0.1
    weight_decay: float = 0.01
    n_test: int = 1024
    prune_threshold: float = 0.02  # prune global layers routing under this share of tokens
    log_every: int = 50

    def __post_init__(self) -> None:
        if self.lam < 0:
            raise ValueError(f"lam must be >= 0, got {self.lam}")
        if self.steps < 1 or self.batch < 1 or self.n_test < 1:
            raise ValueError("steps, batch and n_test must be at least 1")

    def model_config(self) -> L2AConfig:
        """The model of this run."""
        return L2AConfig(vocab=VOCAB, seq_len=self.seq_len, d_model=self.d_model,
                         n_layer=self.n_layer, n_head=self.n_head, window=self.window,
                         attention=self.variant, tau=self.tau,
                         leakage=self.leakage)  # type: ignore[arg-type]  # fmt: skip

    def key(self) -> str:
        """A short hash of the settings and the model version (the checkpoint's name)."""
        blob = json.dumps({**asdict(self), "version": MODEL_VERSION}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@torch.no_grad()
def evaluate(model: L2AModel, run: RecallRun, gen: torch.Generator) -> dict[str, Any]:
    """Accuracy and CE at query positions, and per-layer routing (overall, at queries)."""
    model.eval()
    correct = total = 0
    ce_sum = 0.0
    layers = len(model.blocks)
    routed = torch.zeros(layers)
    routed_q = torch.zeros(layers)
    tokens = queries = 0
    left = run.n_test
    while left > 0:
        b = recall_batch(min(128, left), run.seq_len, run.pairs, gen)
        left -= b.tokens.shape[0]
        logits, routings = model(b.tokens)
        ce_sum += float(F.cross_entropy(logits[b.query], b.targets[b.query], reduction="sum"))
        correct += int((logits[b.query].argmax(-1) == b.targets[b.query]).sum())
        total += int(b.query.sum())
        it = iter(routings)
        for i, block in enumerate(model.blocks):
            if not block.global_enabled:
                continue
            if run.variant == "full":
                mask = torch.ones_like(b.query)
            else:
                mask = next(it).routed
            routed[i] += float(mask.sum())
            routed_q[i] += float(mask[b.query].sum())
        tokens += b.tokens.numel()
        queries += int(b.query.sum())
    per_layer = (routed / tokens).tolist()
    per_layer_q = (routed_q / queries).tolist()
    return {
        "accuracy": correct / total,
        "ce": ce_sum / total,
        "routed": sum(per_layer) / layers,  # share of (token, layer) pairs with d_t = 1
        "routed_per_layer": per_layer,
        "query_routed_per_layer": per_layer_q,
    }


def train(
    run: RecallRun, progress: Callable[[int, float], None] | None = None
) -> tuple[L2AModel, dict[str, Any]]:
    """Train from scratch; return the model and the run's measurements (JSON-ready)."""
    start = time.perf_counter()
    torch.manual_seed(run.seed)
    gen = torch.Generator().manual_seed(run.seed + 1)
    model = L2AModel(run.model_config())
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr, betas=(0.9, 0.98),
                            weight_decay=run.weight_decay)  # fmt: skip
    warm = max(1, int(run.warmup * run.steps))

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, run.steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    curve: dict[str, list[float]] = {"step": [], "ce": [], "reg": [], "routed": []}
    dense_steps = 0
    for step in range(run.steps):
        b = recall_batch(run.batch, run.seq_len, run.pairs, gen)
        logits, routings = model(b.tokens)
        ce = F.cross_entropy(logits.transpose(1, 2), b.targets, ignore_index=IGNORE)
        reg = sparsity_regulariser(routings)
        loss = ce + lambda_at(step, run.steps, run.lam, run.lam_warmup) * reg
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        dense_steps += sum(r.dense for r in routings)
        if (step + 1) % run.log_every == 0 or step + 1 == run.steps:
            curve["step"].append(step + 1)
            curve["ce"].append(float(ce.detach()))
            curve["reg"].append(float(reg.detach()))
            share = [float(r.routed.float().mean()) for r in routings]
            curve["routed"].append(sum(share) / len(share) if share else float("nan"))
            if progress is not None:
                progress(step + 1, float(ce.detach()))
    test_gen = torch.Generator().manual_seed(1_000_003 + run.seed)  # fresh sequences
    before = evaluate(model, run, test_gen)
    result: dict[str, Any] = {**before, "train_seconds": time.perf_counter() - start}
    rates = tuple(before["routed_per_layer"])
    pruning = prune_global_layers(model, rates, run.prune_threshold)
    after = evaluate(model, run, torch.Generator().manual_seed(1_000_003 + run.seed))
    kept = sum(b.global_enabled for b in model.blocks)
    kv = kv_cache_bytes(model.cfg, run.seq_len, kept)
    dense_path = dense_steps / max(1, run.steps * sum(b.has_global for b in model.blocks))
    result.update(
        pruned_layers=list(pruning.pruned),
        accuracy_pruned=after["accuracy"],
        kv_bytes_dense=kv.dense,
        kv_bytes=kv.model,
        kv_saved=kv.saved,
        dense_path_share=dense_path if run.variant == "l2a" else float("nan"),
        curve=curve,
        seconds=time.perf_counter() - start,
    )
    return model, result


def checkpoint_path(run: RecallRun) -> Path:
    """Where the run's (unpruned) checkpoint is kept."""
    return cache_dir() / "l2a" / f"{run.variant}-seed{run.seed}-{run.key()}.pt"


def save(model: L2AModel, run: RecallRun, result: dict[str, Any]) -> None:
    """Keep the checkpoint with global attention restored in every layer (atomic write)."""
    path = checkpoint_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"state": model.state_dict(), "result": result, "run": asdict(run)}, tmp)
    tmp.replace(path)


def run_and_save(run: RecallRun) -> dict[str, Any]:
    """Worker entry point: train, keep the checkpoint, return the measurements."""
    model, result = train(run)
    save(model, run, result)
    return result


def load_or_train(run: RecallRun) -> tuple[L2AModel, dict[str, Any]]:
    """The kept checkpoint of `run` (eval mode, unpruned), training it on first use."""
    path = checkpoint_path(run)
    if path.is_file():
        blob = torch.load(path, weights_only=True)
        model = L2AModel(run.model_config())
        model.load_state_dict(blob["state"])
        model.eval()
        return model, {**blob["result"], "cached": True}
    model, result = train(run)
    save(model, run, result)
    for block in model.blocks:
        block.global_enabled = block.has_global
    model.eval()
    return model, {**result, "cached": False}
