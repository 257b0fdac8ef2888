"""The Triton kernels of L2A's sparse global attention: forward, and the three backward passes.

Launched, and documented, by `harness.kernels.sparse_global_attention` (the host side: compaction,
tile choice, autograd). One program per compact query block or key block, per batch·head.
"""

from __future__ import annotations

from harness.kernels.triton_support import tl

# Not decorated at import, and builtins only in the bodies: see harness.kernels.triton_support.
# Row maxima and sums go through the builtin tl.reduce with triton's own combine functions, the
# calls that tl.max and tl.sum (themselves @jit wrappers) make; the interpreter recognises those
# two functions and reduces in numpy.


def _sga_fwd_kernel(
    q_ptr,  # (B, H, T, D), unit stride along D, like k and v
    k_ptr,
    v_ptr,
    o_ptr,  # (B, H, T, D) contiguous, zero-filled: routed rows are stored here
    lse_ptr,  # (B, H, M) fp32, log2-domain logsumexp of each compact row
    idx_ptr,  # (B, M) int32 original position of each compact row
    counts_ptr,  # (B,) int32 routed rows per batch row
    H,
    T,
    M,
    qk_scale,  # softmax scale · log2(e)
    stride_qb,
    stride_qh,
    stride_qt,
    stride_kb,
    stride_kh,
    stride_kt,
    stride_vb,
    stride_vh,
    stride_vt,
    stride_ob,
    stride_oh,
    stride_ot,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M  # latest blocks first
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    count = tl.load(counts_ptr + b)
    idx_row = idx_ptr + b * M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    live_m = offs_m < count
    rows = tl.load(idx_row + offs_m, mask=live_m, other=0)  # (BM,) original positions
    non_empty = start_m < count
    first = tl.load(idx_row + start_m, mask=non_empty, other=0)
    last = tl.load(idx_row + tl.minimum(start_m + BLOCK_M, count) - 1, mask=non_empty, other=-1)
    lo = first // BLOCK_N * BLOCK_N  # keys below lo precede every row: no mask
    hi = last + 1  # stop at the block holding the largest original index; 0 if empty

    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    q_base = q_ptr + b64 * stride_qb + h64 * stride_qh
    k_base = k_ptr + b64 * stride_kb + h64 * stride_kh
    v_base = v_ptr + b64 * stride_vb + h64 * stride_vh
    o_base = o_ptr + b64 * stride_ob + h64 * stride_oh
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q_ptrs = q_base + rows[:, None] * stride_qt + offs_d[None, :]
    q = tl.load(q_ptrs, mask=live_m[:, None], other=0.0)  # (BM, D), gathered by original index
    if UPCAST:
        q = q.to(tl.float32)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.full((BLOCK_M,), 0.0, dtype=tl.float32)
    acc = tl.full((BLOCK_M, HEAD_DIM), 0.0, dtype=tl.float32)
    for phase in tl.static_range(2):  # 0: keys [0, lo), unmasked; 1: keys [lo, hi), causal mask
        if phase == 0:
            n_lo = 0
            n_hi = lo
        else:
            n_lo = lo
            n_hi = hi
        for start_n in range(n_lo, n_hi, BLOCK_N):
            keys = start_n + offs_n  # (BN,)
            kt_ptrs = k_base + keys[None, :] * stride_kt + offs_d[:, None]  # (D, BN)
            v_ptrs = v_base + keys[:, None] * stride_vt + offs_d[None, :]  # (BN, D)
            if phase == 0:
                kt = tl.load(kt_ptrs)
                vb = tl.load(v_ptrs)
            else:
                kt = tl.load(kt_ptrs, mask=(keys < T)[None, :], other=0.0)
                vb = tl.load(v_ptrs, mask=(keys < T)[:, None], other=0.0)
            if UPCAST:
                kt = kt.to(tl.float32)
                vb = vb.to(tl.float32)
            s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale  # (BM, BN), log2 units
            if phase == 1:  # also masks keys ≥ T, which exceed every row
                s = tl.where(rows[:, None] >= keys[None, :], s, float("-inf"))
            # finite from the first block on: every row admits key 0, in the first block visited
            m_new = tl.maximum(m_i, tl.reduce(s, 1, tl.standard._elementwise_max))
            alpha = tl.exp2(m_i - m_new)  # (BM,)
            p = tl.exp2(s - m_new[:, None])  # (BM, BN)
            l_i = l_i * alpha + tl.reduce(p, 1, tl.standard._sum_combine)
            p_in = p.to(q_ptr.dtype.element_ty)  # rounded as the tensor-core dot takes it
            if UPCAST:
                p_in = p_in.to(tl.float32)
            acc = tl.dot(p_in, vb, acc * alpha[:, None], input_precision=PRECISION)
            m_i = m_new

    l_i = tl.where(live_m, l_i, 1.0)  # rows past count (l = 0 in an empty block): not stored
    out = acc / l_i[:, None]  # (BM, D)
    o_ptrs = o_base + rows[:, None] * stride_ot + offs_d[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=live_m[:, None])
    tl.store(lse_ptr + bh.to(tl.int64) * M + offs_m, m_i + tl.log2(l_i), mask=live_m)


def _sga_bwd_delta_kernel(
    o_ptr,  # (B, H, T, D)
    do_ptr,  # (B, H, T, D)
    delta_ptr,  # (B, H, M) fp32: rowsum(dO ⊙ O) per compact row
    idx_ptr,
    counts_ptr,
    H,
    M,
    stride_ob,
    stride_oh,
    stride_ot,
    stride_dob,
    stride_doh,
    stride_dot,
    BLOCK_M: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    count = tl.load(counts_ptr + b)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    live_m = offs_m < count
    rows = tl.load(idx_ptr + b * M + offs_m, mask=live_m, other=0)  # (BM,)
    offs_d = tl.arange(0, HEAD_DIM)
    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    o_ptrs = o_ptr + b64 * stride_ob + h64 * stride_oh + rows[:, None] * stride_ot + offs_d[None, :]
    do_ptrs = (
        do_ptr + b64 * stride_dob + h64 * stride_doh + rows[:, None] * stride_dot + offs_d[None, :]
    )
    o = tl.load(o_ptrs, mask=live_m[:, None], other=0.0).to(tl.float32)  # (BM, D)
    do = tl.load(do_ptrs, mask=live_m[:, None], other=0.0).to(tl.float32)  # (BM, D)
    delta = tl.reduce(o * do, 1, tl.standard._sum_combine)  # (BM,)
    tl.store(delta_ptr + bh.to(tl.int64) * M + offs_m, delta, mask=live_m)


def _sga_bwd_dkdv_kernel(
    q_ptr,  # (B, H, T, D), unit stride along D, like k, v and do
    k_ptr,
    v_ptr,
    do_ptr,
    dk_ptr,  # (B, H, T, D) contiguous, like dv: every key row is stored
    dv_ptr,
    lse_ptr,  # (B, H, M) fp32
    delta_ptr,  # (B, H, M) fp32
    idx_ptr,  # (B, M) int32
    counts_ptr,  # (B,) int32
    spans_ptr,  # (B, n_kblocks, 2) int32: first compact row with idx ≥ tile start, ≥ tile end
    H,
    T,
    M,
    n_kblocks,
    qk_scale,
    scale,
    stride_qb,
    stride_qh,
    stride_qt,
    stride_kb,
    stride_kh,
    stride_kt,
    stride_vb,
    stride_vh,
    stride_vt,
    stride_dob,
    stride_doh,
    stride_dot,
    stride_gb,  # dk and dv
    stride_gh,
    stride_gt,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    pid_n = tl.program_id(0)
    start_n = pid_n * BLOCK_N
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    count = tl.load(counts_ptr + b)
    idx_row = idx_ptr + b * M
    span = spans_ptr + (b * n_kblocks + pid_n) * 2
    r0 = tl.load(span)  # rows before r0 precede the tile: skipped
    r1 = tl.load(span + 1)  # rows from r1 on follow the tile's last key: no mask
    r_mid = r0 + (r1 - r0 + BLOCK_M - 1) // BLOCK_M * BLOCK_M  # end of the masked blocks

    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    q_base = q_ptr + b64 * stride_qb + h64 * stride_qh
    do_base = do_ptr + b64 * stride_dob + h64 * stride_doh
    lse_bh = lse_ptr + bh.to(tl.int64) * M
    delta_bh = delta_ptr + bh.to(tl.int64) * M
    offs_d = tl.arange(0, HEAD_DIM)
    keys = start_n + tl.arange(0, BLOCK_N)  # (BN,)
    live_n = keys < T
    k_ptrs = k_ptr + b64 * stride_kb + h64 * stride_kh + keys[:, None] * stride_kt + offs_d[None, :]
    v_ptrs = v_ptr + b64 * stride_vb + h64 * stride_vh + keys[:, None] * stride_vt + offs_d[None, :]
    kb = tl.load(k_ptrs, mask=live_n[:, None], other=0.0)  # (BN, D)
    vb = tl.load(v_ptrs, mask=live_n[:, None], other=0.0)  # (BN, D)
    if UPCAST:
        kb = kb.to(tl.float32)
        vb = vb.to(tl.float32)

    dk = tl.full((BLOCK_N, HEAD_DIM), 0.0, dtype=tl.float32)
    dv = tl.full((BLOCK_N, HEAD_DIM), 0.0, dtype=tl.float32)
    for phase in tl.static_range(2):  # 0: rows [r0, r_mid), causal mask; 1: [r_mid, count)
        if phase == 0:
            m_lo = r0
            m_hi = r1
        else:
            m_lo = r_mid
            m_hi = count
        for start_m in range(m_lo, m_hi, BLOCK_M):
            offs_m = start_m + tl.arange(0, BLOCK_M)
            live_m = offs_m < count
            rows = tl.load(idx_row + offs_m, mask=live_m, other=0)  # (BM,)
            qt_ptrs = q_base + rows[None, :] * stride_qt + offs_d[:, None]  # (D, BM)
            do_ptrs = do_base + rows[:, None] * stride_dot + offs_d[None, :]  # (BM, D)
            qt = tl.load(qt_ptrs, mask=live_m[None, :], other=0.0)
            do = tl.load(do_ptrs, mask=live_m[:, None], other=0.0)
            if UPCAST:
                qt = qt.to(tl.float32)
                do = do.to(tl.float32)
            # rows past count: lse = +inf, so their P is 0 (and dO is 0)
            lse = tl.load(lse_bh + offs_m, mask=live_m, other=float("inf"))  # (BM,)
            delta = tl.load(delta_bh + offs_m, mask=live_m, other=0.0)  # (BM,)
            st = tl.dot(kb, qt, input_precision=PRECISION) * qk_scale  # (BN, BM)
            if phase == 0:
                st = tl.where(keys[:, None] <= rows[None, :], st, float("-inf"))
            pt = tl.exp2(st - lse[None, :])  # (BN, BM), P transposed
            pt_in = pt.to(q_ptr.dtype.element_ty)
            if UPCAST:
                pt_in = pt_in.to(tl.float32)
            dv = tl.dot(pt_in, do, dv, input_precision=PRECISION)
            dpt = tl.dot(vb, tl.trans(do), input_precision=PRECISION)  # (BN, BM)
            dst = pt * (dpt - delta[None, :])  # (BN, BM), dS transposed
            dst_in = dst.to(q_ptr.dtype.element_ty)
            if UPCAST:
                dst_in = dst_in.to(tl.float32)
            dk = tl.dot(dst_in, tl.trans(qt), dk, input_precision=PRECISION)

    g_off = b64 * stride_gb + h64 * stride_gh + keys[:, None] * stride_gt + offs_d[None, :]
    tl.store(dk_ptr + g_off, (dk * scale).to(dk_ptr.dtype.element_ty), mask=live_n[:, None])
    tl.store(dv_ptr + g_off, dv.to(dv_ptr.dtype.element_ty), mask=live_n[:, None])


def _sga_bwd_dq_kernel(
    q_ptr,  # (B, H, T, D), unit stride along D, like k, v and do
    k_ptr,
    v_ptr,
    do_ptr,
    dq_ptr,  # (B, H, T, D) contiguous, zero-filled: routed rows are stored here
    lse_ptr,
    delta_ptr,
    idx_ptr,
    counts_ptr,
    H,
    T,
    M,
    qk_scale,
    scale,
    stride_qb,
    stride_qh,
    stride_qt,
    stride_kb,
    stride_kh,
    stride_kt,
    stride_vb,
    stride_vh,
    stride_vt,
    stride_dob,
    stride_doh,
    stride_dot,
    stride_dqb,
    stride_dqh,
    stride_dqt,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M  # latest blocks first
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    count = tl.load(counts_ptr + b)
    idx_row = idx_ptr + b * M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    live_m = offs_m < count
    rows = tl.load(idx_row + offs_m, mask=live_m, other=0)  # (BM,)
    non_empty = start_m < count
    first = tl.load(idx_row + start_m, mask=non_empty, other=0)
    last = tl.load(idx_row + tl.minimum(start_m + BLOCK_M, count) - 1, mask=non_empty, other=-1)
    lo = first // BLOCK_N * BLOCK_N
    hi = last + 1

    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    k_base = k_ptr + b64 * stride_kb + h64 * stride_kh
    v_base = v_ptr + b64 * stride_vb + h64 * stride_vh
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    q_ptrs = q_ptr + b64 * stride_qb + h64 * stride_qh + rows[:, None] * stride_qt
    do_ptrs = do_ptr + b64 * stride_dob + h64 * stride_doh + rows[:, None] * stride_dot
    q = tl.load(q_ptrs + offs_d[None, :], mask=live_m[:, None], other=0.0)  # (BM, D)
    do = tl.load(do_ptrs + offs_d[None, :], mask=live_m[:, None], other=0.0)  # (BM, D)
    if UPCAST:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    lse = tl.load(lse_ptr + bh.to(tl.int64) * M + offs_m, mask=live_m, other=float("inf"))
    delta = tl.load(delta_ptr + bh.to(tl.int64) * M + offs_m, mask=live_m, other=0.0)

    dq = tl.full((BLOCK_M, HEAD_DIM), 0.0, dtype=tl.float32)
    for phase in tl.static_range(2):  # as in the forward
        if phase == 0:
            n_lo = 0
            n_hi = lo
        else:
            n_lo = lo
            n_hi = hi
        for start_n in range(n_lo, n_hi, BLOCK_N):
            keys = start_n + offs_n
            kt_ptrs = k_base + keys[None, :] * stride_kt + offs_d[:, None]  # (D, BN)
            vt_ptrs = v_base + keys[None, :] * stride_vt + offs_d[:, None]  # (D, BN)
            if phase == 0:
                kt = tl.load(kt_ptrs)
                vt = tl.load(vt_ptrs)
            else:
                kt = tl.load(kt_ptrs, mask=(keys < T)[None, :], other=0.0)
                vt = tl.load(vt_ptrs, mask=(keys < T)[None, :], other=0.0)
            if UPCAST:
                kt = kt.to(tl.float32)
                vt = vt.to(tl.float32)
            s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale  # (BM, BN)
            if phase == 1:
                s = tl.where(rows[:, None] >= keys[None, :], s, float("-inf"))
            p = tl.exp2(s - lse[:, None])  # (BM, BN)
            dp = tl.dot(do, vt, input_precision=PRECISION)  # (BM, BN)
            ds = p * (dp - delta[:, None])
            ds_in = ds.to(q_ptr.dtype.element_ty)
            if UPCAST:
                ds_in = ds_in.to(tl.float32)
            dq = tl.dot(ds_in, tl.trans(kt), dq, input_precision=PRECISION)

    dq_ptrs = dq_ptr + b64 * stride_dqb + h64 * stride_dqh + rows[:, None] * stride_dqt
    dq_ptrs = dq_ptrs + offs_d[None, :]
    tl.store(dq_ptrs, (dq * scale).to(dq_ptr.dtype.element_ty), mask=live_m[:, None])
