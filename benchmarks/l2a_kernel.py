"""L2A sparse global attention: the Triton kernels against dense causal FlashAttention.

First a check, at T = 2048: the kernels' output and gradients against the torch reference
(`sparse_global_attention_reference`), fp32 against fp64 and bf16 against fp32; the script aborts
on a mismatch. Then, in one process and in bf16 (B = 1, H heads, D = 128), the forward and the
forward+backward of `sparse_global_attention_triton` at routed fractions 0.1, 0.2, 0.5 and 1.0
(uniformly random routed positions), against `F.scaled_dot_product_attention(is_causal=True)` on
the FlashAttention backend, at T = 4K, 8K, 16K and 32K. Times are medians of CUDA-event timings
after warm-up calls (Triton compiles there), and include the kernels' host-side compaction.

FLOPs, counting the useful causal work only: a query at position t reads t + 1 keys, so the
forward costs 4·D·H·Σ_routed (t + 1) (two matmuls) and the backward 2.5 times that (five), so
forward+backward = 3.5× forward. Dense takes every t. The spec's target (`shared/specs/l2a.md`
§3, "up to about 2× training throughput"): at fraction 0.2 and 32K the kernel ≥ 2× faster than
dense; that row is marked.

Usage: python benchmarks/l2a_kernel.py [--heads 16] [--quick] [--interpret-smoke]
Without CUDA it prints one line and exits 0; --interpret-smoke then runs the same code on tiny
shapes through Triton's CPU interpreter (slow, and its times mean nothing), to exercise it.
Estimated at about a minute on one H100/H200, most of it compiling (not yet run on a GPU).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from device_timing import time_ms

from harness.kernels.sparse_global_attention import sparse_global_attention_triton, triton
from harness.kernels.sparse_global_attention_reference import sparse_global_attention_reference

FRACTIONS = (0.1, 0.2, 0.5, 1.0)
LENGTHS = (4096, 8192, 16384, 32768)
TARGET = (0.2, 32768)  # (fraction, length) where the kernel should be ≥ 2× faster than dense


def _inputs(
    b: int, h: int, t: int, d: int, frac: float, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v, an upstream gradient (B, H, T, D), and a (B, T) mask of about frac routed."""
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v, dy = (
        torch.randn(b, h, t, d, generator=gen, device=device).to(dtype) for _ in range(4)
    )
    routed = torch.rand(b, t, generator=gen, device=device) < frac
    return q, k, v, dy, routed


def _fwd_bwd(
    fn: Callable[..., torch.Tensor], leaves: list[torch.Tensor], dy: torch.Tensor, *extra: object
) -> tuple[torch.Tensor, ...]:
    out = fn(*leaves, *extra)
    return torch.autograd.grad(out, leaves, dy)


def _check(t: int, h: int, d: int, device: torch.device) -> None:
    """Abort unless the kernels match the reference, fp32 vs fp64 and bf16 vs fp32."""
    # fp32: reordered fp32 sums; bf16: P and dS rounded to bf16 (2⁻⁸) before their dots
    cases = [(torch.float32, torch.float64, 1e-4), (torch.bfloat16, torch.float32, 3e-2)]
    for dtype, ref_dtype, tol in cases:
        q, k, v, dy, routed = _inputs(1, h, t, d, 0.2, dtype, device)
        results = []
        paths = [
            (sparse_global_attention_triton, dtype),
            (sparse_global_attention_reference, ref_dtype),
        ]
        for fn, cast in paths:
            leaves = [x.to(cast).requires_grad_() for x in (q, k, v)]
            out = fn(*leaves, routed)
            results.append((out, *torch.autograd.grad(out, leaves, dy.to(cast))))
        worst = 0.0
        for name, got, want in zip(("out", "dq", "dk", "dv"), *results, strict=True):
            rel = ((got.double() - want.double()).abs().max() / want.double().abs().max()).item()
            worst = max(worst, rel)
            if not rel < tol:  # also catches NaN
                raise SystemExit(
                    f"kernel disagrees with the reference ({dtype}, {name}): max error "
                    f"{rel:.2e} of max |ref| (limit {tol:.0e})"
                )
        print(
            f"  check T={t} H={h} D={d} {str(dtype).removeprefix('torch.')}: output and "
            f"gradients within {worst:.1e} of max |ref| (limit {tol:.0e})"
        )


