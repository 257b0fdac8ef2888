"""`small_attention` equals PyTorch's scaled-dot-product attention, forward and backward."""

import pytest
import torch
from torch.nn import functional as F

from harness.models.small_attention import attention, small_attention


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(4, 2, 13, 8), (3, 4, 21, 16), (2, 1, 1, 8), (5, 3, 7, 32)])
def test_matches_sdpa_forward_and_gradients(shape, causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(shape, dtype=torch.float64, requires_grad=True) for _ in range(3))
    weights = torch.randn(shape, dtype=torch.float64)  # a loss that weighs every output
    ours = small_attention(q, k, v, causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(ours, ref, atol=1e-12, rtol=1e-10)
    grads = torch.autograd.grad((ours * weights).sum(), (q, k, v))
    ref_grads = torch.autograd.grad((ref * weights).sum(), (q, k, v))
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck(causal):
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 2, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    assert torch.autograd.gradcheck(lambda a, b, c: small_attention(a, b, c, causal), (q, k, v))


def test_strided_inputs_and_float32():
    # the model passes transposed views of one projection; float32 agrees to rounding
    torch.manual_seed(2)
    x = torch.randn(8, 13, 3 * 32)
    q, k, v = (z.view(8, 13, 4, 8).transpose(1, 2) for z in x.split(32, dim=2))
    for causal in (False, True):
        torch.testing.assert_close(
            attention(q, k, v, causal),
            F.scaled_dot_product_attention(q, k, v, is_causal=causal),
            atol=2e-6,
            rtol=1e-5,
        )


def test_shape_mismatch_is_an_error():
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(ValueError, match="share one shape"):
        small_attention(q, torch.randn(1, 1, 5, 8), torch.randn(1, 1, 5, 8))
