"""Grouped expert FFN forward as one Triton kernel over per-expert tiles of routed pairs.

The grouped expert FFN of the TEAM suite's tiny MoE (`shared/specs/team.md` §5):
y[n] = Σ_j weights[n, j] · silu(x[n] W1[e]) W2[e] with e = expert_ids[n, j]; the SiLU expert MLP
is our choice for the tiny model (see `grouped_experts_reference.py`). Pairs with weight exactly 0
are skipped: no program computes them.

The host groups the non-zero (row, slot) pairs by expert (a stable sort) and cuts each expert's
run into tiles of at most BLOCK_M pairs, listed as (expert, start, count): a tile never straddles
two experts. A program takes one tile and one BLOCK_D-wide chunk of the output columns. It gathers
the tile's x rows by index and, for each BLOCK_H slice of the hidden dimension, forms
h = silu(x_tile W1[e][:, slice]) (reducing over d in BLOCK_D steps) and accumulates
h W2[e][slice, chunk] in fp32; h never reaches memory. It scales each row by its routing weight
and writes it to the pair's own row of an (N·k, d) fp32 buffer, which is zero for skipped slots.
The host then sums the k slots of each row in a fixed order: deterministic, with no atomics.

When d > BLOCK_D, each output chunk recomputes x_tile W1[e]; the defaults take BLOCK_D = d up to
128, so the tiny model (d = 128) runs one chunk and no recompute.

Dispatch (`grouped_experts`) takes the kernel on CUDA when triton imports and no gradient is
needed, and the differentiable reference elsewhere. Tests run the kernel on the CPU through
Triton's interpreter (`TRITON_INTERPRET=1`).
"""

from __future__ import annotations

import torch

from harness.kernels.grouped_experts_reference import (
    _check_inputs,
    _grouped_pairs,
    grouped_experts_reference,
)
from harness.kernels.triton_support import (
    KERNEL_DTYPES,
    interpreting,
    jit_for_mode,
    tl,
    triton,
)


# Not decorated at import, and builtins only in the body: see harness.kernels.triton_support.
def _grouped_experts_fwd_kernel(
    x_ptr,  # (N, d)
    w_ptr,  # (N·k,) routing weights, flat
    w1_ptr,  # (E, d, h)
    w2_ptr,  # (E, h, d)
    pairs_ptr,  # (P,) int64 flat pair ids n·k + j, grouped by expert
    tiles_ptr,  # (T, 3) int32 rows (expert, start in pairs, count ≤ BLOCK_M)
    out_ptr,  # (N·k, d) fp32, one row per pair
    D,
    H,
    n_slots,  # k: pair p belongs to row p // k
    stride_xn,
    stride_xd,
    stride_w1e,
    stride_w1d,
    stride_w1h,
    stride_w2e,
    stride_w2h,
    stride_w2d,
    stride_op,
    stride_od,
    IEEE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tile = tl.program_id(0)
    chunk = tl.program_id(1)
    expert = tl.load(tiles_ptr + tile * 3).to(tl.int64)
    start = tl.load(tiles_ptr + tile * 3 + 1)
    count = tl.load(tiles_ptr + tile * 3 + 2)

    offs_m = tl.arange(0, BLOCK_M)
    mask_m = offs_m < count
    pair = tl.load(pairs_ptr + start + offs_m, mask=mask_m, other=0)  # (BM,) int64
    row = pair // n_slots  # (BM,); row 0 on masked lanes, never stored
    offs_k = tl.arange(0, BLOCK_D)  # reduction over d for x W1
    offs_h = tl.arange(0, BLOCK_H)
    offs_n = chunk.to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D)  # output columns of this chunk
    mask_n = offs_n < D

    w1_base = w1_ptr + expert * stride_w1e
    w2_base = w2_ptr + expert * stride_w2e
    acc = tl.full((BLOCK_M, BLOCK_D), 0.0, dtype=tl.float32)
    for h0 in range(0, H, BLOCK_H):
        mask_h = offs_h < H - h0
        z = tl.full((BLOCK_M, BLOCK_H), 0.0, dtype=tl.float32)
        for k0 in range(0, D, BLOCK_D):
            mask_k = offs_k < D - k0
            x_ptrs = x_ptr + row[:, None] * stride_xn + (k0 + offs_k)[None, :] * stride_xd
            x = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)  # (BM, BK)
            w1_ptrs = (
                w1_base + (k0 + offs_k)[:, None] * stride_w1d + (h0 + offs_h)[None, :] * stride_w1h
            )
            w1 = tl.load(w1_ptrs, mask=mask_k[:, None] & mask_h[None, :], other=0.0)  # (BK, BH)
            if IEEE_DOT:  # full-precision fp32 products (bf16·bf16 and fp16·fp16 are exact)
                z = tl.dot(x.to(tl.float32), w1.to(tl.float32), z, input_precision="ieee")
            else:  # bf16/fp16 tensor cores, fp32 accumulate
                z = tl.dot(x, w1, z)
        # silu in fp32, then rounded to the input dtype as torch's reference rounds it; masked
        # hidden columns have z = 0, so silu = 0 and they add nothing below.
        h = (z / (1.0 + tl.exp(-z))).to(x_ptr.dtype.element_ty)  # (BM, BH)
        w2_ptrs = w2_base + (h0 + offs_h)[:, None] * stride_w2h + offs_n[None, :] * stride_w2d
        w2 = tl.load(w2_ptrs, mask=mask_h[:, None] & mask_n[None, :], other=0.0)  # (BH, BD)
        if IEEE_DOT:
            acc = tl.dot(h.to(tl.float32), w2.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(h, w2, acc)

    route = tl.load(w_ptr + pair, mask=mask_m, other=0.0).to(tl.float32)  # (BM,)
    acc = acc * route[:, None]
    out_ptrs = out_ptr + pair[:, None] * stride_op + offs_n[None, :] * stride_od
    tl.store(out_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])


