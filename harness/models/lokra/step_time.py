"""Wall time of one training step with LoRA, LoKRA and LoKRA+ on a tiny Llama (specs/lokra.md).

A step is a full update: forward, task loss plus penalty, backward and an AdamW step. The model
is a randomly initialised `LlamaForCausalLM` built from a config (nothing is downloaded); each
method adapts the same copy of it, on the DoRA protocol's q, k, v, up and down projections, at
roughly equal parameter counts (LoRA r = 8 against LoKRA+ I = J = ⌈√d_out⌉, which is equal on the
64×64 projections). The reported time is the median over the timed steps, after warm-up.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass

import torch

from harness.models.lokra.config import AdapterConfig, Method
from harness.models.lokra.layers import adapted_modules, attach_adapters, total_penalty

METHODS: tuple[Method, ...] = ("lora", "lokra", "lokra_plus")


@dataclass(frozen=True, slots=True)
class StepTime:
    """Median training-step time of one adapter method."""

    method: str  # "lora", "lokra" or "lokra_plus"
    seconds_per_step: float  # median wall time of one step, warm-up excluded
    ratio_vs_lora: float  # seconds_per_step divided by LoRA's
    trainable_params: int  # adapter parameters, summed over the adapted layers

    def summary(self) -> str:
        """One line of text."""
        return (
            f"{self.method:<11} {self.seconds_per_step * 1e3:8.2f} ms/step  "
            f"x{self.ratio_vs_lora:.2f} vs LoRA  {self.trainable_params:,} params"
        )


def _tiny_llama(
    hidden_size: int, intermediate_size: int, layers: int, vocab: int
) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=vocab,
    )
    return LlamaForCausalLM(config)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_step_times(
    steps: int = 30,
    seed: int = 0,
    *,
    warmup: int = 5,
    r: int = 8,
    lam: float = 1e-2,
    batch: int = 4,
    seq_len: int = 32,
    hidden_size: int = 64,
    intermediate_size: int = 128,
    layers: int = 2,
    vocab: int = 128,
    device: str = "cpu",
    num_threads: int | None = None,
) -> list[StepTime]:
    """Time `steps` training steps of each method after `warmup` untimed ones.

    Args:
        steps: timed steps per method; the median is reported.
        seed: seeds the model's initialisation, the adapters and the token batch.
        warmup: untimed steps before timing (allocator, autograd and kernel caches).
        r: LoRA / LoKRA rank (alpha = 2r); LoKRA+ uses I = J = ⌈√d_out⌉.
        lam: penalty weight λ of LoKRA and LoKRA+.
        batch: sequences per step.
        seq_len: tokens per sequence.
        hidden_size: the Llama's hidden size.
        intermediate_size: its MLP size.
        layers: its number of decoder layers.
        vocab: its vocabulary size.
        device: "cpu" or a CUDA device; CUDA steps are synchronised before each clock read.
        num_threads: torch CPU threads while timing (restored after); None leaves them as they
            are. On a busy 2-core machine, 1 thread gave steady ~40 ms steps where the default
            2 threads, competing with another process, swung between 40 ms and 2 s.

    Returns:
        One StepTime per method, LoRA first.

    """
    if steps < 1 or warmup < 0:
        raise ValueError(f"need steps >= 1 and warmup >= 0, got {steps}, {warmup}")
    dev = torch.device(device)
    torch.manual_seed(seed)
    base = _tiny_llama(hidden_size, intermediate_size, layers, vocab).to(dev)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, seq_len), generator=gen).to(dev)  # (B, T)
    threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        runs = []
        for method in METHODS:
            torch.manual_seed(seed)
            model = copy.deepcopy(base).train()
            lam_m = 0.0 if method == "lora" else lam
            attach_adapters(model, AdapterConfig(method=method, r=r, alpha=2.0 * r, lam=lam_m))
            params = [p for p in model.parameters() if p.requires_grad]
            runs.append((method, model, torch.optim.AdamW(params, lr=1e-3)))
        seconds: dict[str, list[float]] = {method: [] for method in METHODS}
        # Interleaved: each round times one step of every method, so a slow spell of a shared
        # machine lands on all of them instead of on whichever method was running then.
        for step in range(warmup + steps):
            for method, model, opt in runs:
                took = _time_step(model, opt, ids, dev)
                if step >= warmup:
                    seconds[method].append(took)
    finally:
        torch.set_num_threads(threads)
    lora = statistics.median(seconds["lora"])
    out = []
    for method, model, _ in runs:
        t = statistics.median(seconds[method])
        n_params = sum(m.trainable_parameters() for _, m in adapted_modules(model))
        out.append(StepTime(method, t, t / lora, n_params))
    return out


def _time_step(
    model: torch.nn.Module, opt: torch.optim.Optimizer, ids: torch.Tensor, dev: torch.device
) -> float:
    """Seconds of one training step: forward, loss + penalty, backward, AdamW step."""
    _sync(dev)
    start = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=ids, labels=ids).loss + total_penalty(model)
    loss.backward()
    opt.step()
    _sync(dev)
    return time.perf_counter() - start
