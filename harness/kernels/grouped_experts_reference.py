"""Grouped expert FFN in plain torch: the reference beside the Triton kernel `grouped_experts.py`.

This is the expert computation of the TEAM suite's tiny Mixture-of-Experts model
(`shared/specs/team.md` §5). Each row n of x is routed to k experts with routing weights, and

    y[n] = Σ_j weights[n, j] · FFN_{expert_ids[n, j]}(x[n]),   FFN_e(v) = silu(v W1[e]) W2[e],

with silu(z) = z · sigmoid(z). The SiLU expert MLP (no gate projection, no biases) is our choice for
the tiny model; the spec fixes the routing (softmax, top-k, renormalised), not the expert's form.

A (row, slot) pair whose weight is exactly 0 is skipped, never computed: TEAM's limited activation
zeroes the weights of surplus experts, and its acceptance checks count expert calls (spec §5,
checks 3 and 4), so an expert reached only through zero weights must not run.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _check_inputs(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    weights: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> None:
    """Check shapes, the ids' dtype and range, and the float dtypes the matmuls need."""
    if x.ndim != 2:
        raise ValueError(f"x must be (N, d); got {tuple(x.shape)}")
    n, d = x.shape
    if w1.ndim != 3 or w1.shape[1] != d:
        raise ValueError(f"w1 must be (E, d={d}, h); got {tuple(w1.shape)}")
    n_experts, _, hidden = w1.shape
    if tuple(w2.shape) != (n_experts, hidden, d):
        raise ValueError(
            f"w2 must be (E, h, d) = ({n_experts}, {hidden}, {d}) to match w1 {tuple(w1.shape)} "
            f"and x {tuple(x.shape)}; got {tuple(w2.shape)}"
        )
    _check_routing(expert_ids, weights, n_experts)
    if expert_ids.shape[0] != n:
        raise ValueError(
            f"expert_ids and weights must be (N={n}, k) like x's rows; got {tuple(weights.shape)}"
        )
    floats = (x, weights, w1, w2)
    if not all(t.is_floating_point() for t in floats) or len({x.dtype, w1.dtype, w2.dtype}) > 1:
        raise TypeError(
            "x, w1 and w2 must share one float dtype and weights must be float; got x "
            f"{x.dtype}, weights {weights.dtype}, w1 {w1.dtype}, w2 {w2.dtype}; cast them first"
        )


def _check_routing(expert_ids: torch.Tensor, weights: torch.Tensor, n_experts: int) -> None:
    if expert_ids.ndim != 2 or expert_ids.shape != weights.shape:
        raise ValueError(
            "expert_ids and weights must both be (N, k); got expert_ids "
            f"{tuple(expert_ids.shape)}, weights {tuple(weights.shape)}"
        )
    if expert_ids.dtype != torch.int64:
        raise TypeError(f"expert_ids must be int64; got {expert_ids.dtype}")
    if expert_ids.numel() > 0:
        lo, hi = int(expert_ids.min()), int(expert_ids.max())
        if lo < 0 or hi >= n_experts:
            raise ValueError(
                f"expert_ids must lie in [0, {n_experts}) for E={n_experts} experts; "
                f"got values in [{lo}, {hi}]"
            )


def _grouped_pairs(
    expert_ids: torch.Tensor, weights: torch.Tensor, n_experts: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The non-zero (row, slot) pairs grouped by expert, and each expert's pair count.

    Returns:
        pairs: (P,) int64 flat pair indices n·k + j with weights[n, j] ≠ 0, sorted by expert id
            (stable, so ascending n·k + j within an expert).
        counts: (E,) int64, the pairs of each expert: expert e owns
            pairs[counts[:e].sum() : counts[:e + 1].sum()].

    """
    live = torch.nonzero(weights.reshape(-1) != 0).squeeze(1)  # (P,)
    ids = expert_ids.reshape(-1)[live]  # (P,)
    ids, order = torch.sort(ids, stable=True)
    return live[order], torch.bincount(ids, minlength=n_experts)


def expert_rows(expert_ids: torch.Tensor, weights: torch.Tensor, n_experts: int) -> torch.Tensor:
    """Per expert, the (row, slot) pairs with non-zero weight routed to it: the calls it serves.

    Args:
        expert_ids: (N, k) int64 in [0, n_experts).
        weights: (N, k) routing weights; zero entries are not counted.
        n_experts: E.

    Returns:
        (E,) int64 counts on expert_ids' device; zero for an expert that no pair reaches.

    Raises:
        ValueError: On mismatched shapes or ids out of range.
        TypeError: If expert_ids is not int64.

    """
    _check_routing(expert_ids, weights, n_experts)
    return _grouped_pairs(expert_ids, weights, n_experts)[1]


def grouped_experts_reference(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    weights: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> torch.Tensor:
    """Grouped expert FFN: gather rows by expert, one matmul pair per expert, scatter back.

    The grouped expert FFN of the TEAM suite's tiny MoE (`shared/specs/team.md` §5), with the
    SiLU expert MLP chosen for that model: y[n] = Σ_j weights[n, j] · silu(x[n] W1[e]) W2[e],
    e = expert_ids[n, j].

    Args:
        x: (N, d) float inputs.
        expert_ids: (N, k) int64 expert of each slot, in [0, E).
        weights: (N, k) float routing weights; a slot with weight exactly 0 is skipped.
        w1: (E, d, h) first layer of each expert, x's dtype.
        w2: (E, h, d) second layer of each expert, x's dtype.

    Returns:
        y (N, d) in x's dtype, differentiable in x, weights, w1 and w2.

    Raises:
        ValueError: On mismatched shapes or expert ids out of range.
        TypeError: On non-int64 ids, or x, w1 and w2 not sharing one float dtype.

    Notes:
        Experts that receive no pair never run; a row whose weights are all zero gets y = 0.
        Weights are cast to x's dtype before they scale the expert outputs. The per-expert
        split reads the counts on the host (one device sync), as any grouped matmul in torch must.

    """
    _check_inputs(x, expert_ids, weights, w1, w2)
    k = expert_ids.shape[1]
    y = x.new_zeros(x.shape)  # (N, d)
    pairs, counts = _grouped_pairs(expert_ids, weights, w1.shape[0])
    flat_weights = weights.reshape(-1).to(x.dtype)  # (N·k,)
    for e, group in enumerate(torch.split(pairs, counts.tolist())):
        if group.numel() == 0:
            continue
        rows = group // k  # (P_e,)
        h = F.silu(x[rows] @ w1[e])  # (P_e, h)
        out = (h @ w2[e]) * flat_weights[group, None]  # (P_e, d)
        y.index_add_(0, rows, out)
    return y


def grouped_experts_naive(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    weights: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
) -> torch.Tensor:
    """The same y as a loop over rows and slots, one expert call per pair: ground truth for tests.

    Args:
        x: (N, d).
        expert_ids: (N, k) int64.
        weights: (N, k); zero-weight slots are skipped.
        w1: (E, d, h).
        w2: (E, h, d).

    Returns:
        y (N, d), differentiable in x, weights, w1 and w2.

    """
    _check_inputs(x, expert_ids, weights, w1, w2)
    rows = []
    for n in range(x.shape[0]):
        acc = x.new_zeros(x.shape[1])  # (d,)
        for j in range(expert_ids.shape[1]):
            if weights[n, j] == 0:
                continue
            e = int(expert_ids[n, j])
            acc = acc + weights[n, j].to(x.dtype) * (F.silu(x[n] @ w1[e]) @ w2[e])
        rows.append(acc)
    return torch.stack(rows) if rows else x.new_zeros(x.shape)