def _tiles(counts: torch.Tensor, block_m: int) -> torch.Tensor:
    """(T, 3) int32 tiles (expert, start, count): each expert's run of pairs cut into BLOCK_M."""
    ends = torch.cumsum(counts, 0)  # (E,)
    starts = ends - counts
    per_expert = (counts + block_m - 1) // block_m  # (E,); 0 for an expert without pairs
    n_tiles = int(per_expert.sum())  # host sync: the grid size
    expert = torch.repeat_interleave(
        torch.arange(counts.numel(), device=counts.device), per_expert, output_size=n_tiles
    )  # (T,)
    first = torch.cumsum(per_expert, 0) - per_expert  # (E,) index of each expert's first tile
    within = torch.arange(n_tiles, device=counts.device) - first[expert]  # (T,)
    start = starts[expert] + within * block_m
    count = torch.clamp(ends[expert] - start, max=block_m)
    return torch.stack([expert, start, count], dim=1).to(torch.int32).contiguous()


def grouped_experts_triton(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    weights: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    *,
    blocks: tuple[int, int, int] | None = None,
) -> torch.Tensor:
    """Launch the grouped expert forward: y[n] = Σ_j weights[n, j] · silu(x[n] W1[e]) W2[e].

    The grouped expert FFN of the TEAM suite's tiny MoE (`shared/specs/team.md` §5), with the
    SiLU expert MLP chosen for that model.

    Args:
        x: (N, d) inputs, float32, bfloat16 or float16.
        expert_ids: (N, k) int64 expert of each slot, in [0, E).
        weights: (N, k) routing weights, x's dtype; a slot with weight exactly 0 is skipped.
        w1: (E, d, h), x's dtype.
        w2: (E, h, d), x's dtype.
        blocks: (BLOCK_M, BLOCK_H, BLOCK_D), powers of two ≥ 16, overriding the defaults: pairs
            per tile, the hidden slice, and the d chunk (both the reduction step of x W1 and the
            output columns per program). Tests use small ones to cross many tile edges.

    Returns:
        y (N, d) in x's dtype, accumulated in fp32. Forward only, not differentiable: use
        `grouped_experts` (which falls back to the reference when a gradient is needed) or
        `grouped_experts_reference` for training.

    Raises:
        RuntimeError: If triton is not installed.
        ValueError: On inconsistent shapes or devices, or expert ids out of range.
        TypeError: On unsupported or mixed dtypes.

    Notes:
        Runs on CUDA tensors, or on CPU tensors when TRITON_INTERPRET=1 (slow; for tests). The
        grouping and the tile list are built in torch and read once on the host (the grid size).
        The slots of a row are summed in fp32 in slot order, then rounded once to x's dtype.

    """
    if triton is None:
        raise RuntimeError("triton is not installed; use grouped_experts, which falls back")
    _check_inputs(x, expert_ids, weights, w1, w2)
    tensors = (x, weights, w1, w2)
    if x.dtype not in KERNEL_DTYPES or any(t.dtype != x.dtype for t in tensors):
        raise TypeError(
            "the grouped experts kernel takes x, weights, w1 and w2 in one dtype among "
            f"{[str(d) for d in KERNEL_DTYPES]}; got {[str(t.dtype) for t in tensors]}; "
            "cast them first"
        )
    if any(t.device != x.device for t in (*tensors, expert_ids)):
        raise ValueError(
            f"tensors on several devices: {[str(t.device) for t in (*tensors, expert_ids)]}"
        )
    n, d = x.shape
    n_experts, _, hidden = w1.shape
    k = expert_ids.shape[1]
    if n * k >= 2**31:
        raise ValueError(f"N·k = {n * k} pairs exceed the kernel's int32 tile offsets (2^31)")
    if blocks is None:
        # Untuned: no GPU was at hand to measure. 64 pairs per tile and a 64-wide hidden slice;
        # BLOCK_D covers d ≤ 128 in one chunk (no recompute of x W1), 128 beyond.
        blocks = (64, 64, min(128, max(16, triton.next_power_of_2(d))))
    if len(blocks) != 3 or any(b < 16 or b & (b - 1) for b in blocks):
        raise ValueError(
            f"blocks must be three powers of two ≥ 16 (tl.dot's minimum); got {blocks}"
        )
    block_m, block_h, block_d = blocks
    out = torch.zeros((n * k, d), dtype=torch.float32, device=x.device)  # (N·k, d)
    pairs, counts = _grouped_pairs(expert_ids, weights, n_experts)
    if pairs.numel() > 0 and d > 0:
        tiles = _tiles(counts, block_m)
        x2, w1c, w2c = x.contiguous(), w1.contiguous(), w2.contiguous()
        # fp32 inputs take "ieee" dots, as torch's default fp32 matmul (no TF32). The interpreter
        # takes them for every dtype: triton's interpreter multiplies bf16 tiles as their raw
        # uint16 storage (see lokra_plus.py), which yields garbage.
        ieee = x.dtype == torch.float32 or interpreting()
        grid = (tiles.shape[0], triton.cdiv(d, block_d))
        jit_for_mode(_grouped_experts_fwd_kernel, interpreting())[grid](
            x2,
            weights.contiguous(),
            w1c,
            w2c,
            pairs,
            tiles,
            out,
            d,
            hidden,
            k,
            x2.stride(0),
            x2.stride(1),
            w1c.stride(0),
            w1c.stride(1),
            w1c.stride(2),
            w2c.stride(0),
            w2c.stride(1),
            w2c.stride(2),
            out.stride(0),
            out.stride(1),
            IEEE_DOT=ieee,
            BLOCK_M=block_m,
            BLOCK_H=block_h,
            BLOCK_D=block_d,
            num_warps=4,
        )
    return out.view(n, k, d).sum(dim=1).to(x.dtype)  # (N, d): slots summed in a fixed order


