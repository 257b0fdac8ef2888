"""L2A sparse global attention: the torch reference against the dense masked path (acceptance
check 1 of `shared/specs/l2a.md` §5) and torch's own causal attention, the Triton kernels (through
the interpreter on the CPU) against the reference, forward and gradients, and the dispatch.

The kernel module is imported here without TRITON_INTERPRET; the `interpret` fixture sets it per
test (the kernels are wrapped with triton.jit at launch, once per interpreter mode).
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from harness.kernels import sparse_global_attention as sga
from harness.kernels import sparse_global_attention_kernels as sgk
from harness.kernels.sparse_global_attention import (
    fallback_reason,
    sparse_global_attention,
    sparse_global_attention_triton,
)
from harness.kernels.sparse_global_attention_reference import (
    compact_indices,
    dense_masked_attention,
    sparse_global_attention_reference,
)
from tests.kernels.common import UNIT_ROUNDOFF

BLOCKS = {"block_m": 16, "block_n": 16}  # many tile edges on the small shapes below


def _qkv(
    b: int, h: int, t: int, d: int, dtype: torch.dtype = torch.float32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, h, t, d, generator=gen).to(dtype) for _ in range(3))


def _mask(b: int, t: int, frac: float, seed: int = 1) -> torch.Tensor:
    return torch.rand(b, t, generator=torch.Generator().manual_seed(seed)) < frac


def _run(fn, q, k, v, routed, dy, **kw) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The output and (dq, dk, dv) of fn under the upstream gradient dy."""
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = fn(*leaves, routed, **kw)
    out.backward(dy)
    return out.detach(), [x.grad for x in leaves]


