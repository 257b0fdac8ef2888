"""LoKRA+'s Khatri–Rao update in plain torch: the reference the fused kernel must match.

LoKRA+ (reconstructed, specs/lokra.md §2) replaces LoRA's BA by ΔW = crop_{d_out}(D ⊙ C), with
C (I×d_in), D (J×d_in) and I·J ≥ d_out, so that

    ΔW[o, j] = D[o // I, j] · C[o % I, j],    y = x·Wᵀ + b + scale · x·ΔWᵀ.

The Khatri–Rao structure is put on the columns (inputs) of ΔW, column j being d_j ⊗ c_j; this
orientation is our choice, the paper's is unknown (KRAdapter uses the row-wise, face-splitting
form). It is what gives k(ΔW) ≥ min(k_C + k_D − 1, d_in).

Two exact evaluations of x·ΔWᵀ for N rows of x:
- "factorised": T = x ⊙ D (N, J, d_in), then T·Cᵀ (N, J, I) and a crop; ΔW is never built and
  the intermediate holds N·min(I, J)·d_in numbers (the smaller factor is broadcast);
- "materialised": build ΔW (I·J·d_in numbers), then one matmul.
Both cost about N·I·J·d_in multiply-adds, so the only difference is memory: "auto" takes the
factorised path when N·min(I, J) < I·J, i.e. for decode-sized batches, and materialises for
training-sized ones, where ΔW is the smaller tensor. The fused kernel
(`harness.kernels.lokra_plus.lokra_plus_linear`) avoids both.
"""

from __future__ import annotations

from typing import Literal

import torch.nn.functional as F
from torch import Tensor

from harness.kernels.lokra_plus_reference import delta_weight

DeltaPath = Literal["auto", "factorised", "materialised"]


def kr_delta_weight(C: Tensor, D: Tensor, d_out: int) -> Tensor:
    """ΔW = crop_{d_out}(D ⊙ C), shape (d_out, d_in), without any scale (the kernel's reference)."""
    return delta_weight(C, D, d_out)


def kr_delta_output(
    x: Tensor, C: Tensor, D: Tensor, d_out: int, path: DeltaPath = "auto"
) -> Tensor:
    """Compute x·ΔWᵀ for x of shape (..., d_in); returns (..., d_out), without any scale."""
    n_i, n_j = C.shape[0], D.shape[0]  # I, J
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])  # (N, d_in)
    if path == "auto":
        path = "factorised" if x2.shape[0] * min(n_i, n_j) < n_i * n_j else "materialised"
    if path == "materialised":
        y = F.linear(x2, kr_delta_weight(C, D, d_out))  # (N, d_out)
    elif path == "factorised":
        if n_j <= n_i:
            y = (x2[:, None, :] * D) @ C.T  # (N, J, I)
        else:
            y = ((x2[:, None, :] * C) @ D.T).transpose(1, 2)  # (N, I, J) -> (N, J, I)
        y = y.reshape(x2.shape[0], n_j * n_i)[:, :d_out]  # row o = p·I + i
    else:
        raise ValueError(f"path={path!r} is not one of 'auto', 'factorised', 'materialised'")
    return y.reshape(*lead, d_out)


def lokra_plus_linear_torch(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    C: Tensor,
    D: Tensor,
    scale: float,
    path: DeltaPath = "auto",
) -> Tensor:
    """Compute y = x·Wᵀ + b + scale·x·ΔWᵀ, d_out = weight.shape[0]: the kernel's reference."""
    return F.linear(x, weight, bias) + scale * kr_delta_output(x, C, D, weight.shape[0], path)
