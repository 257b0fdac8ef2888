"""Kruskal rank, the Khatri–Rao product and the Kruskal-rank lemma (specs/lokra.md §2).

The Kruskal rank k_M of a matrix is the largest q such that *every* q columns of M are linearly
independent; 0 ≤ k_M ≤ rank(M), a zero column gives 0 and two proportional columns give ≤ 1.
Numerically, columns are normalised and a subset counts as dependent when the smallest singular
value of its normalised columns is below `tol`.

References:
    J. B. Kruskal, "Three-way arrays: rank and uniqueness of trilinear decompositions", Linear
    Algebra Appl. 18 (1977). N. D. Sidiropoulos and R. Bro, "On the uniqueness of multilinear
    decomposition of N-way arrays", J. Chemometrics 14 (2000): k(D ⊙ C) ≥ min(k_C + k_D − 1, R).

"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from harness.models.lokra.penalty import normalise_columns

# Largest column count exact_krank enumerates: C(16, 8) = 12,870 subsets at the widest size.
EXACT_MAX_COLUMNS = 16


def _all_independent(Mh: Tensor, subsets: Tensor, tol: float) -> bool:
    """Whether every subset (m, q) of the normalised columns has σ_min ≥ tol."""
    X = Mh[:, subsets].permute(1, 0, 2)  # (m, rows, q)
    return bool((torch.linalg.svdvals(X)[:, -1] >= tol).all())


def _prepared(M: Tensor) -> Tensor | None:
    """Normalised columns in float64, or None when M has no columns (k = 0)."""
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D matrix, got shape {tuple(M.shape)}")
    if M.shape[0] == 0 or M.shape[1] == 0:
        return None
    return normalise_columns(M.detach().double())  # a zero column stays zero: σ_min = 0


def exact_krank(M: Tensor, tol: float = 1e-3) -> int:
    """Kruskal rank of M (rows × n) by enumerating every column subset, for n ≤ 16.

    Args:
        M: the matrix; its columns are normalised first, so scaling a column changes nothing.
        tol: a subset is dependent when σ_min of its normalised columns is below tol.

    Returns:
        k_M, between 0 and min(rows, n).

    Notes:
        Sizes are tried in increasing order and the first size with a dependent subset stops the
        search, since independence of all q-subsets implies it for all smaller subsets.

    """
    n = M.shape[1] if M.ndim == 2 else 0
    if n > EXACT_MAX_COLUMNS:
        raise ValueError(
            f"exact_krank enumerates subsets and takes n <= {EXACT_MAX_COLUMNS} columns, got "
            f"{n}; use numerical_krank for larger matrices"
        )
    Mh = _prepared(M)
    if Mh is None:
        return 0
    for q in range(1, min(Mh.shape) + 1):
        subsets = torch.tensor(list(itertools.combinations(range(n), q)))
        if not _all_independent(Mh, subsets, tol):
            return q - 1
    return min(Mh.shape)


def numerical_krank(
    M: Tensor, tol: float = 1e-3, samples: int = 2000, generator: torch.Generator | None = None
) -> int:
    """Kruskal rank estimated from `samples` random subsets per size, for any n.

    Args:
        M: the matrix (rows × n).
        tol: a subset is dependent when σ_min of its normalised columns is below tol.
        samples: subsets drawn per size; a size with at most this many subsets is enumerated.
        generator: random source for the subsets (CPU); the global one when None.

    Returns:
        An upper bound on k_M that equals it whenever every size was enumerated, and otherwise
        misses only dependent subsets that no sample hit.

    """
    Mh = _prepared(M)
    if Mh is None:
        return 0
    n = Mh.shape[1]
    for q in range(1, min(Mh.shape) + 1):
        if math.comb(n, q) <= samples:
            subsets = torch.tensor(list(itertools.combinations(range(n), q)))
        else:
            keys = torch.rand(samples, n, generator=generator)
            subsets = keys.topk(q, dim=1).indices
        if not _all_independent(Mh, subsets.to(Mh.device), tol):
            return q - 1
    return min(Mh.shape)


def worst_subset_sigma(
    M: Tensor, q: int, samples: int = 2000, generator: torch.Generator | None = None
) -> float:
    """Smallest σ_min of the normalised columns over `samples` random q-column subsets.

    A continuous companion of `numerical_krank`: the k-rank only says whether this falls below
    the tolerance, this says by how much the worst subset found is from being dependent (1 for
    orthonormal columns, 0 for a dependent subset). Every subset is used when there are at most
    `samples` of them.
    """
    Mh = _prepared(M)
    if Mh is None or not 1 <= q <= min(Mh.shape):
        raise ValueError(f"q={q} must be between 1 and min(rows, columns) of M {tuple(M.shape)}")
    n = Mh.shape[1]
    if math.comb(n, q) <= samples:
        subsets = torch.tensor(list(itertools.combinations(range(n), q)))
    else:
        subsets = torch.rand(samples, n, generator=generator).topk(q, dim=1).indices
    X = Mh[:, subsets.to(Mh.device)].permute(1, 0, 2)  # (m, rows, q)
    return float(torch.linalg.svdvals(X)[:, -1].min())


def khatri_rao(D: Tensor, C: Tensor) -> Tensor:
    """Column-wise Khatri–Rao product D ⊙ C, (J·I)×R, whose column j is d_j ⊗ c_j.

    Row o of the result is D[o // I] * C[o % I], the layout LoKRA+ crops to d_out rows.
    """
    if C.ndim != 2 or D.ndim != 2 or C.shape[1] != D.shape[1]:
        raise ValueError(
            f"khatri_rao needs 2-D factors with equal column counts, got D {tuple(D.shape)} "
            f"and C {tuple(C.shape)}"
        )
    return (D[:, None, :] * C[None, :, :]).reshape(D.shape[0] * C.shape[0], C.shape[1])


@dataclass(frozen=True, slots=True)
class KruskalBound:
    """The Kruskal-rank lemma checked on one pair of factors."""

    k_c: int  # Kruskal rank of C
    k_d: int  # Kruskal rank of D
    k_product: int  # Kruskal rank of D ⊙ C
    bound: int  # min(k_c + k_d − 1, R), the lemma's lower bound on k_product
    holds: bool  # k_product >= bound


def kr_bound(C: Tensor, D: Tensor, tol: float = 1e-3) -> KruskalBound:
    """Check k(D ⊙ C) ≥ min(k_C + k_D − 1, R); exact k-ranks for R ≤ 16, numerical beyond."""
    rank = exact_krank if C.shape[1] <= EXACT_MAX_COLUMNS else numerical_krank
    k_c, k_d = rank(C, tol), rank(D, tol)
    k_p = rank(khatri_rao(D, C), tol)
    bound = min(k_c + k_d - 1, C.shape[1])
    return KruskalBound(k_c=k_c, k_d=k_d, k_product=k_p, bound=bound, holds=k_p >= bound)


def kr_bound_holds(C: Tensor, D: Tensor, tol: float = 1e-3) -> bool:
    """Whether the Kruskal-rank lemma's bound holds for C and D (see `kr_bound`)."""
    return kr_bound(C, D, tol).holds
