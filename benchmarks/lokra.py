"""LoKRA+ speed: the fused forward kernel against the unfused reference and plain F.linear, and
training step times of LoRA, LoKRA and LoKRA+ against LoRA.

Section `kernel`, in one process and at each shape (tokens M, d_in K, d_out N, factors I, J):
- linear: F.linear(x, W, b), no adapter, the floor;
- unfused: `lokra_plus_linear_reference`, which writes ΔW (N×K), then W + s·ΔW, then one matmul;
- fused: `lokra_plus_linear_triton`, ΔW built tile by tile in registers (CUDA only).
Forward GFLOP/s = 2·M·N·K / time (the matmul's count; building ΔW adds 3·N·K, under 0.1% at
M = 4096). Forward and backward with W frozen (dx, dC, dD): 6·M·N·K / time. On CUDA the kernel is
checked against the reference first, in bf16; on CPU only the torch paths run, at small shapes.

Section `step`: `harness.models.lokra.step_time.measure_step_times`, printed as a table.

Usage: python benchmarks/lokra.py [--section kernel|step|all] [--quick]
On a CPU shared with other jobs, OMP_NUM_THREADS=1 steadies the torch timings (threads that wait
on a busy core inflate them several-fold).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as F
from device_timing import time_ms

from harness.kernels.lokra_plus import lokra_plus_linear, lokra_plus_linear_triton, triton
from harness.kernels.lokra_plus_reference import lokra_plus_linear_reference
from harness.models.lokra.step_time import measure_step_times

SCALE = 2.0  # α/r-style adapter scale; any nonzero value exercises the ΔW path

# (tokens, d_in, d_out, I, J); I·J ≥ d_out
CUDA_SHAPES = [
    (4096, 1024, 1024, 32, 32),
    (4096, 1024, 1024, 64, 64),  # I·J = 4096 > 1024: the crop keeps 16 of D's 64 rows
    (4096, 4096, 4096, 64, 64),  # spec §2 example: same trainable count as LoRA r = 64
    (4096, 4096, 11008, 128, 86),  # LLaMA-7B MLP up-projection
]
CPU_SHAPES = [(512, 512, 512, 32, 32), (1024, 1024, 1024, 32, 32)]
QUICK_CPU_SHAPES = [(128, 256, 256, 16, 16)]


def _inputs(
    shape: tuple[int, int, int, int, int], dtype: torch.dtype, device: torch.device
) -> dict[str, torch.Tensor]:
    m, k, n, n_i, n_j = shape
    gen = torch.Generator(device=device).manual_seed(0)

    def randn(*size: int, std: float = 1.0) -> torch.Tensor:
        return (std * torch.randn(*size, generator=gen, device=device)).to(dtype)

    return {
        "x": randn(m, k),
        "weight": randn(n, k, std=k**-0.5),
        "bias": randn(n, std=0.1),
        "C": randn(n_i, k, std=k**-0.25),
        "D": randn(n_j, k, std=k**-0.25),
    }


def _train(fn: Callable[..., torch.Tensor], t: dict[str, torch.Tensor], dy: torch.Tensor) -> None:
    fn(**t, scale=SCALE).backward(dy)


def _check_kernel(t: dict[str, torch.Tensor]) -> None:
    """Abort unless the bf16 kernel is within 1% of the fp32 reference, relative to max |y|."""
    y = lokra_plus_linear_triton(**t, scale=SCALE).float()
    ref = lokra_plus_linear_reference(**{k: v.float() for k, v in t.items()}, scale=SCALE)
    rel = ((y - ref).abs().max() / ref.abs().max()).item()
    # bf16 rounds W + s·ΔW and y once each (2⁻⁸ relative): ~0.4% on the largest outputs
    if not rel < 1e-2:
        raise SystemExit(f"kernel disagrees with the reference: max error {rel:.2e} of max |y|")
    print(f"  check: fused kernel vs fp32 reference, max error {rel:.1e} of max |y| (limit 1e-2)")


def kernel_section(quick: bool) -> None:
    """Forward (and forward+backward) time of linear, unfused and fused at each shape."""
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    has_kernel = cuda and triton is not None
    if cuda:
        shapes = CUDA_SHAPES[:2] if quick else CUDA_SHAPES
        print(f"device: {torch.cuda.get_device_name()}, dtype bf16")
    else:
        shapes = QUICK_CPU_SHAPES if quick else CPU_SHAPES
        print(f"device: cpu ({torch.get_num_threads()} threads), dtype fp32")
    if not has_kernel:
        why = "CUDA" if not cuda else "triton"
        print(f"fused kernel: needs {why}, so only the torch paths run here")
    reps = 10 if not cuda else (20 if quick else 50)
    head = f"{'M':>5} {'K':>5} {'N':>5} {'I':>3} {'J':>3}  {'path':<8} {'ms':>8} {'GFLOP/s':>9}"
    print(f"\nforward (GFLOP/s = 2·M·N·K / time)\n{head} {'vs linear':>9}")
    rows = []
    for shape in shapes:
        m, k, n, n_i, n_j = shape
        t = _inputs(shape, dtype, device)
        if has_kernel:
            _check_kernel(t)
        paths: dict[str, Callable[[], object]] = {
            "linear": lambda t=t: F.linear(t["x"], t["weight"], t["bias"]),
            "unfused": lambda t=t: lokra_plus_linear_reference(**t, scale=SCALE),
        }
        if has_kernel:
            paths["fused"] = lambda t=t: lokra_plus_linear_triton(**t, scale=SCALE)
        with torch.no_grad():
            ms = {name: time_ms(fn, device, reps) for name, fn in paths.items()}
        for name, value in ms.items():
            gflops = 2 * m * n * k / (value * 1e-3) / 1e9
            print(
                f"{m:>5} {k:>5} {n:>5} {n_i:>3} {n_j:>3}  {name:<8} {value:8.3f} {gflops:9.1f} "
                f"{value / ms['linear']:8.2f}x"
            )
        rows.append((shape, t))
    print(f"\nforward+backward, W frozen: dx, dC, dD (GFLOP/s = 6·M·N·K / time)\n{head}")
    for shape, t in rows:
        m, k, n, n_i, n_j = shape
        trained = {**t, **{k: t[k].clone().requires_grad_() for k in ("x", "C", "D")}}
        dy = torch.ones(m, n, dtype=dtype, device=device)
        paths = {"unfused": lambda a=trained, g=dy: _train(lokra_plus_linear_reference, a, g)}
        if has_kernel:  # on CUDA the dispatch takes the autograd.Function
            paths["fused"] = lambda a=trained, g=dy: _train(lokra_plus_linear, a, g)
        ms = {name: time_ms(fn, device, reps) for name, fn in paths.items()}
        for name, value in ms.items():
            gflops = 6 * m * n * k / (value * 1e-3) / 1e9
            print(f"{m:>5} {k:>5} {n:>5} {n_i:>3} {n_j:>3}  {name:<8} {value:8.3f} {gflops:9.1f}")


def step_section(quick: bool) -> None:
    """Training step time of LoRA, LoKRA and LoKRA+, each against LoRA (interleaved steps)."""
    steps = 10 if quick else 40
    sizes = [(64, 128, 8, 32)] if quick else [(64, 128, 8, 32), (256, 512, 16, 64)]
    for hidden, inter, r, seq in sizes:
        print(f"\ntiny Llama (2 layers, hidden {hidden}, MLP {inter}), LoRA r = {r}, lam = 1e-2, "
              f"batch 4 x {seq} tokens, {steps} timed steps, 1 thread")  # fmt: skip
        results = measure_step_times(
            steps=steps, num_threads=1, hidden_size=hidden, intermediate_size=inter, r=r,
            seq_len=seq,
        )  # fmt: skip
        print(f"{'method':<10} {'ms/step':>9} {'vs LoRA':>8} {'trainable':>12}")
        for t in results:
            print(
                f"{t.method:<10} {t.seconds_per_step * 1e3:9.2f} {t.ratio_vs_lora:7.2f}x "
                f"{t.trainable_params:>12,}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=["kernel", "step", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repetitions")
    args = parser.parse_args()
    if args.section in ("kernel", "all"):
        print("== kernel: fused LoKRA+ forward vs unfused reference vs plain linear ==")
        kernel_section(args.quick)
    if args.section in ("step", "all"):
        print("\n== step: training step time against LoRA ==")
        step_section(args.quick)


if __name__ == "__main__":
    main()