def _max_rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Max abs error relative to max(1, max |b|): absolute for O(1) values, relative beyond."""
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp(min=1)).item()


# --- the reference ---------------------------------------------------------------------------


def test_compact_indices_lists_routed_positions_in_order() -> None:
    routed = torch.tensor([[0, 1, 1, 0, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 1]], dtype=torch.bool)
    idx, counts = compact_indices(routed)
    # by hand: row 0 → 1, 2, 4; row 1 → none; row 2 → 0, 4; width M = 3
    assert counts.tolist() == [3, 0, 2]
    assert idx.shape == (3, 3) and idx.dtype == torch.int64
    assert idx[0].tolist() == [1, 2, 4] and idx[2, :2].tolist() == [0, 4]
    assert not routed.gather(1, idx)[1].any(), "padding must point at unrouted positions"
    assert compact_indices(torch.zeros(2, 4, dtype=torch.bool))[0].shape == (2, 0)


SHAPES = [(1, 1, 1, 16), (2, 2, 7, 16), (2, 1, 37, 16), (1, 2, 64, 32), (2, 2, 100, 16)]


@pytest.mark.parametrize(("b", "h", "t", "d"), SHAPES)
@pytest.mark.parametrize("frac", [0.2, 0.6])
def test_acceptance_1_compact_equals_dense_masked(b: int, h: int, t: int, d: int, frac: float):
    # Spec §5 check 1: compact → attend → scatter equals dense masked attention on routed rows to
    # 1e-6 in fp32, and so do the gradients, under one upstream gradient (dense masked rows
    # ignore it on unrouted rows, where the sparse output is a constant 0).
    q, k, v = _qkv(b, h, t, d)
    routed = _mask(b, t, frac, seed=t)
    routed[0, -1] = True  # at least one routed row, the last, which reads every key
    dy = torch.randn(b, h, t, d, generator=torch.Generator().manual_seed(7))
    out, grads = _run(sparse_global_attention_reference, q, k, v, routed, dy)
    dense, dense_grads = _run(dense_masked_attention, q, k, v, routed, dy)
    unrouted = ~routed[:, None, :, None].expand_as(out)
    assert torch.equal(out[unrouted], torch.zeros_like(out[unrouted]))
    assert torch.equal(dense[unrouted], torch.zeros_like(dense[unrouted]))
    # The same fp32 sums of ≤ 100 O(1) terms, blocked differently by the two matmul shapes:
    # measured ≤ 4.8e-7 on the outputs (the spec's 1e-6). A gradient passes two reordered
    # matmuls (dP, then dq or dk), measured ≤ 6.6e-7 of max |grad|: 2e-6 of it.
    assert (out - dense).abs().max().item() <= 1e-6
    for name, g, gd in zip(("dq", "dk", "dv"), grads, dense_grads, strict=True):
        assert _max_rel(g, gd) <= 2e-6, name
    assert torch.equal(grads[0][unrouted], torch.zeros_like(grads[0][unrouted]))


def test_acceptance_1_in_float64() -> None:
    q, k, v = _qkv(2, 2, 100, 16, dtype=torch.float64)
    routed = _mask(2, 100, 0.3)
    dy = torch.randn(2, 2, 100, 16, dtype=torch.float64)
    out, grads = _run(sparse_global_attention_reference, q, k, v, routed, dy)
    dense, dense_grads = _run(dense_masked_attention, q, k, v, routed, dy)
    assert out.dtype == torch.float64
    assert (out - dense).abs().max().item() <= 1e-13  # fp64 rounding of the same sums
    for g, gd in zip(grads, dense_grads, strict=True):
        assert _max_rel(g, gd) <= 1e-13


def test_reference_all_routed_equals_torch_causal_attention() -> None:
    # An independent oracle: torch's scaled_dot_product_attention(is_causal=True) (math kernel
    # on the CPU), with the default scale D^-0.5 on both sides.
    q, k, v = _qkv(2, 2, 37, 16, dtype=torch.float64)
    routed = torch.ones(2, 37, dtype=torch.bool)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (sparse_global_attention_reference(q, k, v, routed) - expected).abs().max() <= 1e-13
    half = sparse_global_attention_reference(q, k, v, routed, scale=0.5)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    assert (half - expected).abs().max() <= 1e-13


def test_reference_rounds_once_to_the_input_dtype() -> None:
    q, k, v = _qkv(1, 2, 37, 16, dtype=torch.bfloat16)
    routed = _mask(1, 37, 0.5)
    out = sparse_global_attention_reference(q, k, v, routed)
    exact = sparse_global_attention_reference(q.double(), k.double(), v.double(), routed)
    assert out.dtype == torch.bfloat16
    # fp32 arithmetic, then one rounding to bf16: within u·|x| plus fp32 noise
    bound = UNIT_ROUNDOFF[torch.bfloat16] * exact.abs() + 1e-6
    assert bool(((out.double() - exact).abs() <= bound).all())


# --- the kernels against the reference, through the interpreter ------------------------------


def _check_kernel(q, k, v, routed, scale: float | None = None, **blocks) -> list[torch.Tensor]:
    dy = torch.randn(q.shape, generator=torch.Generator().manual_seed(5)).to(q.dtype)
    out, grads = _run(sparse_global_attention_triton, q, k, v, routed, dy, scale=scale, **blocks)
    ref, ref_grads = _run(sparse_global_attention_reference, q, k, v, routed, dy, scale=scale)
    tol = 1e-5  # see test_kernel_matches_reference
    assert out.shape == q.shape and out.dtype == q.dtype
    assert _max_rel(out, ref) <= tol, "output"
    for name, g, gr in zip(("dq", "dk", "dv"), grads, ref_grads, strict=True):
        assert g.shape == q.shape and g.dtype == q.dtype, name
        assert _max_rel(g, gr) <= tol, name
    unrouted = ~routed[:, None, :, None].expand_as(out)
    assert torch.equal(out[unrouted], torch.zeros_like(out[unrouted])), "unrouted rows not zero"
    assert torch.equal(grads[0][unrouted], torch.zeros_like(grads[0][unrouted])), "dq unrouted"
    return grads


# fp32 with "ieee" dots: the same sums in another order (≤ 100 terms of O(1) values): measured
# ≤ 6e-7 relative to max(1, max |ref|), so 1e-5 leaves headroom.
@pytest.mark.parametrize(("b", "h", "t", "d"), [*SHAPES, (1, 1, 100, 64), (2, 1, 50, 24)])
def test_kernel_matches_reference(interpret: None, b: int, h: int, t: int, d: int) -> None:
    q, k, v = _qkv(b, h, t, d, seed=t + d)
    routed = _mask(b, t, 0.4, seed=t)
    routed[-1, t // 2] = True  # not empty
    _check_kernel(q, k, v, routed, **BLOCKS)


@pytest.mark.parametrize(
    "case", ["none", "all", "first", "middle", "last", "one_row_empty", "non_contiguous"]
)
def test_kernel_edge_masks(interpret: None, case: str) -> None:
    b, h, t, d = 2, 2, 37, 16
    q, k, v = _qkv(b, h, t, d, seed=3)
    routed = torch.zeros(b, t, dtype=torch.bool)
    if case == "all":
        routed[:] = True
    elif case in ("first", "middle", "last"):
        routed[:, {"first": 0, "middle": t // 2, "last": t - 1}[case]] = True
    elif case == "one_row_empty":  # batch rows with different counts: 0 and 29
        routed[1] = _mask(1, t, 0.8)[0]
    elif case == "non_contiguous":  # (B, T, H, D) projections viewed as (B, H, T, D)
        q, k, v = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
        routed = _mask(b, t, 0.5)
    grads = _check_kernel(q, k, v, routed, **BLOCKS)
    if case == "none":
        assert all(torch.equal(g, torch.zeros_like(g)) for g in grads)
    if case == "first":  # position 0 reads key 0 alone: its output is v[0], and no key but 0
        out = sparse_global_attention_triton(q, k, v, routed, **BLOCKS)  # gets a gradient
        torch.testing.assert_close(out[:, :, 0], v[:, :, 0], rtol=0, atol=1e-6)
        assert torch.equal(grads[1][:, :, 1:], torch.zeros_like(grads[1][:, :, 1:]))
    if case == "all":  # every row: torch's causal attention, an independent oracle
        out = sparse_global_attention_triton(q, k, v, routed, **BLOCKS)
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert (out - expected).abs().max().item() <= 1e-5


def test_kernel_default_blocks_and_scale(interpret: None) -> None:
    q, k, v = _qkv(1, 2, 100, 32, seed=4)
    routed = _mask(1, 100, 0.3)
    _check_kernel(q, k, v, routed)  # the fp32 defaults
    _check_kernel(q, k, v, routed, scale=0.3, **BLOCKS)


def test_kernel_takes_an_expanded_upstream_gradient(interpret: None) -> None:
    # out.sum().backward() hands the backward a stride-0 dO; the kernels need unit stride on D
    q, k, v = _qkv(2, 1, 37, 16, seed=9)
    routed = _mask(2, 37, 0.5)
    grads = []
    for fn in (sparse_global_attention_triton, sparse_global_attention_reference):
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        fn(*leaves, routed).sum().backward()
        grads.append([x.grad for x in leaves])
    for g, gr in zip(*grads, strict=True):
        assert _max_rel(g, gr) <= 1e-5


def test_kernel_never_reads_unrouted_queries(interpret: None) -> None:
    # A kernel that computed every row and then masked would turn these NaNs into outputs.
    q, k, v = _qkv(2, 2, 37, 16, seed=6)
    routed = _mask(2, 37, 0.4)
    q_nan = q.masked_fill(~routed[:, None, :, None], float("nan"))
    dy = torch.randn(q.shape, generator=torch.Generator().manual_seed(5))
    out, grads = _run(sparse_global_attention_triton, q_nan, k, v, routed, dy, **BLOCKS)
    ref, ref_grads = _run(sparse_global_attention_reference, q, k, v, routed, dy)
    assert bool(torch.isfinite(out).all()) and all(bool(torch.isfinite(g).all()) for g in grads)
    assert _max_rel(out, ref) <= 1e-5
    for g, gr in zip(grads, ref_grads, strict=True):
        assert _max_rel(g, gr) <= 1e-5
    ref_nan = sparse_global_attention_reference(q_nan, k, v, routed)  # the reference neither
    assert torch.equal(ref_nan, sparse_global_attention_reference(q, k, v, routed))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_kernel_half_dtypes(interpret: None, dtype: torch.dtype) -> None:
    # The interpreter upcasts half tiles to fp32 "ieee" dots (its bf16 dot is broken; see
    # lokra_plus.py) but rounds P and dS to the half dtype as the GPU path does, so this checks
    # those roundings, not the tensor cores. Against the fp64 reference on the same half inputs:
    # P and dS rounded at u each, the output and the gradients rounded once (u): about 2u
    # relative to max(1, max |ref|) (measured: bf16 ≤ 1.9u, fp16 ≤ 1.0u), so 4u.
    q, k, v = _qkv(2, 2, 100, 32, dtype=dtype, seed=8)
    routed = _mask(2, 100, 0.5)
    dy = torch.randn(q.shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    out, grads = _run(sparse_global_attention_triton, q, k, v, routed, dy)  # the half defaults
    ref, ref_grads = _run(
        sparse_global_attention_reference, q.double(), k.double(), v.double(), routed, dy.double()
    )
    tol = 4 * UNIT_ROUNDOFF[dtype]
    assert out.dtype == dtype and _max_rel(out, ref) <= tol
    for name, g, gr in zip(("dq", "dk", "dv"), grads, ref_grads, strict=True):
        assert g.dtype == dtype and _max_rel(g, gr) <= tol, name


def test_spans_bound_the_dkdv_loop() -> None:
    idx = torch.tensor([[3, 17, 18, 40, 0], [5, 6, 7, 8, 9]], dtype=torch.int32)
    counts = torch.tensor([4, 5], dtype=torch.int32)
    spans = sga._spans(idx, counts, 48, 16).view(2, 3, 2)
    # by hand, key tiles [0, 15], [16, 31], [32, 47]: (first row ≥ start, first row ≥ end)
    assert spans[0].tolist() == [[0, 1], [1, 3], [3, 4]]  # row 4 is padding: never counted
    assert spans[1].tolist() == [[0, 5], [5, 5], [5, 5]]


# --- compiled path, without a GPU: the kernels compile for Hopper and fit its shared memory ---


_POINTERS = {n: "*fp32" for n in ("lse_ptr", "delta_ptr")} | {
    n: "*i32" for n in ("idx_ptr", "counts_ptr", "spans_ptr")
}  # the others are q's dtype
_TRITON_DTYPES = {torch.bfloat16: "bf16", torch.float32: "fp32"}


def _compile_for_sm90(fn, dtype: str, cfg: tuple[int, int, int, int], head_dim: int) -> int:
    """Shared memory in bytes of fn compiled for sm_90, specialised as the launcher would be."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(inspect.signature(fn).parameters)
    consts = {"UPCAST": False, "PRECISION": "ieee" if dtype == "fp32" else "tf32"}
    consts.update(BLOCK_M=cfg[0], BLOCK_N=cfg[1], HEAD_DIM=head_dim)
    consts = {n: c for n, c in consts.items() if n in names}
    sig, attrs = {}, {}
    for i, n in enumerate(names):
        if n in consts:
            sig[n] = "constexpr"
        elif n.endswith("_ptr"):
            sig[n] = _POINTERS.get(n, f"*{dtype}")
            attrs[(i,)] = [["tt.divisibility", 16]]  # 16-byte aligned, as torch allocates
        elif n in ("qk_scale", "scale"):
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
            if n.startswith("stride"):
                attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn=sga.triton.jit(fn), signature=sig, constexprs=consts, attrs=attrs)
    options = {"num_warps": cfg[2], "num_stages": cfg[3]}
    compiled = sga.triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    return compiled.metadata.shared


