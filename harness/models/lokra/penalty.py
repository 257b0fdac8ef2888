"""The LoKRA log-determinant penalty on a factor's column subsets (specs/lokra.md §2).

**Reconstruction.** The paper's formula was not available; the authors' blog only says the method
maximises "the log-determinant of each sub-matrix". What is implemented is the spec's
reconstruction: for a factor M (r×n) whose n columns live in R^r,

    P(M) = −(1/m) · Σ_t log det(M̂_{S_t}ᵀ M̂_{S_t} + ε·I_s),   m̂_j = m_j / (‖m_j‖ + 1e-8).

Columns are normalised so the penalty cannot be lowered by scaling; by Hadamard's inequality a
unit-column Gram matrix has det ≤ 1, so P ≥ −s·log(1 + ε), with equality iff every subset is
orthonormal. Pass A (r×d_in) for LoRA's A and Bᵀ (r×d_out) for B; LoKRA+ passes C (I×d_in) and
D (J×d_in) as they are. The cost is O(n·s²) per call.

References:
    Y. Xu et al., "LoKRA: Low Kruskal-Rank Adaptation", ICML 2026 (poster); the formula here is
    reconstructed from the AMD ROCm blog post, not read from the paper.

"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

# Added to each column norm before dividing, so a zero column stays zero instead of NaN.
NORM_FLOOR = 1e-8


def normalise_columns(M: Tensor) -> Tensor:
    """Scale each column of M (…, r, n) to (almost) unit length: m / (‖m‖ + 1e-8)."""
    return M / (torch.linalg.vector_norm(M, dim=-2, keepdim=True) + NORM_FLOOR)


def _randperm(n: int, device: torch.device, generator: torch.Generator | None) -> Tensor:
    if generator is None:
        return torch.randperm(n, device=device)
    return torch.randperm(n, generator=generator, device=generator.device).to(device)


def choose_subsets(
    n: int,
    s: int,
    mode: Literal["partition", "sample"] = "partition",
    n_subsets: int | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> list[Tensor]:
    """Column subsets for one penalty evaluation, as index tensors grouped by size.

    Args:
        n: number of columns.
        s: subset size, clamped to n.
        mode: "partition" permutes the columns and cuts them into ⌈n/s⌉ consecutive blocks, the
            last one smaller when s does not divide n; "sample" draws `n_subsets` subsets of
            size s, each without repetition.
        n_subsets: number of subsets in "sample" mode.
        generator: random source; the global one when None.
        device: where the index tensors live.

    Returns:
        One (m_k, s_k) long tensor per subset size (one or two of them).

    """
    if s < 1 or n < 1:
        raise ValueError(f"need s >= 1 and n >= 1 columns, got s={s}, n={n}")
    s = min(s, n)
    device = torch.device(device)
    if mode == "partition":
        perm = _randperm(n, device, generator)
        full = n // s
        blocks = [perm[: full * s].view(full, s)]
        if n % s:
            blocks.append(perm[full * s :].view(1, n % s))
        return blocks
    if mode == "sample":
        if n_subsets is None or n_subsets < 1:
            raise ValueError(f"mode='sample' needs n_subsets >= 1, got {n_subsets!r}")
        gen_device = generator.device if generator is not None else device
        keys = torch.rand(n_subsets, n, generator=generator, device=gen_device)
        return [keys.topk(s, dim=1).indices.to(device)]
    raise ValueError(f"mode={mode!r} is not one of 'partition', 'sample'")


def subset_logdets(M: Tensor, subsets: Tensor, eps: float) -> Tensor:
    """Compute log det(M̂_Sᵀ M̂_S + ε·I) for each row S of `subsets` (m, s); returns shape (m,)."""
    return _stacked_logdets(M[None], subsets[None], eps)[0]


def _stacked_logdets(Ms: Tensor, subsets: Tensor, eps: float) -> Tensor:
    """Log det(M̂_Sᵀ M̂_S + ε·I) for L stacked factors (L, r, n) and their subsets (L, m, s)."""
    wide = Ms if Ms.dtype in (torch.float32, torch.float64) else Ms.float()  # no fp16 logdet
    cols = normalise_columns(wide).transpose(1, 2)  # (L, n, r): one row per column
    X = cols[torch.arange(cols.shape[0], device=cols.device)[:, None, None], subsets]  # (L,m,s,r)
    gram = X @ X.transpose(-1, -2)  # (L, m, s, s)
    if eps == 0:
        # Exact values for tests: a singular subset gives log det = -inf.
        sign, logabs = torch.linalg.slogdet(gram)
        return torch.where(sign > 0, logabs, torch.full_like(logabs, -math.inf))
    gram = gram + eps * torch.eye(gram.shape[-1], device=gram.device, dtype=gram.dtype)
    # Gram + εI is positive definite (eigenvalues >= ε, far above float32 rounding of a
    # unit-column Gram), so Cholesky applies; cholesky_ex avoids a device sync on the check.
    L, _ = torch.linalg.cholesky_ex(gram)
    return 2.0 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)


def stacked_logdet_penalty(
    Ms: Tensor,
    s: int,
    eps: float,
    mode: Literal["partition", "sample"] = "partition",
    n_subsets: int | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """P(M) of L same-shape factors stacked as (L, r, n), in one batched evaluation; shape (L,).

    Each factor gets its own random subsets, drawn as in `choose_subsets` (a uniform random
    permutation cut into blocks, or `n_subsets` random s-subsets), so the result has the same
    distribution as L calls of `logdet_penalty`, at the cost of one set of batched kernels
    instead of L: the penalty of a model's many adapted layers is then not a long chain of tiny
    operations (see benchmarks/lokra.py, section step).
    """
    if Ms.ndim != 3:
        raise ValueError(f"Ms must be stacked factors (L, r, n), got shape {tuple(Ms.shape)}")
    n_fac, n = Ms.shape[0], Ms.shape[2]
    if s < 1 or n < 1:
        raise ValueError(f"need s >= 1 and n >= 1 columns, got s={s}, n={n}")
    s = min(s, n)
    gen_device = generator.device if generator is not None else Ms.device
    if mode == "partition":
        keys = torch.rand(n_fac, n, generator=generator, device=gen_device)
        perm = keys.argsort(dim=1).to(Ms.device)  # (L, n): a uniform permutation per factor
        full = n // s
        groups = [perm[:, : full * s].reshape(n_fac, full, s)]
        if n % s:
            groups.append(perm[:, full * s :].reshape(n_fac, 1, n % s))
    elif mode == "sample":
        if n_subsets is None or n_subsets < 1:
            raise ValueError(f"mode='sample' needs n_subsets >= 1, got {n_subsets!r}")
        keys = torch.rand(n_fac, n_subsets, n, generator=generator, device=gen_device)
        groups = [keys.topk(s, dim=2).indices.to(Ms.device)]  # (L, m, s)
    else:
        raise ValueError(f"mode={mode!r} is not one of 'partition', 'sample'")
    logdets = torch.cat([_stacked_logdets(Ms, g, eps) for g in groups], dim=1)  # (L, m)
    return -logdets.mean(dim=1)


def logdet_penalty(
    M: Tensor,
    s: int,
    eps: float,
    mode: Literal["partition", "sample"] = "partition",
    n_subsets: int | None = None,
    generator: torch.Generator | None = None,
    *,
    subsets: Tensor | Sequence[Sequence[int]] | None = None,
) -> Tensor:
    """LoKRA's (reconstructed) log-det penalty P(M) of a factor whose columns live in R^r.

    Args:
        M: factor of shape (r, n): A, Bᵀ, C or D; its n columns are what must be independent.
        s: subset size (the spec's default is r, the row count), clamped to n.
        eps: ε added to each Gram matrix; > 0 in training, 0 allowed for exact test values.
        mode: how subsets are chosen when `subsets` is None, see `choose_subsets`.
        n_subsets: subsets per call in "sample" mode.
        generator: random source for the subsets; the global one when None.
        subsets: explicit subsets, an (m, s) index array; overrides `s`, `mode` and the rest.

    Returns:
        A differentiable scalar tensor, −mean_t log det(M̂_{S_t}ᵀ M̂_{S_t} + ε·I), in float32 or
        wider; +inf when ε = 0 and some subset is linearly dependent.

    Notes:
        Bounded below by −s·log(1 + ε) and unchanged by rescaling any column (by any non-zero
        factor, negative included). Every subset counts equally in the mean, the smaller last
        block of a partition included.

    """
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D factor (r, n), got shape {tuple(M.shape)}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if subsets is not None:
        groups = [torch.as_tensor(subsets, dtype=torch.long, device=M.device)]
        if groups[0].ndim != 2 or groups[0].numel() == 0:
            raise ValueError("subsets must be a non-empty (m, s) array of column indices")
    else:
        groups = choose_subsets(M.shape[1], s, mode, n_subsets, generator, M.device)
    logdets = torch.cat([subset_logdets(M, g, eps) for g in groups])  # (m,)
    return -logdets.mean()
