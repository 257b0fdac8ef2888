"""L2A's sparse global attention as FlashAttention-2-style Triton kernels, forward and backward.

In L2A (`shared/specs/l2a.md` §2) a learned router picks, per token, whether it also runs causal
attention over the whole past; the others get zero. Compute should scale with the routed fraction,
so the kernels visit only routed query rows. The design follows the spec's account of the authors'
Triton kernel (S. Choudhary et al., "Learning When to Attend: Conditional Memory Access for
Long-Context LLMs", arXiv 2603.17484, 2026); the code is ours.

Compaction (host, torch): a stable descending sort of the (B, T) mask lists each batch row's
routed positions in causal order (`compact_indices`); a compact row j of batch row b is original
position idx[b, j] for j < counts[b]. The heads share it. The kernels gather q (and dO) rows by
these indices straight from the (B, H, T, D) tensors, so the compact buffer is never written, and
they store O and dQ straight into the routed rows of zero-filled outputs: the scatter is the store.

- Forward, one program per (compact block of BLOCK_M rows, batch·head): online softmax over key
  blocks in fp32 (exp2, with log2(e) folded into the scale). Keys below the block holding the
  block's first row precede every row, so those blocks skip the mask; the rest take the causal
  mask on original indices, idx ≥ key; the loop stops at the block holding the largest index.
  It saves a log2-domain logsumexp per compact row, (B, H, M) fp32. Programs run the costliest
  (latest) compact blocks first.
- Backward: delta = rowsum(dO ⊙ O) per compact row (one small kernel); dK/dV, one program per
  (key block, batch·head), loops over compact blocks from the first row at or after the key tile
  (found on the host by a batched searchsorted: blocks wholly before the tile are skipped), with
  the causal mask only until the rows pass the tile's last key; dQ, one program per compact block,
  loops over key blocks like the forward. Each output element is written by one program: no
  atomics, deterministic.

Constraints. Inputs share one dtype among float32, bfloat16 and float16 and have unit stride
along D (others are copied). The kernels take a power-of-two head dim ≥ 16 with no mask along it:
another D ≤ 256 is zero-padded on the host (a copy of q, k and v; zero columns change no score and
add zero output columns, sliced off), and D > 256 is refused (`fallback_reason`), since a
(BLOCK_N, D) tile pair would outgrow shared memory. fp32 inputs take "ieee" dots (torch's fp32
matmul without TF32); half inputs take tensor cores with fp32 accumulation, P and dS rounded to
the input dtype before their dots, as FlashAttention does.

Dispatch (`sparse_global_attention`) takes the kernels on CUDA when triton imports, and the
differentiable reference (`sparse_global_attention_reference.py`) elsewhere. Tests run the kernels
on the CPU through Triton's interpreter (`TRITON_INTERPRET=1`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from harness.kernels.sparse_global_attention_kernels import (
    _sga_bwd_delta_kernel,
    _sga_bwd_dkdv_kernel,
    _sga_bwd_dq_kernel,
    _sga_fwd_kernel,
)
from harness.kernels.sparse_global_attention_reference import (
    _check_inputs,
    compact_indices,
    sparse_global_attention_reference,
)
from harness.kernels.triton_support import (
    KERNEL_DTYPES,
    interpreting,
    jit_for_mode,
    triton,
)

MAX_HEAD_DIM = 256  # past this a (BLOCK_N, D) K and V tile pair outgrows shared memory

_LOG2E = math.log2(math.e)


def _head_dim(d: int) -> int:
    """The kernels' head dim: D rounded up to a power of two, at least 16 (tl.dot's minimum)."""
    return max(16, 1 << (d - 1).bit_length())


def _prepare(x: torch.Tensor, head_dim: int) -> torch.Tensor:
    """Unit stride along D (a copy otherwise), zero-padded to head_dim columns."""
    if x.shape[-1] != head_dim:
        return F.pad(x, (0, head_dim - x.shape[-1]))  # contiguous
    return x if x.stride(-1) == 1 else x.contiguous()


def _dot_mode(dtype: torch.dtype) -> tuple[bool, str]:
    """(UPCAST, PRECISION) for the kernels' dots.

    fp32 takes "ieee" dots, as torch's default fp32 matmul (no TF32). The interpreter takes them
    for every dtype, on tiles upcast to fp32: triton's interpreter multiplies bf16 tiles as their
    raw uint16 storage (see lokra_plus.py). bf16·bf16 and fp16·fp16 products are exact in fp32,
    so the upcast tiles give the tensor-core result up to the order of summation.
    """
    interp = interpreting()
    upcast = interp and dtype != torch.float32
    return upcast, "ieee" if interp or dtype == torch.float32 else "tf32"


Config = tuple[int, int, int, int]  # (BLOCK_M, BLOCK_N, num_warps, num_stages)


def _configs(
    dtype: torch.dtype, head_dim: int, block_m: int | None, block_n: int | None
) -> tuple[Config, Config]:
    """The forward's and the backward's tiles; block_m and block_n, when given, override both."""
    # Untuned for speed: no GPU was at hand; benchmarks/l2a_kernel.py times them. Chosen so that
    # each kernel compiles for sm_90 (triton 3.9, ptxas -v, on a CPU host) without spilling:
    # - half, D ≤ 128: FlashAttention-2's usual forward tile, 128 compact rows × 64 keys, 8 warps,
    #   3 stages (D = 128: 128 KiB shared, 183 registers); backward 64 × 64, 8 warps, 2 stages
    #   (dK/dV 97 KiB, 243 registers; dQ 96 KiB, 181);
    # - half, D = 256: 64 × 32 forward (96 KiB, 202 registers) and 32 × 32 backward (dK/dV
    #   68 KiB, 184); 64 × 64 spills in the backward (440 B);
    # - fp32: "ieee" dots run on FMA units, not tensor cores, and need many registers: 32 × 32
    #   spills at D = 128 (forward 752 B), 16 × 16 does not (dK/dV at D = 256 spills 232 B).
    if dtype == torch.float32:
        fwd = bwd = (16, 16, 4, 2)
    elif head_dim > 128:
        fwd, bwd = (64, 32, 8, 2), (32, 32, 8, 2)
    else:
        fwd, bwd = (128, 64, 8, 3), (64, 64, 8, 2)
    for given in (block_m, block_n):
        if given is not None and (given < 16 or given & (given - 1)):
            raise ValueError(
                f"block_m and block_n must be powers of two ≥ 16 (tl.dot's minimum); "
                f"got block_m={block_m}, block_n={block_n}"
            )
    fwd = (block_m or fwd[0], block_n or fwd[1], fwd[2], fwd[3])
    bwd = (block_m or bwd[0], block_n or bwd[1], bwd[2], bwd[3])
    return fwd, bwd


def _strides(x: torch.Tensor) -> tuple[int, int, int]:
    """(batch, head, token) strides; the D stride is 1."""
    return x.stride(0), x.stride(1), x.stride(2)


def _forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    idx: torch.Tensor,
    counts: torch.Tensor,
    scale: float,
    cfg: Config,
) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, H, T, D), zero on unrouted rows, and the log2 logsumexp (B, H, M) per compact row."""
    b, h, t, d = q.shape
    m = idx.shape[1]
    o = torch.zeros((b, h, t, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, m), dtype=torch.float32, device=q.device)
    if m == 0 or b * h == 0:
        return o, lse
    block_m, block_n, num_warps, num_stages = cfg
    upcast, precision = _dot_mode(q.dtype)
    jit_for_mode(_sga_fwd_kernel, interpreting())[(triton.cdiv(m, block_m), b * h)](
        q,
        k,
        v,
        o,
        lse,
        idx,
        counts,
        h,
        t,
        m,
        scale * _LOG2E,
        *_strides(q),
        *_strides(k),
        *_strides(v),
        *_strides(o),
        UPCAST=upcast,
        PRECISION=precision,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        HEAD_DIM=d,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return o, lse


def _spans(idx: torch.Tensor, counts: torch.Tensor, t: int, block_n: int) -> torch.Tensor:
    """Per key tile, the compact rows where the dK/dV loop starts and where its mask ends.

    Returns:
        (B, n_kblocks, 2) int32: the first compact row whose position is at or after the tile's
        first key, and the first at or after its last key (a batched searchsorted).

    """
    b, m = idx.shape
    live = torch.arange(m, device=idx.device) < counts[:, None]  # (B, M)
    ascending = torch.where(live, idx, t).contiguous()  # (B, M): padding past every position
    starts = torch.arange(0, t, block_n, device=idx.device, dtype=idx.dtype)  # (NKB,)
    bounds = torch.stack([starts, starts + block_n - 1], dim=1).reshape(1, -1)  # (1, 2·NKB)
    spans = torch.searchsorted(ascending, bounds.expand(b, -1).contiguous())  # (B, 2·NKB)
    return spans.to(torch.int32).contiguous()


def _backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    do: torch.Tensor,
    lse: torch.Tensor,
    idx: torch.Tensor,
    counts: torch.Tensor,
    scale: float,
    cfg: Config,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (dQ zero on unrouted rows, dK, dV), each (B, H, T, D) in q's dtype."""
    b, h, t, d = q.shape
    m = idx.shape[1]
    dq = torch.zeros((b, h, t, d), dtype=q.dtype, device=q.device)
    if m == 0 or b * h == 0:
        return dq, torch.zeros_like(dq), torch.zeros_like(dq)
    dk = torch.empty((b, h, t, d), dtype=q.dtype, device=q.device)  # every row stored
    dv = torch.empty_like(dk)
    block_m, block_n, num_warps, num_stages = cfg
    upcast, precision = _dot_mode(q.dtype)
    interp = interpreting()
    delta = torch.empty((b, h, m), dtype=torch.float32, device=q.device)
    jit_for_mode(_sga_bwd_delta_kernel, interp)[(triton.cdiv(m, block_m), b * h)](
        o,
        do,
        delta,
        idx,
        counts,
        h,
        m,
        *_strides(o),
        *_strides(do),
        BLOCK_M=block_m,
        HEAD_DIM=d,
        num_warps=4,
    )
    n_kblocks = triton.cdiv(t, block_n)
    spans = _spans(idx, counts, t, block_n)
    jit_for_mode(_sga_bwd_dkdv_kernel, interp)[(n_kblocks, b * h)](
        q,
        k,
        v,
        do,
        dk,
        dv,
        lse,
        delta,
        idx,
        counts,
        spans,
        h,
        t,
        m,
        n_kblocks,
        scale * _LOG2E,
        scale,
        *_strides(q),
        *_strides(k),
        *_strides(v),
        *_strides(do),
        *_strides(dk),
        UPCAST=upcast,
        PRECISION=precision,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        HEAD_DIM=d,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    jit_for_mode(_sga_bwd_dq_kernel, interp)[(triton.cdiv(m, block_m), b * h)](
        q,
        k,
        v,
        do,
        dq,
        lse,
        delta,
        idx,
        counts,
        h,
        t,
        m,
        scale * _LOG2E,
        scale,
        *_strides(q),
        *_strides(k),
        *_strides(v),
        *_strides(do),
        *_strides(dq),
        UPCAST=upcast,
        PRECISION=precision,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        HEAD_DIM=d,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return dq, dk, dv


class SparseGlobalAttentionFunction(torch.autograd.Function):
    """Autograd for the sparse global attention kernels: forward, delta, dK/dV and dQ.

    Saves q, k and v (padded along D where the kernels need it), O, the per-row logsumexp and
    the compaction; the backward recomputes P tile by tile, as FlashAttention-2 does. Not twice
    differentiable.
    """

    @staticmethod
    def forward(
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        routed: torch.Tensor,
        scale: float,
        block_m: int | None,
        block_n: int | None,
    ) -> torch.Tensor:
        """Compact the mask, run the forward kernel and save what the backward needs."""
        d = q.shape[-1]
        head_dim = _head_dim(d)
        fwd_cfg, bwd_cfg = _configs(q.dtype, head_dim, block_m, block_n)
        qp, kp, vp = (_prepare(x, head_dim) for x in (q, k, v))
        idx, counts = compact_indices(routed)  # (B, M), (B,)
        idx = idx.to(torch.int32).contiguous()
        counts = counts.to(torch.int32).contiguous()
        o, lse = _forward(qp, kp, vp, idx, counts, scale, fwd_cfg)
        ctx.save_for_backward(qp, kp, vp, o, lse, idx, counts)
        ctx.scale = scale
        ctx.cfg = bwd_cfg
        ctx.d = d
        return o if head_dim == d else o[..., :d].contiguous()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, do: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        """Gradients for q, k and v (None for the mask, the scale and the blocks)."""
        qp, kp, vp, o, lse, idx, counts = ctx.saved_tensors
        dop = _prepare(do.to(qp.dtype), qp.shape[-1])
        dq, dk, dv = _backward(qp, kp, vp, o, dop, lse, idx, counts, ctx.scale, ctx.cfg)
        d = ctx.d
        if qp.shape[-1] != d:
            dq, dk, dv = (g[..., :d] for g in (dq, dk, dv))
        return dq, dk, dv, None, None, None, None


def _check_kernel_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """What the kernels add to the reference's checks: dtype, head dim, offsets, device."""
    if q.dtype not in KERNEL_DTYPES:
        raise TypeError(
            f"the sparse global attention kernels take q, k and v in one dtype among "
            f"{[str(d) for d in KERNEL_DTYPES]}; got {q.dtype}; cast them first"
        )
    if q.shape[-1] > MAX_HEAD_DIM:
        raise ValueError(
            f"the kernels take a head dim D ≤ {MAX_HEAD_DIM}; got {q.shape[-1]}; "
            "use sparse_global_attention, which falls back to the reference"
        )
    t = q.shape[2]
    for x in (q, k, v):  # row offsets within a head are int32 in the kernels
        if (t - 1) * x.stride(2) + _head_dim(x.shape[-1]) >= 2**31:
            raise ValueError(
                f"T = {t} rows of stride {x.stride(2)} pass the kernels' int32 offsets (2^31)"
            )
    if not q.is_cuda and not interpreting():
        raise ValueError(
            f"the kernels run on CUDA tensors, or on CPU ones under TRITON_INTERPRET=1; got "
            f"{q.device} without the interpreter; use sparse_global_attention, which falls back"
        )


def sparse_global_attention_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    routed: torch.Tensor,
    scale: float | None = None,
    *,
    block_m: int | None = None,
    block_n: int | None = None,
) -> torch.Tensor:
    """Causal attention for the routed query rows only, through the Triton kernels.

    L2A's sparse global attention (`shared/specs/l2a.md` §2): row t of the output is causal
    attention over keys 0..t where routed[b, t], and exactly 0 elsewhere.

    Args:
        q: (B, H, T, D) queries, float32, bfloat16 or float16, D ≤ 256.
        k: (B, H, T, D) keys, q's dtype.
        v: (B, H, T, D) values, q's dtype.
        routed: (B, T) bool, one routing decision per token shared by all heads.
        scale: Softmax scale; D**-0.5 when None.
        block_m: Compact query rows per tile, a power of two ≥ 16, for every kernel; None takes
            the defaults (half dtypes: forward 128, backward 64 for D ≤ 128, else 64 and 32;
            fp32: 16). Tests take 16 to cross many tile edges.
        block_n: Keys per tile, likewise (half dtypes: 64 for D ≤ 128, else 32; fp32: 16).

    Returns:
        (B, H, T, D) in q's dtype, differentiable in q, k and v through
        `SparseGlobalAttentionFunction`.

    Raises:
        RuntimeError: If triton is not installed.
        ValueError: On mismatched shapes or devices, D > 256, bad blocks, offsets past int32,
            or CPU tensors without TRITON_INTERPRET=1.
        TypeError: On a non-bool mask or an unsupported or mixed dtype.

    Notes:
        Runs on CUDA tensors, or on CPU tensors when TRITON_INTERPRET=1 (slow; for tests). The
        compaction is built in torch and its width M read on the host (one sync per call). A D
        that is not a power of two ≥ 16 is zero-padded to one (a copy of q, k and v).

    """
    if triton is None:
        raise RuntimeError("triton is not installed; use sparse_global_attention, which falls back")
    _check_inputs(q, k, v, routed)
    _check_kernel_inputs(q, k, v)
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return SparseGlobalAttentionFunction.apply(q, k, v, routed, scale, block_m, block_n)


def fallback_reason(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, routed: torch.Tensor
) -> str | None:
    """Why `sparse_global_attention` would take the reference for these inputs; None if not.

    Args:
        q: (B, H, T, D) queries.
        k: (B, H, T, D) keys.
        v: (B, H, T, D) values.
        routed: (B, T) bool mask.

    Returns:
        A one-line reason, or None when the kernels apply.

    """
    if triton is None:
        return "triton is not installed"
    if not all(t.is_cuda for t in (q, k, v, routed)):
        return "the tensors are not all on CUDA"
    if q.dtype not in KERNEL_DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return f"dtypes {q.dtype}, {k.dtype}, {v.dtype} are not one of {KERNEL_DTYPES}"
    if q.shape[-1] > MAX_HEAD_DIM:
        return f"head dim {q.shape[-1]} exceeds the kernels' {MAX_HEAD_DIM}"
    return None


def sparse_global_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    routed: torch.Tensor,
    scale: float | None = None,
) -> torch.Tensor:
    """L2A sparse global attention: the Triton kernels when they apply, else the torch reference.

    The kernels run when triton imports, every tensor is on CUDA, q, k and v share one dtype
    among float32, bfloat16 and float16, and D ≤ 256 (`fallback_reason` says which condition
    failed). Both paths are differentiable in q, k and v.

    Args:
        q: (B, H, T, D) queries.
        k: (B, H, T, D) keys, q's dtype.
        v: (B, H, T, D) values, q's dtype.
        routed: (B, T) bool, one routing decision per token shared by all heads.
        scale: Softmax scale; D**-0.5 when None.

    Returns:
        (B, H, T, D) in q's dtype: causal attention on routed rows, exactly 0 on the others.

    Raises:
        ValueError: On mismatched shapes or devices.
        TypeError: On a non-bool mask, or q, k and v not sharing one float dtype.

    """
    _check_inputs(q, k, v, routed)
    if fallback_reason(q, k, v, routed) is None:
        return sparse_global_attention_triton(q, k, v, routed, scale)
    return sparse_global_attention_reference(q, k, v, routed, scale)