@pytest.mark.parametrize("torch_dtype", [torch.bfloat16, torch.float32])
def test_kernels_compile_for_hopper(
    monkeypatch: pytest.MonkeyPatch, torch_dtype: torch.dtype
) -> None:
    # Catches what the interpreter cannot: a construct or a type clash (say, between the two
    # unrolled phases) that only the compiler rejects, or a tile that outgrows the 227 KiB of
    # shared memory an H100/H200 block may take. The default tiles at D = 128.
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # triton.jit below must compile
    from triton.backends import backends

    if "nvidia" not in backends:
        pytest.skip("triton's NVIDIA backend is not installed")
    fwd, bwd = sga._configs(torch_dtype, 128, None, None)
    kernels = [
        (sgk._sga_fwd_kernel, fwd),
        (sgk._sga_bwd_delta_kernel, bwd),
        (sgk._sga_bwd_dkdv_kernel, bwd),
        (sgk._sga_bwd_dq_kernel, bwd),
    ]
    for fn, cfg in kernels:
        shared = _compile_for_sm90(fn, _TRITON_DTYPES[torch_dtype], cfg, 128)
        assert shared <= 227 * 1024, f"{fn.__name__}: {shared} B of shared memory"


# --- dispatch and errors -----------------------------------------------------------------------


