"""`local/l2a-recall`: a model built with L2A layers, served like any other `local/` model.

The checkpoint is one `l2a-recall` run's (`-M variant=l2a lam=1e-5 seed=0 preset=quick` by
default), trained on first use and then kept under $HARNESS_CACHE_DIR/l2a. The prompt is a recall
sequence written as token names (`k3 v17 f2 ...`, as the `l2a-queries` task writes it); the
completion names the predicted value at each of the trailing key tokens (the queries). Decoding
runs token by token through the sliding-window and global KV caches (`harness.models.l2a.
inference`). With `-M prune=0.02` the global attention of layers routing under 2% of the tokens
of 64 held-out calibration sequences is pruned first. Each output's metadata carries the routing
per layer and the KV-cache bytes held against a dense model's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import torch
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage

from harness.errors import HarnessUsageError
from harness.models.l2a.inference import (
    L2ACache,
    decode,
    kv_cache_bytes,
    prune_global_layers,
    routing_rates,
)
from harness.models.l2a.model import VARIANTS
from harness.models.l2a.recall import N_KEYS, parse, recall_batch, render

NAME = "l2a-recall"


class L2ARecallLocal:
    """Loads (or trains) one run's checkpoint and answers recall prompts through the caches."""

    def __init__(
        self, seed: int = 0, variant: str = "l2a", lam: float = 1e-5, preset: str = "quick",
        prune: float = 0.0,
    ) -> None:  # fmt: skip
        from harness.models.l2a.config import PRESETS, run_spec
        from harness.models.l2a.train import load_or_train

        if variant not in VARIANTS:
            raise HarnessUsageError(
                f"local/{NAME}: variant must be one of {', '.join(VARIANTS)}, got {variant!r}"
            )
        if preset not in PRESETS:
            raise HarnessUsageError(f"local/{NAME}: preset must be one of {', '.join(PRESETS)}")
        if not 0.0 <= float(prune) <= 1.0:
            raise HarnessUsageError(f"local/{NAME}: prune must be a share in [0, 1], got {prune}")
        lam = float(lam) if variant == "l2a" else 0.0
        self.run = run_spec(variant, lam, int(seed), PRESETS[preset])
        self.model, self.summary = load_or_train(self.run)
        self.pruned: tuple[int, ...] = ()
        if float(prune) > 0:
            gen = torch.Generator().manual_seed(3_000_017)  # calibration sequences, held out
            calib = [recall_batch(64, self.run.seq_len, self.run.pairs, gen).tokens]
            self.pruned = prune_global_layers(
                self.model, routing_rates(self.model, calib), float(prune)
            ).pruned
        self.lock = threading.Lock()  # one decode at a time: the model is shared

    def answer(self, prompt: list[int]) -> tuple[list[int], dict[str, Any]]:
        """Predicted values at the trailing key tokens, and what decoding did."""
        queries = 0
        while queries < len(prompt) and prompt[len(prompt) - 1 - queries] < N_KEYS:
            queries += 1
        if queries == 0:
            raise ValueError(f"local/{NAME}: the prompt must end with key tokens (k0-k23)")
        cache = L2ACache()
        with self.lock, torch.no_grad():
            out = decode(self.model, torch.tensor([prompt]), cache)
        values = out.logits[0, -queries:].argmax(-1).tolist()
        kept = sum(b.global_enabled for b in self.model.blocks)
        kv = kv_cache_bytes(self.model.cfg, len(prompt), kept)
        meta = {
            "routed_per_layer": out.routed[0].float().mean(0).tolist(),
            "pruned_layers": list(self.pruned),
            "kv_bytes": cache.nbytes(),
            "kv_bytes_dense": kv.dense,
            "kv_saved": 1.0 - cache.nbytes() / kv.dense,
        }
        return values, meta

    async def generate(self, messages: list[ChatMessage], model_name: str) -> ModelOutput:
        """Answer the last user message."""
        text = next((m.text for m in reversed(messages) if m.role == "user"), "")
        try:
            prompt = parse(text)
        except ValueError as ex:
            raise ValueError(f"local/{NAME}: {ex}") from None
        values, meta = await asyncio.to_thread(self.answer, prompt)
        out = ModelOutput.from_content(model=model_name, content=render(values))
        out.usage = ModelUsage(input_tokens=len(prompt), output_tokens=len(values),
                               total_tokens=len(prompt) + len(values))  # fmt: skip
        out.metadata = {"l2a": meta}
        return out
