"""LoKRA+ fused kernel (through Triton's interpreter on the CPU) against the torch reference.

The kernel module is imported here without TRITON_INTERPRET; the `interpret` fixture sets it per
test. That works in one process with any other tests because `lokra_plus` wraps the kernel with
triton.jit at launch, once per interpreter mode, rather than at import.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from harness.kernels import lokra_plus
from harness.kernels.lokra_plus import (
    LoKRAPlusLinearFunction,
    lokra_plus_linear,
    lokra_plus_linear_triton,
)
from harness.kernels.lokra_plus_reference import delta_weight, lokra_plus_linear_reference
from tests.kernels.common import SMALL, UNIT_ROUNDOFF


def _inputs(
    lead: tuple[int, ...] = (3, 5),
    d_in: int = 37,
    d_out: int = 50,
    n_i: int = 8,
    n_j: int = 7,
    dtype: torch.dtype = torch.float32,
    bias: bool = True,
    seed: int = 0,
) -> dict[str, torch.Tensor | None]:
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype)

    return {
        "x": randn(*lead, d_in),
        "weight": randn(d_out, d_in),
        "bias": randn(d_out) if bias else None,
        "C": randn(n_i, d_in),
        "D": randn(n_j, d_in),
    }


def _assert_within_bound(y: torch.Tensor, t: dict[str, torch.Tensor | None], scale: float) -> None:
    """y against the float64 reference on the same inputs, elementwise.

    Bound: one rounding of W + s·ΔW and one of y to the input dtype (unit roundoff u each), plus
    the K-term fp32 accumulation (K·2⁻²⁴), all relative to S = |x|·|W + s·ΔW|ᵀ + |b|.
    """
    t64 = {k: (v.double() if v is not None else None) for k, v in t.items()}
    ref = lokra_plus_linear_reference(**t64, scale=scale)
    w_eff = t64["weight"] + scale * delta_weight(t64["C"], t64["D"], t64["weight"].shape[0])
    s = t64["x"].abs() @ w_eff.abs().t()
    if t64["bias"] is not None:
        s = s + t64["bias"].abs()
    k = t64["x"].shape[-1]
    bound = (2 * UNIT_ROUNDOFF[y.dtype] + k * 2.0**-24) * s
    err = (y.double() - ref).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"error reaches {worst:.2f}× the rounding bound"


def test_delta_weight_matches_kron_columns() -> None:
    t = _inputs()
    dw = delta_weight(t["C"], t["D"], 50)
    # Khatri-Rao by definition: column j is kron(d_j, c_j); then crop to d_out rows.
    cols = [torch.kron(t["D"][:, j], t["C"][:, j]) for j in range(37)]
    assert torch.equal(dw, torch.stack(cols, dim=1)[:50])  # the same products: bitwise equal


def test_delta_weight_khatri_rao_rank_spec_vector() -> None:
    # spec §3: random C, D in R^{3×6} (Kruskal rank 3 each) give D ⊙ C (9×6) of full rank 6.
    gen = torch.Generator().manual_seed(0)
    c, d = torch.randn(3, 6, generator=gen), torch.randn(3, 6, generator=gen)
    assert torch.linalg.matrix_rank(delta_weight(c, d, 9).double()) == 6


def test_factors_too_small_raise() -> None:
    with pytest.raises(ValueError, match="I·J"):
        delta_weight(torch.ones(4, 5), torch.ones(3, 5), 13)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("blocks", [None, SMALL])
@pytest.mark.parametrize(
    ("d_out", "n_i", "n_j"),
    [(50, 8, 7), (56, 8, 7), (5, 8, 1)],
    ids=["cropped", "exact", "I>d_out"],
)
def test_forward_fp32(interpret: None, bias: bool, blocks, d_out: int, n_i: int, n_j: int) -> None:
    t = _inputs(d_out=d_out, n_i=n_i, n_j=n_j, bias=bias)
    y = lokra_plus_linear_triton(**t, scale=0.7, blocks=blocks)
    assert y.shape == (3, 5, d_out) and y.dtype == torch.float32
    _assert_within_bound(y, t, 0.7)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_forward_half_dtypes(interpret: None, dtype: torch.dtype) -> None:
    t = _inputs(dtype=dtype)
    y = lokra_plus_linear_triton(**t, scale=0.7, blocks=SMALL)
    assert y.dtype == dtype
    _assert_within_bound(y, t, 0.7)


def test_zero_d_is_plain_linear(interpret: None) -> None:
    t = _inputs()
    t["D"] = torch.zeros_like(t["D"])
    y = lokra_plus_linear_triton(**t, scale=2.0, blocks=SMALL)
    # fp32, K = 37 terms: summation order alone, ≲ K·2⁻²⁴ relative to |x|·|W|ᵀ ≈ 30
    torch.testing.assert_close(y, F.linear(t["x"], t["weight"], t["bias"]), rtol=1e-5, atol=1e-5)


def test_full_tiles_and_empty_batch(interpret: None) -> None:
    t = _inputs(lead=(32,), d_in=32, d_out=32, n_i=4, n_j=8)  # every tile full: no masked lanes
    _assert_within_bound(lokra_plus_linear_triton(**t, scale=0.5, blocks=SMALL), t, 0.5)
    t = _inputs(lead=(2, 0))
    assert lokra_plus_linear_triton(**t, scale=0.5).shape == (2, 0, 50)


@pytest.mark.parametrize("bias", [True, False])
def test_function_gradients_match_reference_autograd(interpret: None, bias: bool) -> None:
    t = _inputs(bias=bias)
    leaves = {k: v.clone().requires_grad_(k != "weight") for k, v in t.items() if v is not None}
    ref_leaves = {k: v.detach().clone().requires_grad_(v.requires_grad) for k, v in leaves.items()}
    dy = torch.randn(3, 5, 50, generator=torch.Generator().manual_seed(9))
    args = [leaves.get(k) for k in ("x", "weight", "bias", "C", "D")]
    y = LoKRAPlusLinearFunction.apply(*args, 0.7)
    y.backward(dy)
    ref_args = {k: ref_leaves.get(k) for k in ("x", "weight", "bias", "C", "D")}
    lokra_plus_linear_reference(**ref_args, scale=0.7).backward(dy)
    assert leaves["weight"].grad is None  # W frozen: no gradient formed
    for name, leaf in leaves.items():
        if name != "weight":
            # fp32 sums of ≤ 56 terms in another order: ≲ 1e-6 relative, so 1e-5 has headroom
            torch.testing.assert_close(leaf.grad, ref_leaves[name].grad, rtol=1e-5, atol=1e-5)


def test_function_weight_gradient_when_requested(interpret: None) -> None:
    t = _inputs(lead=(4,), d_out=5, n_i=2, n_j=3)
    w = t["weight"].clone().requires_grad_()
    w_ref = t["weight"].clone().requires_grad_()
    LoKRAPlusLinearFunction.apply(t["x"], w, t["bias"], t["C"], t["D"], 0.3).sum().backward()
    lokra_plus_linear_reference(t["x"], w_ref, t["bias"], t["C"], t["D"], 0.3).sum().backward()
    torch.testing.assert_close(w.grad, w_ref.grad, rtol=1e-5, atol=1e-5)  # fp32, 4-term sums


def test_dispatch_takes_reference_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_kernel(*_: object) -> None:
        raise AssertionError("the kernel ran on CPU tensors")

    monkeypatch.setattr(lokra_plus.LoKRAPlusLinearFunction, "apply", no_kernel)
    t = _inputs()
    y = lokra_plus_linear(**t, scale=0.7)
    assert torch.equal(y, lokra_plus_linear_reference(**t, scale=0.7))


def test_kernel_rejects_mixed_dtypes() -> None:
    t = _inputs()
    t["C"] = t["C"].double()
    with pytest.raises(TypeError, match="one dtype"):
        lokra_plus_linear_triton(**t, scale=1.0)


def test_module_imports_and_dispatches_without_triton() -> None:
    code = (
        "import sys; sys.modules['triton'] = None\n"  # makes `import triton` raise ImportError
        "import torch\n"
        "from harness.kernels.lokra_plus import lokra_plus_linear, lokra_plus_linear_triton\n"
        "a = torch.ones(2, 3)\n"
        "y = lokra_plus_linear(a, torch.ones(4, 3), None, a, a, 1.0)\n"
        "assert y.shape == (2, 4) and bool((y == 6).all()), y\n"
        "try:\n"
        "    lokra_plus_linear_triton(a, torch.ones(4, 3), None, a, a, 1.0)\n"
        "except RuntimeError as ex:\n"
        "    assert 'not installed' in str(ex)\n"
        "else:\n"
        "    raise AssertionError('no error without triton')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_blocks_must_be_powers_of_two(interpret: None) -> None:
    with pytest.raises(ValueError, match="powers of two"):
        lokra_plus_linear_triton(**_inputs(), scale=1.0, blocks=(16, 24, 16))
