"""L2A's sparse global attention in plain torch: the reference beside `sparse_global_attention.py`.

In an L2A decoder block (`shared/specs/l2a.md` §2) every token keeps a sliding-window attention, and
a learned router picks the tokens that also read the whole past: for a routed token t,

    a_t = softmax_{j ≤ t}(q_t · k_j · scale) · v_j,

over all keys and values of its sequence, and a_t = 0 for an unrouted one. The routing decision is
one per token, shared by all heads. The sparse path computes only the routed rows: it
stable-sorts the mask in descending order, which lists the routed positions first and in causal
order (stability), gathers those queries into a compact buffer, attends with the causal mask on
*original* positions (q_idx ≥ k_idx), and scatters the rows back into a zero tensor (spec §2,
"Sparse global kernel").
`dense_masked_attention` is the dense path of the spec: every row, then multiplied by the mask;
acceptance check 1 (spec §5) asks that the two agree on routed rows, values and gradients.

References:
    S. Choudhary, A. Chattopadhyay, L. Zancato, E. Nunez, M. Trager, W. Xia, S. Soatto, "Learning
    When to Attend: Conditional Memory Access for Long-Context LLMs", arXiv 2603.17484 (2026).

"""

from __future__ import annotations

import torch


def _check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, routed: torch.Tensor) -> None:
    """Shapes (B, H, T, D) for q, k, v and (B, T) for routed, one float dtype, one device."""
    if q.ndim != 4:
        raise ValueError(f"q must be (B, H, T, D); got {tuple(q.shape)}")
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            "q, k and v must share one shape (B, H, T, D); got q "
            f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    b, _, t, _ = q.shape
    if tuple(routed.shape) != (b, t):
        raise ValueError(
            f"routed must be (B, T) = ({b}, {t}), one decision per token; got {tuple(routed.shape)}"
        )
    if routed.dtype != torch.bool:
        raise TypeError(f"routed must be a bool mask; got {routed.dtype}")
    if not q.is_floating_point() or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(
            f"q, k and v must share one float dtype; got q {q.dtype}, k {k.dtype}, v {v.dtype}"
        )
    if any(t.device != q.device for t in (k, v, routed)):
        raise ValueError(
            f"tensors on several devices: {[str(t.device) for t in (q, k, v, routed)]}"
        )


def compact_indices(routed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The routed positions of each batch row, in causal order, and how many there are.

    Args:
        routed: (B, T) bool mask, True where a token reads global memory.

    Returns:
        idx: (B, M) int64 with M = max_b counts[b]. Row b lists its routed positions ascending
            in idx[b, :counts[b]]; the entries past counts[b] are padding, unrouted positions of
            that row (ascending too), valid for a gather but to be ignored.
        counts: (B,) int64 routed tokens per batch row.

    Notes:
        A stable descending sort of the mask, as the authors' kernel does (spec §2): stability
        keeps each group in position order. M is read on the host (one device sync).

    """
    if routed.ndim != 2 or routed.dtype != torch.bool:
        raise ValueError(
            f"routed must be a (B, T) bool mask; got {routed.dtype} {tuple(routed.shape)}"
        )
    counts = routed.sum(dim=1)  # (B,)
    order = torch.sort(routed.to(torch.int8), dim=1, descending=True, stable=True).indices
    width = int(counts.max()) if counts.numel() > 0 else 0  # host sync
    return order[:, :width], counts  # (B, M), (B,)


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half and single inputs, fp64 for double (so tests can compare in fp64)."""
    return torch.promote_types(dtype, torch.float32)


def sparse_global_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    routed: torch.Tensor,
    scale: float | None = None,
) -> torch.Tensor:
    """Causal attention for the routed query rows only: gather, attend over all keys, scatter.

    Args:
        q: (B, H, T, D) queries.
        k: (B, H, T, D) keys, q's dtype; every token's, routed or not.
        v: (B, H, T, D) values, q's dtype.
        routed: (B, T) bool, one routing decision per token shared by all heads.
        scale: Softmax scale; D**-0.5 when None.

    Returns:
        (B, H, T, D) in q's dtype: row t is causal attention over keys 0..t where routed[b, t],
        and exactly 0 elsewhere. Differentiable in q, k and v; unrouted rows of q get zero
        gradient.

    Raises:
        ValueError: On mismatched shapes or devices.
        TypeError: On a non-bool mask, or q, k and v not sharing one float dtype.

    Notes:
        Scores, softmax and the weighted sum run in fp32 (fp64 for fp64 inputs) and the result
        is rounded once to q's dtype. Every routed row attends at least to key 0, so no row is
        empty. A batch row without routed tokens, or a mask with none at all, gives zeros. The
        (B, H, M, T) score tensor is materialised: this is a reference, not a long-context path.

    """
    _check_inputs(q, k, v, routed)
    b, h, t, d = q.shape
    scale = d**-0.5 if scale is None else float(scale)
    ct = _compute_dtype(q.dtype)
    idx, counts = compact_indices(routed)  # (B, M), (B,)
    m = idx.shape[1]
    rows = idx[:, None, :, None].expand(b, h, m, d)  # (B, H, M, D)
    # padding rows (unrouted positions) are replaced by zeros before any arithmetic and after it,
    # so an unrouted query is never read: not even a NaN there reaches the output or a gradient
    live = (torch.arange(m, device=q.device) < counts[:, None])[:, None, :, None]  # (B, 1, M, 1)
    qc = torch.where(live, q.gather(2, rows), 0).to(ct)  # (B, H, M, D): the compact buffer
    s = (qc @ k.to(ct).transpose(-1, -2)) * scale  # (B, H, M, T)
    causal = idx[:, None, :, None] >= torch.arange(t, device=q.device)  # (B, 1, M, T)
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)  # (B, H, M, T)
    oc = torch.where(live, p @ v.to(ct), 0)  # (B, H, M, D)
    out = torch.zeros((b, h, t, d), dtype=ct, device=q.device).scatter(2, rows, oc)  # (B, H, T, D)
    return out.to(q.dtype)


def dense_masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    routed: torch.Tensor,
    scale: float | None = None,
) -> torch.Tensor:
    """Dense causal attention for every row, then multiplied by the mask: the spec's dense path.

    L2A's leakage step takes this path on a fraction of training steps so that unrouted rows'
    routers receive a gradient (spec §2, "Stochastic leakage"); here it is also the oracle of
    acceptance check 1.

    Args:
        q: (B, H, T, D) queries.
        k: (B, H, T, D) keys, q's dtype.
        v: (B, H, T, D) values, q's dtype.
        routed: (B, T) bool mask.
        scale: Softmax scale; D**-0.5 when None.

    Returns:
        (B, H, T, D) in q's dtype, causal attention times routed (as float), computed in fp32
        (fp64 for fp64 inputs); differentiable in q, k and v.

    Raises:
        ValueError: On mismatched shapes or devices.
        TypeError: On a non-bool mask, or q, k and v not sharing one float dtype.

    """
    _check_inputs(q, k, v, routed)
    t, d = q.shape[2], q.shape[3]
    scale = d**-0.5 if scale is None else float(scale)
    ct = _compute_dtype(q.dtype)
    s = (q.to(ct) @ k.to(ct).transpose(-1, -2)) * scale  # (B, H, T, T)
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()  # (T, T)
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)  # (B, H, T, T)
    out = (p @ v.to(ct)) * routed[:, None, :, None].to(ct)  # (B, H, T, D)
    return out.to(q.dtype)