def grouped_experts(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    weights: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> torch.Tensor:
    """Grouped expert FFN: the Triton kernel when it applies, else the torch reference.

    The grouped expert FFN of the TEAM suite's tiny MoE (`shared/specs/team.md` §5), with the
    SiLU expert MLP chosen for that model. The kernel runs when triton imports, every tensor is
    on CUDA, x, weights, w1 and w2 share one dtype among float32, bfloat16 and float16, and no
    gradient is needed (grad mode off, or no input requires grad); the kernel is forward only.
    Anything else takes `grouped_experts_reference`, which is differentiable.

    Args:
        x: (N, d) inputs.
        expert_ids: (N, k) int64 in [0, E).
        weights: (N, k) routing weights; zero-weight slots are skipped.
        w1: (E, d, h).
        w2: (E, h, d).

    Returns:
        y (N, d) in x's dtype.

    """
    floats = (x, weights, w1, w2)
    on_cuda = all(t.is_cuda for t in (*floats, expert_ids))
    one_dtype = x.dtype in KERNEL_DTYPES and all(t.dtype == x.dtype for t in floats)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in floats)
    if triton is not None and on_cuda and one_dtype and not needs_grad:
        return grouped_experts_triton(x, expert_ids, weights, w1, w2)
    return grouped_experts_reference(x, expert_ids, weights, w1, w2)
