"""TEAM: modelled speed-up, measured APF/TPF/APT ratios, and the grouped-expert kernel's time.

1. Measured ratios: vanilla and TEAM decode the same prompts with the `team` suite's cached
   quick-preset model (seed 0; trained first if missing, about 9 minutes) or, with --small, a
   small model trained for a few hundred steps here.
2. Modelled speed-up (specs/team.md §5): a forward costs a + b·APF, with a the dense part and b
   the cost of one distinct expert per layer, both fitted on this machine by timing decode
   forwards (a: every row's MoE output reused, so no expert runs; b: the slope over forwards
   restricted to m = 1 … E experts). Speed-up = F_v·(a + b·APF_v) / (F_T·(a + b·APF_T)), and
   its two limits: dense-bound (b = 0) and expert-bound (a = 0). CPU wall clock does not
   transfer to a GPU; the fitted ratio is a model, not a measurement of TEAM's speed.
3. Grouped-expert FFN: the torch reference (one matmul pair per expert) against the naive loop
   on the CPU; on CUDA also the Triton kernel, for a 64-expert, top-8 layer at a realistic width
   (d = 2048, expert hidden 768, 4,096 tokens, bf16), checked against the reference first.

Usage: python benchmarks/team.py [--small] [--prompts 120]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from harness.kernels.grouped_experts import grouped_experts_triton, triton
from harness.kernels.grouped_experts_reference import (
    grouped_experts_naive,
    grouped_experts_reference,
)
from harness.models.team.decode import VARIANTS, generate
from harness.models.team.model import MoeControl
from harness.models.team.tasks import MASK, eval_prompts


def _model(small: bool):
    from harness.models.team.config import PRESETS, train_config
    from harness.models.team.model import MoeConfig
    from harness.models.team.train import TrainConfig, load_or_train

    if small:
        cfg = TrainConfig(seed=0, steps=300, model=MoeConfig(d_model=64, n_layer=2, n_expert=8,
                                                             d_expert=64))  # fmt: skip
    else:
        cfg = train_config(0, PRESETS["quick"])
    return load_or_train(cfg)[0]


def _median_ms(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def fit_costs(model) -> tuple[float, float]:
    """a (ms per forward, dense part) and b (ms per distinct expert per layer) on this machine."""
    cfg = model.cfg
    rows = 4 * cfg.block  # a TEAM forward: 4 candidates
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 10, (rows,), generator=g)
    tokens[::2] = MASK
    positions = torch.arange(cfg.block).repeat(4)
    groups = torch.arange(4).repeat_interleave(cfg.block)
    cache = model.prefill(torch.zeros(cfg.block, dtype=torch.long))
    d = cfg.d_model
    everything = [MoeControl(cached=torch.ones(rows, dtype=torch.bool),
                             stored=torch.zeros(rows, d)) for _ in model.blocks]  # fmt: skip
    with torch.no_grad():
        a = _median_ms(lambda: model.rows(tokens, positions, groups, cache, everything))
    xs, ys = [], []
    orig = [blk.moe.route for blk in model.blocks]
    try:
        for m in sorted({1, 2, cfg.n_expert // 4, cfg.n_expert // 2, cfg.n_expert} - {0}):
            for blk in model.blocks:

                def route(x, moe=blk.moe, m=m):  # only experts 0..m-1, spread evenly
                    probs, _, w = type(moe).route(moe, x)
                    ids = (torch.arange(len(x))[:, None] * cfg.top_k
                           + torch.arange(cfg.top_k)[None, :]) % m  # fmt: skip
                    return probs, ids, w

                blk.moe.route = route
            with torch.no_grad():
                ms = _median_ms(lambda: model.rows(tokens, positions, groups, cache))
            xs.append(m)
            ys.append(ms)
    finally:
        for blk, r in zip(model.blocks, orig, strict=True):
            blk.moe.route = r
    slope = statistics.linear_regression(xs, ys).slope / len(model.blocks)
    return a, slope


def measure(model, n: int) -> dict[str, dict[str, float]]:
    """F, tokens and APF of vanilla and TEAM over the same prompts."""
    out = {}
    prompts = eval_prompts(0, n)
    for name in ("vanilla", "team"):
        forwards = tokens = 0
        experts: list[int] = []
        correct = 0
        for ex in prompts:
            ans, s = generate(model, ex.prompt, VARIANTS[name])
            forwards += s.forwards
            tokens += s.tokens
            experts += s.experts
            correct += list(ans) == list(ex.answer)
        apf = sum(experts) / len(experts)
        out[name] = {"F": forwards, "TPF": tokens / forwards, "APF": apf,
                     "APT": apf / (tokens / forwards), "EM": correct / n}  # fmt: skip
    return out


def kernel_section() -> None:
    """Reference vs naive on the CPU; on CUDA the Triton kernel at a realistic width."""
    g = torch.Generator().manual_seed(0)
    n, d, h, e, k = 512, 128, 128, 16, 2
    x = torch.randn(n, d, generator=g)
    ids = torch.randint(0, e, (n, k), generator=g)
    w = torch.rand(n, k, generator=g)
    w1, w2 = torch.randn(e, d, h, generator=g) * 0.05, torch.randn(e, h, d, generator=g) * 0.05
    with torch.no_grad():
        ref = _median_ms(lambda: grouped_experts_reference(x, ids, w, w1, w2), reps=10)
        naive = _median_ms(lambda: grouped_experts_naive(x, ids, w, w1, w2), reps=3)
    print(f"cpu, {n} tokens, d {d}, hidden {h}, {e} experts top-{k}: reference {ref:.2f} ms, "
          f"naive loop {naive:.2f} ms (reference {naive / ref:.1f}x faster)")  # fmt: skip
    if not (torch.cuda.is_available() and triton is not None):
        print("Triton kernel: needs CUDA; not timed here")
        return
    dev = torch.device("cuda")
    n, d, h, e, k = 4096, 2048, 768, 64, 8
    gc = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(n, d, generator=gc, device=dev).bfloat16()
    ids = torch.rand(n, e, generator=gc, device=dev).topk(k, dim=1).indices
    w = torch.rand(n, k, generator=gc, device=dev).bfloat16()
    w1 = (torch.randn(e, d, h, generator=gc, device=dev) * d**-0.5).bfloat16()
    w2 = (torch.randn(e, h, d, generator=gc, device=dev) * h**-0.5).bfloat16()
    with torch.no_grad():
        want = grouped_experts_reference(x.float(), ids, w.float(), w1.float(), w2.float())
        got = grouped_experts_triton(x, ids, w, w1, w2).float()
        err = ((got - want).abs().max() / want.abs().max()).item()
        if not err < 2e-2:
            raise SystemExit(f"kernel disagrees with the reference: {err:.2e} of max |y|")

        def cuda_ms(fn) -> float:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(20):
                fn()
            t.record()
            torch.cuda.synchronize()
            return s.elapsed_time(t) / 20

        kern = cuda_ms(lambda: grouped_experts_triton(x, ids, w, w1, w2))
        loop = cuda_ms(lambda: grouped_experts_reference(x, ids, w, w1, w2))
    print(f"cuda {torch.cuda.get_device_name()}, {n} tokens, d {d}, hidden {h}, {e} experts "
          f"top-{k}, bf16 (max error {err:.1e} of max |y|): kernel {kern:.3f} ms, reference "
          f"{loop:.3f} ms, reference / kernel = {loop / kern:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a small model trained here")
    parser.add_argument("--prompts", type=int, default=120)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = _model(args.small)
    m = measure(model, args.prompts)
    v, t = m["vanilla"], m["team"]
    print(f"== measured on {args.prompts} prompts (seed 0) ==")
    for name, row in m.items():
        print(f"{name:<8} F {row['F']:>6}  TPF {row['TPF']:.2f}  APF {row['APF']:.2f}  "
              f"APT {row['APT']:.2f}  exact match {row['EM']:.3f}")  # fmt: skip
    print(f"TEAM / vanilla: TPF x{t['TPF'] / v['TPF']:.2f}, APF x{t['APF'] / v['APF']:.2f}, "
          f"APT x{t['APT'] / v['APT']:.2f}, forwards x{t['F'] / v['F']:.2f}")  # fmt: skip
    a, b = fit_costs(model)
    fitted = (v["F"] * (a + b * v["APF"])) / (t["F"] * (a + b * t["APF"]))
    print("\n== modelled speed-up, cost per forward a + b·APF ==")
    print(f"fitted on this CPU (1 thread, a TEAM-sized 32-row forward): a = {a:.2f} ms, "
          f"b = {b:.3f} ms per expert per layer")  # fmt: skip
    print(f"speed-up with the fitted costs: {fitted:.2f}x")
    print(f"dense-bound (b = 0): {v['F'] / t['F']:.2f}x; expert-bound (a = 0): "
          f"{v['F'] * v['APF'] / (t['F'] * t['APF']):.2f}x")  # fmt: skip
    print("\n== grouped-expert FFN ==")
    kernel_section()


if __name__ == "__main__":
    main()
