"""Throughput of `local/` through a full `harness eval`, against two baselines, in one process.

1. A bare batched generate loop (`generate_batch` over the same prompts, same batch size):
   the ratio harness/bare shows what inspect-ai and the micro-batcher cost. Target: >= 0.8.
2. inspect's built-in `hf/` provider on the same checkpoint saved to disk, run through the same
   `harness eval` path: the ratio local/hf. Target: >= 5.

The checkpoints are randomly initialised GPT-2s with the tiny-arith character tokenizer, in two
regimes: the tiny-arith shape, where inspect-ai's own per-sample work dominates, and a larger
model whose compute dominates. Prompts are the `arith` suite's, with greedy decoding, so every
path generates the same tokens.

Usage: python benchmarks/local_provider.py [--regime small|large|both] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path


def make_checkpoint(path: Path, n_embd: int, n_layer: int) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from harness.models.tiny_arith import build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok),
            n_positions=64,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=8,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    )
    with torch.no_grad():  # a zero <eos> embedding: greedy decoding runs to max_tokens
        model.transformer.wte.weight[tok.eos_token_id].zero_()
    model.save_pretrained(path)
    tok.save_pretrained(path)


@dataclass(frozen=True)
class Regime:
    """One model size and generation length to measure."""

    name: str  # label in the output
    n_layer: int  # GPT-2 blocks
    n_embd: int  # GPT-2 width
    max_tokens: int  # tokens generated per sample (the <eos> embedding is zero, so all of them)
    n: int  # problems


REGIMES = {
    # tiny-arith's shape: inspect-ai's per-sample work (about 10-17 ms on 2 cores) dominates
    "small": Regime("small (tiny-arith shape)", 4, 64, 5, 256),
    # a model whose compute dominates: about 0.1 s of generation per sample on 2 cores
    "large": Regime("large", 12, 768, 32, 384),
}


def measure(regime: Regime, batch_size: int, skip_hf: bool, work: Path) -> None:
    from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

    from harness.eval import EvalRequest, run
    from harness.models.batch_generate import GenRequest, generate_batch
    from harness.models.local import render_prompt
    from harness.suites.arith.task import arith

    ckpt = work / f"ckpt-{regime.n_layer}x{regime.n_embd}"
    make_checkpoint(ckpt, regime.n_embd, regime.n_layer)
    task_args = {"n": regime.n, "difficulty": 3, "max_tokens": regime.max_tokens}
    samples = list(arith(**task_args).dataset)
    local = get_model(f"local/{ckpt}", config=GenerateConfig(), batch_size=batch_size)
    model, tok = local.api.model, local.api.tokenizer  # type: ignore[attr-defined]
    prompts = [render_prompt(tok, [ChatMessageUser(content=str(s.input))]) for s in samples]
    generate_batch(model, tok, [GenRequest(prompts[0], regime.max_tokens)])  # warm-up

    def bare() -> float:
        start = time.perf_counter()
        for i in range(0, len(prompts), batch_size):
            chunk = prompts[i : i + batch_size]
            generate_batch(model, tok, [GenRequest(p, regime.max_tokens) for p in chunk])
        return time.perf_counter() - start

    def through_harness(spec: str, model_args: dict, sub: str, n: int | None = None) -> float:
        if n is None:  # pay one-time costs (imports, model load) outside the timing
            through_harness(spec, model_args, sub + "-warm", n=batch_size)
        start = time.perf_counter()
        ok, rows, _ = run(
            EvalRequest(
                suite="arith",
                models=(spec,),
                task_args={**task_args, "n": n or regime.n},
                model_args=model_args,
                log_dir=str(work / f"{sub}-{regime.n_layer}x{regime.n_embd}"),
                display="none",
            )
        )
        elapsed = time.perf_counter() - start
        assert ok and rows[0].errors == 0, rows
        return elapsed

    t_bare = bare()
    t_local = through_harness(f"local/{ckpt}", {"batch_size": batch_size}, "local")
    t_bare = min(t_bare, bare())  # bracket the harness run so drift on a shared machine shows
    n = regime.n
    params = sum(p.numel() for p in model.parameters())
    print(
        f"\n[{regime.name}] GPT-2 {regime.n_layer}x{regime.n_embd} ({params / 1e6:.1f}M params), "
        f"{n} arith prompts, batch {batch_size}, {regime.max_tokens} tokens each, greedy"
    )
    print(f"  bare generate loop   : {n / t_bare:8.1f} samples/s ({t_bare:.2f}s)")
    print(f"  harness eval, local/ : {n / t_local:8.1f} samples/s ({t_local:.2f}s)")
    print(f"  ratio local/bare     : {t_bare / t_local:.2f}   (target >= 0.8)")
    if skip_hf:
        return
    hf_args = {"batch_size": batch_size, "device": "cpu", "do_sample": False}
    t_hf = through_harness(f"hf/{ckpt}", hf_args, "hf")
    print(f"  harness eval, hf/    : {n / t_hf:8.1f} samples/s ({t_hf:.2f}s)")
    print(f"  ratio local/hf       : {t_hf / t_local:.2f}   (target >= 5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regime", choices=[*REGIMES, "both"], default="both")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--n", type=int, default=None, help="problems (default: per regime)")
    parser.add_argument("--skip-hf", action="store_true", help="skip the slow hf/ baseline")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    os.environ.setdefault("INSPECT_LOG_DIR", str(work / "inspect"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    names = list(REGIMES) if args.regime == "both" else [args.regime]
    for name in names:
        regime = REGIMES[name] if args.n is None else replace(REGIMES[name], n=args.n)
        measure(regime, args.batch_size, args.skip_hf, work)


if __name__ == "__main__":
    main()
