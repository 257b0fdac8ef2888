"""LoKRA+ linear forward as one fused Triton kernel; the backward in torch.

LoKRA+ is a reconstructed method (`shared/specs/lokra.md` §2, our reading of the authors' blog; the
paper and code were not available): the update is ΔW = crop_{d_out×d_in}(D ⊙ C), the Khatri-Rao
product of C (I, d_in) and D (J, d_in) with I·J ≥ d_out, so ΔW[o, j] = D[o // I, j] · C[o % I, j],
and the layer computes y = x Wᵀ + b + scale · x ΔWᵀ.

The kernel tiles y over (rows of x, output columns o) and loops over d_in. At each step it loads a
tile of W and the gathered rows D[o // I] and C[o % I], forms W + scale·ΔW in registers (ΔW never
reaches memory) and accumulates x·(W + scale·ΔW)ᵀ in fp32. The unfused alternative, the reference
in `lokra_plus_reference.py`, writes and re-reads a (d_out, d_in) ΔW and a summed weight.

Dispatch (`lokra_plus_linear`) takes the kernel on CUDA when triton imports, and the reference
elsewhere. Tests run the kernel on the CPU through Triton's interpreter (`TRITON_INTERPRET=1`).
"""

from __future__ import annotations

from typing import Any

import torch

from harness.kernels.lokra_plus_reference import (
    _check_factors,
    delta_weight,
    lokra_plus_linear_reference,
)
from harness.kernels.triton_support import (
    KERNEL_DTYPES,
    interpreting,
    jit_for_mode,
    tl,
    triton,
)


