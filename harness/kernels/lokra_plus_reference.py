"""LoKRA+ linear layer in plain torch: the reference beside the Triton kernel in `lokra_plus.py`.

LoKRA+ (reconstructed method; see `shared/specs/lokra.md` §2) replaces LoRA's update B·A by a
Khatri-Rao product cropped to the weight's shape:

    ΔW = crop_{d_out×d_in}(D ⊙ C),   column j of D ⊙ C = d_j ⊗ c_j,

with C of shape (I, d_in), D of shape (J, d_in) and I·J ≥ d_out, so that
ΔW[o, j] = D[o // I, j] · C[o % I, j]. The layer computes y = x Wᵀ + b + scale · x ΔWᵀ.

The orientation (Khatri-Rao along the columns of ΔW, one column per input feature) is our
reconstruction: the paper's exact form was not available (spec §4).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _check_factors(C: torch.Tensor, D: torch.Tensor, d_out: int) -> None:
    if C.ndim != 2 or D.ndim != 2:
        raise ValueError(
            f"LoKRA+ factors must be 2-D, (I, d_in) and (J, d_in); got C {tuple(C.shape)}, "
            f"D {tuple(D.shape)}"
        )
    if C.shape[1] != D.shape[1]:
        raise ValueError(
            f"C and D must share d_in (their second dimension); got C {tuple(C.shape)}, "
            f"D {tuple(D.shape)}"
        )
    if C.shape[0] * D.shape[0] < d_out:
        raise ValueError(
            f"I·J = {C.shape[0]}·{D.shape[0]} = {C.shape[0] * D.shape[0]} < d_out = {d_out}; "
            "raise I or J so that the Khatri-Rao product covers every output row"
        )


def delta_weight(C: torch.Tensor, D: torch.Tensor, d_out: int) -> torch.Tensor:
    """Materialise ΔW = crop(D ⊙ C) of shape (d_out, d_in); differentiable in C and D.

    Args:
        C: The (I, d_in) factor; its row `o % I` enters output row o.
        D: The (J, d_in) factor; its row `o // I` enters output row o.
        d_out: Rows to keep from the I·J rows of the Khatri-Rao product.

    Returns:
        ΔW with ΔW[o, j] = D[o // I, j] · C[o % I, j], in the factors' dtype.

    Raises:
        ValueError: If the factors are not 2-D, disagree on d_in, or I·J < d_out.

    Notes:
        Only the ⌈d_out / I⌉ rows of D that reach the crop are multiplied, so the product never
        holds more than (⌈d_out / I⌉·I, d_in) elements.

    References:
        N. D. Sidiropoulos and R. Bro, "On the uniqueness of multilinear decomposition of
        N-way arrays", J. Chemometrics 14 (2000): the Khatri-Rao Kruskal-rank lemma.

    """
    _check_factors(C, D, d_out)
    n_i, d_in = C.shape
    j_used = -(-d_out // n_i)  # ceil(d_out / I): the D rows that reach the crop
    kr = D[:j_used, None, :] * C[None, :, :]  # (j_used, I, d_in); row o = j·I + i
    return kr.reshape(j_used * n_i, d_in)[:d_out]  # (d_out, d_in)


def lokra_plus_linear_reference(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    C: torch.Tensor,
    D: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """LoKRA+ linear, y = x (W + scale·ΔW)ᵀ + b, unfused: materialise ΔW, then one matmul.

    Args:
        x: Inputs of shape (..., d_in).
        weight: The frozen base weight W, (d_out, d_in).
        bias: The base bias b, (d_out,), or None.
        C: The (I, d_in) Khatri-Rao factor.
        D: The (J, d_in) Khatri-Rao factor, with I·J ≥ d_out.
        scale: The adapter's scale (α / r style), a Python float.

    Returns:
        y of shape (..., d_out), differentiable in every tensor argument.

    """
    dw = delta_weight(C, D, weight.shape[0])  # (d_out, d_in)
    return F.linear(x, weight + scale * dw, bias)  # (..., d_out)