def _flops(routed: torch.Tensor, h: int, d: int) -> float:
    """Forward FLOPs of causal attention for the routed rows: 4·D·H·Σ (t + 1)."""
    positions = torch.arange(1, routed.shape[1] + 1, device=routed.device, dtype=torch.float64)
    return 4.0 * d * h * float((routed.double() * positions).sum())


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _dense_backend(device: torch.device) -> contextlib.AbstractContextManager:
    """SDPA pinned to the FlashAttention backend on CUDA; the default backend on the CPU."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def _time_length(
    t: int, fractions: tuple[float, ...], h: int, d: int, device: torch.device, reps: int
) -> tuple[float, float, list[tuple[float, float, float, float, float]]]:
    """Dense forward and forward+backward ms at length t, and per fraction a row
    (fraction, fraction routed, kernel forward ms, kernel forward+backward ms, forward FLOPs)."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    q, k, v, dy, _ = _inputs(1, h, t, d, 1.0, dtype, device)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    with _dense_backend(device):
        with torch.no_grad():
            dense_fwd = time_ms(partial(_sdpa, q, k, v), device, reps)
        dense_train = time_ms(partial(_fwd_bwd, _sdpa, leaves, dy), device, reps)
    rows = []
    for frac in fractions:
        routed = torch.rand(1, t, generator=torch.Generator().manual_seed(1)) < frac
        routed = routed.to(device)
        with torch.no_grad():
            fwd = time_ms(partial(sparse_global_attention_triton, q, k, v, routed), device, reps)
        kernel = partial(_fwd_bwd, sparse_global_attention_triton, leaves, dy, routed)
        train = time_ms(kernel, device, reps)
        rows.append((frac, float(routed.float().mean()), fwd, train, _flops(routed, h, d)))
    return dense_fwd, dense_train, rows


def _table(
    lengths: tuple[int, ...],
    fractions: tuple[float, ...],
    h: int,
    d: int,
    device: torch.device,
    reps: int,
) -> None:
    """Time the kernel and dense attention at each length and fraction, and print the table."""
    dtype = "bf16" if device.type == "cuda" else "fp32"
    head = (
        f"{'T':>6} {'frac':>5} {'routed':>7} | {'fwd ms':>8} {'dense':>8} {'ratio':>6} "
        f"{'TFLOP/s':>7} | {'fwd+bwd':>8} {'dense':>8} {'ratio':>6} {'TFLOP/s':>7}"
    )
    print(f"\nB=1 H={h} D={d} {dtype}; ratio = dense ms / kernel ms; TFLOP/s of useful work")
    print(head)
    print("-" * len(head))
    target = None
    for t in lengths:
        dense_fwd, dense_train, rows = _time_length(t, fractions, h, d, device, reps)
        for frac, share, fwd, train, flops in rows:
            is_target = (frac, t) == TARGET
            print(
                f"{t:>6} {frac:>5.2f} {share:>7.3f} | {fwd:>8.2f} {dense_fwd:>8.2f} "
                f"{dense_fwd / fwd:>5.2f}x {flops / fwd / 1e9:>7.1f} | {train:>8.2f} "
                f"{dense_train:>8.2f} {dense_train / train:>5.2f}x "
                f"{3.5 * flops / train / 1e9:>7.1f}{'  <-- target' if is_target else ''}"
            )
            if is_target:
                target = (dense_fwd / fwd, dense_train / train)
        dense_flops = 4.0 * d * h * t * (t + 1) / 2
        print(
            f"{t:>6} dense SDPA: {dense_flops / dense_fwd / 1e9:.1f} TFLOP/s "
            f"forward, {3.5 * dense_flops / dense_train / 1e9:.1f} forward+backward"
        )
    if target is not None:
        verdict = "met" if min(target) >= 2.0 else "NOT met"
        print(
            f"\ntarget, fraction {TARGET[0]} at T={TARGET[1]}: kernel forward {target[0]:.2f}x "
            f"and forward+backward {target[1]:.2f}x faster than dense (goal ≥ 2x): {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=16, help="attention heads H (default 16)")
    parser.add_argument("--quick", action="store_true", help="4K and 32K only, fewer repetitions")
    parser.add_argument(
        "--interpret-smoke",
        action="store_true",
        help="without CUDA: run tiny shapes through Triton's CPU interpreter",
    )
    args = parser.parse_args()
    if triton is None:
        print("l2a_kernel: triton is not installed; nothing to time")
        return
    if torch.cuda.is_available():
        device = torch.device("cuda")
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"triton {triton.__version__}")  # fmt: skip
        _check(2048, args.heads, 128, device)
        lengths = (LENGTHS[0], LENGTHS[-1]) if args.quick else LENGTHS
        _table(lengths, FRACTIONS, args.heads, 128, device, reps=3 if args.quick else 5)
    elif args.interpret_smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # the kernels are wrapped at launch, per mode
        device = torch.device("cpu")
        print("device: cpu through TRITON_INTERPRET=1 (a smoke run: the times mean nothing)")
        _check(64, 2, 16, device)
        _table((64, 128), (0.2, 1.0), 2, 16, device, reps=1)
    else:
        print("l2a_kernel: no CUDA device; nothing to time (--interpret-smoke runs tiny shapes)")


if __name__ == "__main__":
    sys.exit(main())
