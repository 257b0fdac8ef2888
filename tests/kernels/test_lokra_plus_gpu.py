"""LoKRA+ fused kernel on a real GPU (marker `gpu`; not in the default run, which has none)."""

import pytest
import torch

from harness.kernels.lokra_plus import lokra_plus_linear, lokra_plus_linear_triton
from harness.kernels.lokra_plus_reference import lokra_plus_linear_reference

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda() -> torch.device:
    if not torch.cuda.is_available():
        pytest.fail("marked gpu but no CUDA device; run with -m gpu on a GPU machine only")
    return torch.device("cuda")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kernel_matches_reference_on_cuda(cuda, dtype):
    g = torch.Generator(device=cuda).manual_seed(0)
    x = torch.randn(300, 512, generator=g, device=cuda)
    w = torch.randn(700, 512, generator=g, device=cuda) / 512**0.5
    b = torch.randn(700, generator=g, device=cuda)
    c = torch.randn(27, 512, generator=g, device=cuda) / 512**0.25
    d = torch.randn(26, 512, generator=g, device=cuda) / 512**0.25
    ref = lokra_plus_linear_reference(
        x.double(), w.double(), b.double(), c.double(), d.double(), 2.0
    )
    y = lokra_plus_linear_triton(*(t.to(dtype) for t in (x, w, b, c, d)), 2.0).double()
    tol = 1e-4 if dtype == torch.float32 else 1e-2
    assert ((y - ref).abs().max() / ref.abs().max()).item() < tol


def test_dispatch_gradients_match_reference_on_cuda(cuda):
    g = torch.Generator(device=cuda).manual_seed(1)
    args = [
        torch.randn(*s, generator=g, device=cuda)
        for s in ((64, 96), (80, 96), (80,), (9, 96), (9, 96))
    ]
    ours = [a.clone().requires_grad_() for a in args]
    theirs = [a.clone().requires_grad_() for a in args]
    lokra_plus_linear(*ours, 0.5).square().sum().backward()
    lokra_plus_linear_reference(*theirs, 0.5).square().sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)