def test_dispatch_takes_reference_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_kernel(*_: object, **__: object) -> None:
        raise AssertionError("the kernel ran on CPU tensors")

    monkeypatch.setattr(sga, "sparse_global_attention_triton", no_kernel)
    q, k, v = _qkv(2, 2, 37, 16)
    routed = _mask(2, 37, 0.4)
    if sga.triton is not None:
        assert fallback_reason(q, k, v, routed) == "the tensors are not all on CUDA"
    assert torch.equal(
        sparse_global_attention(q, k, v, routed), sparse_global_attention_reference(q, k, v, routed)
    )
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    sparse_global_attention(*leaves, routed).sum().backward()
    assert all(x.grad is not None and bool(torch.isfinite(x.grad).all()) for x in leaves)


def test_module_imports_and_dispatches_without_triton() -> None:
    code = (
        "import sys; sys.modules['triton'] = None\n"  # makes `import triton` raise ImportError
        "import torch\n"
        "from harness.kernels.sparse_global_attention import (\n"
        "    fallback_reason, sparse_global_attention, sparse_global_attention_triton)\n"
        "q = torch.ones(1, 1, 3, 16); r = torch.tensor([[False, True, True]])\n"
        "y = sparse_global_attention(q, q, q, r)\n"
        "assert y.shape == q.shape and bool((y[0, 0, 0] == 0).all()), y\n"
        "assert bool((y[0, 0, 1:] == 1).all()), y\n"
        "assert fallback_reason(q, q, q, r) == 'triton is not installed'\n"
        "try:\n"
        "    sparse_global_attention_triton(q, q, q, r)\n"
        "except RuntimeError as ex:\n"
        "    assert 'not installed' in str(ex)\n"
        "else:\n"
        "    raise AssertionError('no error without triton')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


GOOD = {"q": (2, 2, 7, 16), "routed": (2, 7)}


@pytest.mark.parametrize(
    "fn", [sparse_global_attention_reference, dense_masked_attention, sparse_global_attention]
)
@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"k": torch.ones(2, 2, 8, 16)}, ValueError, "share one shape"),
        ({"q": torch.ones(2, 7, 16)}, ValueError, r"\(B, H, T, D\)"),
        ({"routed": torch.ones(2, 8, dtype=torch.bool)}, ValueError, r"\(B, T\) = \(2, 7\)"),
        ({"routed": torch.ones(2, 7)}, TypeError, "bool mask"),
        ({"v": torch.ones(2, 2, 7, 16, dtype=torch.float64)}, TypeError, "one float dtype"),
    ],
)
def test_bad_inputs_raise(fn, change: dict, error: type, match: str) -> None:
    t = {
        "q": torch.ones(2, 2, 7, 16),
        "k": torch.ones(2, 2, 7, 16),
        "v": torch.ones(2, 2, 7, 16),
        "routed": torch.ones(2, 7, dtype=torch.bool),
        **change,
    }
    with pytest.raises(error, match=match):
        fn(**t)


def test_kernel_rejects_what_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = _qkv(1, 1, 7, 16)
    routed = _mask(1, 7, 0.5)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        sparse_global_attention_triton(q, k, v, routed)
    with pytest.raises(TypeError, match="one dtype among"):
        sparse_global_attention_triton(q.double(), k.double(), v.double(), routed)
    big = torch.ones(1, 1, 7, 264)
    with pytest.raises(ValueError, match="D ≤ 256"):
        sparse_global_attention_triton(big, big, big, routed)


def test_blocks_must_be_powers_of_two(interpret: None) -> None:
    q, k, v = _qkv(1, 1, 7, 16)
    with pytest.raises(ValueError, match="powers of two"):
        sparse_global_attention_triton(q, k, v, _mask(1, 7, 0.5), block_m=24)
    with pytest.raises(ValueError, match="powers of two"):
        sparse_global_attention_triton(q, k, v, _mask(1, 7, 0.5), block_n=8)