# Not decorated at import, and builtins only in the body: see harness.kernels.triton_support.
def _lokra_plus_fwd_kernel(
    x_ptr,  # (M, K)
    w_ptr,  # (N, K)
    b_ptr,  # (N,), unread when HAS_BIAS is false
    c_ptr,  # (I, K)
    d_ptr,  # (J, K)
    y_ptr,  # (M, N)
    M,
    N,
    K,
    n_i,  # I: output column o takes C row o % I and D row o // I
    scale,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_ci,
    stride_ck,
    stride_dj,
    stride_dk,
    stride_ym,
    stride_yn,
    HAS_BIAS: tl.constexpr,
    IEEE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Programs run in bands of GROUP_M row tiles: a band sweeps all column tiles, so the tiles of
    # W, C and D it reads stay in L2 across the band's rows, not fetched once per row tile.
    pid = tl.program_id(0)
    tiles_m = (M + BLOCK_M - 1) // BLOCK_M
    tiles_n = (N + BLOCK_N - 1) // BLOCK_N
    band = pid // (GROUP_M * tiles_n)
    band_start = band * GROUP_M
    band_rows = tl.minimum(tiles_m - band_start, GROUP_M)
    in_band = pid % (GROUP_M * tiles_n)
    pid_m = band_start + in_band % band_rows
    pid_n = in_band // band_rows

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)  # int64: M·K may pass 2^31
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    c_rows = offs_n % n_i  # (BLOCK_N,)
    d_rows = offs_n // n_i  # (BLOCK_N,); out of range only where mask_n is false

    # Tiles are addressed k-major, (BLOCK_K, BLOCK_N), so that tl.dot takes them as they load.
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk  # (BM, BK)
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn  # (BK, BN)
    c_ptrs = c_ptr + offs_k[:, None] * stride_ck + c_rows[None, :] * stride_ci  # (BK, BN)
    d_ptrs = d_ptr + offs_k[:, None] * stride_dk + d_rows[None, :] * stride_dj  # (BK, BN)

    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        x = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)  # (BM, BK)
        kn = mask_k[:, None] & mask_n[None, :]
        w = tl.load(w_ptrs, mask=kn, other=0.0).to(tl.float32)  # (BK, BN)
        c = tl.load(c_ptrs, mask=kn, other=0.0).to(tl.float32)  # (BK, BN)
        d = tl.load(d_ptrs, mask=kn, other=0.0).to(tl.float32)  # (BK, BN)
        # (W + scale·ΔW)ᵀ tile, formed in fp32 in registers only, then rounded once to x's dtype
        w_eff = (w + scale * (d * c)).to(x.dtype)
        if IEEE_DOT:  # full-precision fp32 products (bf16·bf16 and fp16·fp16 are exact in fp32)
            acc = tl.dot(x.to(tl.float32), w_eff.to(tl.float32), acc, input_precision="ieee")
        else:  # bf16/fp16 tensor cores, fp32 accumulate
            acc = tl.dot(x, w_eff, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
        c_ptrs += BLOCK_K * stride_ck
        d_ptrs += BLOCK_K * stride_dk

    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def _check_inputs(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    C: torch.Tensor,
    D: torch.Tensor,
) -> None:
    if weight.ndim != 2:
        raise ValueError(f"weight must be (d_out, d_in); got {tuple(weight.shape)}")
    d_out, d_in = weight.shape
    if x.ndim < 1 or x.shape[-1] != d_in:
        raise ValueError(f"x must be (..., d_in={d_in}); got {tuple(x.shape)}")
    _check_factors(C, D, d_out)
    if C.shape[1] != d_in:
        raise ValueError(f"C and D must be (·, d_in={d_in}); got C {tuple(C.shape)}")
    if bias is not None and tuple(bias.shape) != (d_out,):
        raise ValueError(f"bias must be ({d_out},); got {tuple(bias.shape)}")
    tensors = [t for t in (x, weight, bias, C, D) if t is not None]
    if x.dtype not in KERNEL_DTYPES or any(t.dtype != x.dtype for t in tensors):
        raise TypeError(
            "the LoKRA+ kernel takes x, weight, bias, C and D in one dtype among "
            f"{[str(d) for d in KERNEL_DTYPES]}; got {[str(t.dtype) for t in tensors]}; "
            "cast them first"
        )
    if any(t.device != x.device for t in tensors):
        raise ValueError(f"tensors on several devices: {[str(t.device) for t in tensors]}")


def lokra_plus_linear_triton(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    C: torch.Tensor,
    D: torch.Tensor,
    scale: float,
    *,
    blocks: tuple[int, int, int] | None = None,
) -> torch.Tensor:
    """Launch the fused forward: y = x (W + scale·ΔW)ᵀ + b, ΔW = crop(D ⊙ C) never in memory.

    Args:
        x: Inputs (..., d_in), float32, bfloat16 or float16.
        weight: Base weight W (d_out, d_in), x's dtype.
        bias: Base bias (d_out,) or None, x's dtype.
        C: Factor (I, d_in), x's dtype.
        D: Factor (J, d_in), x's dtype, with I·J ≥ d_out.
        scale: The adapter scale.
        blocks: (BLOCK_M, BLOCK_N, BLOCK_K), powers of two ≥ 16, overriding the defaults; tests
            use small ones to cross many tile edges.

    Returns:
        y (..., d_out) in x's dtype, accumulated in fp32. Not differentiable: use
        `LoKRAPlusLinearFunction` or `lokra_plus_linear` for training.

    Raises:
        RuntimeError: If triton is not installed.
        ValueError: On inconsistent shapes or devices.
        TypeError: On unsupported or mixed dtypes.

    Notes:
        Runs on CUDA tensors, or on CPU tensors when TRITON_INTERPRET=1 (slow; for tests).

    """
    if triton is None:
        raise RuntimeError("triton is not installed; use lokra_plus_linear, which falls back")
    _check_inputs(x, weight, bias, C, D)
    d_out, d_in = weight.shape
    lead = x.shape[:-1]
    x2 = x.reshape(-1, d_in).contiguous()  # (M, K)
    w, c, d = weight.contiguous(), C.contiguous(), D.contiguous()
    m = x2.shape[0]
    y = torch.empty((m, d_out), dtype=x.dtype, device=x.device)  # (M, N)
    if m == 0 or d_out == 0:
        return y.reshape(*lead, d_out)
    # fp32 inputs take "ieee" dots, as torch's default fp32 matmul (no TF32). The interpreter takes
    # them for every dtype: triton 3.8's interpreter multiplies bf16 tiles as their raw uint16
    # storage (its create_dot converts only fp8), which yields garbage.
    ieee = x.dtype == torch.float32 or interpreting()
    if blocks is None:
        # Untuned: no GPU was at hand to measure; benchmarks/lokra.py times them. bf16/fp16 take a
        # 128×128 tensor-core tile with 8 warps; fp32 "ieee" dots have no tensor cores, so a
        # smaller tile. With 3 stages of x, W, C and D tiles, shared memory stays at 96 KiB
        # (3·(128·32 + 3·32·128)·2 B; fp32: 3·(64·32 + 3·32·64)·4 B), within A100's and H100's.
        blocks = (64, 64, 32) if x.dtype == torch.float32 else (128, 128, 32)
    if len(blocks) != 3 or any(b < 16 or b & (b - 1) for b in blocks):
        raise ValueError(
            f"blocks must be three powers of two ≥ 16 (tl.dot's minimum); got {blocks}"
        )
    block_m, block_n, block_k = blocks
    num_warps = 8 if block_m * block_n >= 128 * 128 else 4
    grid = (triton.cdiv(m, block_m) * triton.cdiv(d_out, block_n),)
    b = bias.contiguous() if bias is not None else w  # a valid pointer, never read
    jit_for_mode(_lokra_plus_fwd_kernel, interpreting())[grid](
        x2,
        w,
        b,
        c,
        d,
        y,
        m,
        d_out,
        d_in,
        c.shape[0],
        float(scale),
        x2.stride(0),
        x2.stride(1),
        w.stride(0),
        w.stride(1),
        c.stride(0),
        c.stride(1),
        d.stride(0),
        d.stride(1),
        y.stride(0),
        y.stride(1),
        HAS_BIAS=bias is not None,
        IEEE_DOT=ieee,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        GROUP_M=8,
        num_warps=num_warps,
        num_stages=3,
    )
    return y.reshape(*lead, d_out)


class LoKRAPlusLinearFunction(torch.autograd.Function):
    """Autograd for the fused forward; the backward runs in torch.

    The backward materialises ΔW once, (d_out, d_in) like W itself, and forms
    g = dy reshaped to (M, d_out):

    - dx = g (W + scale·ΔW);
    - G = gᵀ x, (d_out, d_in), the gradient of the summed weight; zero-padded to
      (⌈d_out/I⌉, I, d_in),
      dD[j] = scale · Σ_i G[j, i] ⊙ C[i] and dC[i] = scale · Σ_j G[j, i] ⊙ D[j];
    - dW = G when W requires grad (LoKRA+ freezes W, so usually skipped; G is formed anyway for
      dC and dD), db = Σ_rows g when b requires grad.

    The factored alternative for dC and dD, without G, holds an (M, J, d_in) intermediate, larger
    than G whenever M > I; G is the smaller one for any realistic batch.
    """

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        C: torch.Tensor,
        D: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        """Run the kernel and save what the backward needs."""
        y = lokra_plus_linear_triton(x, weight, bias, C, D, scale)
        ctx.save_for_backward(x, weight, C, D)
        ctx.scale = float(scale)
        return y

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """Gradients for x, weight, bias, C and D (None for scale)."""
        x, weight, C, D = ctx.saved_tensors
        s = ctx.scale
        d_out, d_in = weight.shape
        n_i = C.shape[0]
        g = dy.reshape(-1, d_out)  # (M, N)
        x2 = x.reshape(-1, d_in)  # (M, K)
        need_x, need_w, need_b, need_c, need_d = ctx.needs_input_grad[:5]
        dx = dw = db = dc = dd = None
        if need_x:
            w_eff = weight + s * delta_weight(C, D, d_out)  # (N, K)
            dx = (g @ w_eff).reshape(x.shape)  # (..., K)
        if need_w or need_c or need_d:
            gw = g.t() @ x2  # (N, K): gradient of W + s·ΔW
            if need_w:
                dw = gw
            if need_c or need_d:
                j_used = -(-d_out // n_i)
                gkr = gw.new_zeros(j_used * n_i, d_in)  # (j_used·I, K), rows past d_out stay 0
                gkr[:d_out] = gw
                gkr = gkr.view(j_used, n_i, d_in)  # (j_used, I, K)
                if need_c:
                    dc = s * torch.einsum("jik,jk->ik", gkr, D[:j_used])  # (I, K)
                if need_d:
                    dd = torch.zeros_like(D)  # (J, K); rows ≥ j_used never reach the crop
                    dd[:j_used] = s * torch.einsum("jik,ik->jk", gkr, C)
        if need_b:
            db = g.sum(0)  # (N,)
        return dx, dw, db, dc, dd, None


def lokra_plus_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    C: torch.Tensor,
    D: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """LoKRA+ linear layer: the fused kernel on CUDA when triton imports, else the reference.

    The kernel takes every tensor on CUDA in one dtype (float32, bfloat16 or float16); mixed
    dtypes (say an fp32 adapter on a bf16 base) take the reference, which promotes as torch does.

    Args:
        x: Inputs (..., d_in).
        weight: Frozen base weight (d_out, d_in).
        bias: Base bias (d_out,) or None.
        C: Factor (I, d_in).
        D: Factor (J, d_in), with I·J ≥ d_out.
        scale: The adapter scale.

    Returns:
        y = x (W + scale·ΔW)ᵀ + b, (..., d_out), differentiable in x, C, D (and W, b).

    """
    tensors = [t for t in (x, weight, bias, C, D) if t is not None]
    same = all(t.dtype == x.dtype and t.is_cuda for t in tensors) and x.dtype in KERNEL_DTYPES
    if same and triton is not None:
        return LoKRAPlusLinearFunction.apply(x, weight, bias, C, D, scale)
    return lokra_plus_linear_reference(x, weight, bias, C, D, scale)
