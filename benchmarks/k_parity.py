"""Training throughput of the k-parity model (steps/s, tokens/s), eager against torch.compile.

Both run the same MD training step (quick preset shape: n=12, d=32, 2 layers, batch 256) in one
process; the ratio is compiled/eager throughput. Compilation time is excluded (warm-up steps).
Then the model's CPU attention (`harness.models.small_attention`) against PyTorch's flash kernel
in the same model, alternating rounds (the machine is shared and its speed drifts): the ratio
is small_attention/flash throughput, the median over rounds.

Usage: python benchmarks/k_parity.py [--steps 200] [--objective md|ar] [--rounds 4]
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    from harness.models.parity_transformer import ParityModelConfig, ParityTransformer
    from harness.suites.k_parity.data import make_parity_data
    from harness.suites.k_parity.task import PRESETS, arm_config
    from harness.suites.k_parity.train import _loss

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--objective", choices=["md", "ar"], default="md")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    cfg = arm_config("md-optimal" if args.objective == "md" else "ar", 0, PRESETS["quick"])
    data = make_parity_data(cfg.n, cfg.k, cfg.n_train, cfg.n_test, 0)
    tokens = cfg.batch_size * (cfg.n + 1)

    def throughput(compiled: bool) -> float:
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        model = ParityTransformer(
            ParityModelConfig(
                cfg.n + 1, cfg.d_model, cfg.n_layer, cfg.n_head, cfg.objective == "ar"
            )
        )
        runner = torch.compile(model) if compiled else model
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

        def step() -> None:
            idx = torch.randperm(data.train.shape[0], generator=gen)[: cfg.batch_size]
            loss = _loss(runner, data.train[idx], cfg, gen)  # type: ignore[arg-type]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        for _ in range(10):  # warm-up (and compilation)
            step()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        return args.steps / (time.perf_counter() - start)

    eager = throughput(False)
    print(f"eager   : {eager:7.1f} steps/s, {eager * tokens:9.0f} tokens/s ({args.objective})")
    try:
        compiled = throughput(True)
    except Exception as ex:  # no compiler toolchain, or an unsupported op
        print(f"compiled: unavailable ({type(ex).__name__}: {str(ex)[:120]})")
        return
    print(f"compiled: {compiled:7.1f} steps/s, {compiled * tokens:9.0f} tokens/s")
    print(f"ratio compiled/eager: {compiled / eager:.2f}")

    import statistics

    from torch.nn import functional as F

    import harness.models.parity_transformer as parity_transformer

    ours = parity_transformer.attention

    def flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    ratios = []
    for _ in range(args.rounds):
        parity_transformer.attention = flash
        base = throughput(False)
        parity_transformer.attention = ours
        mine = throughput(False)
        ratios.append(mine / base)
        print(f"flash {base:6.1f} steps/s, small_attention {mine:6.1f} steps/s")
    print(f"ratio small_attention/flash (median of {args.rounds}): {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
