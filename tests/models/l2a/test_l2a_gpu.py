"""The L2A model on a GPU takes the Triton kernel and agrees with the CPU path (marker `gpu`)."""

import pytest
import torch
from torch.nn import functional as F

from harness.models.l2a.model import L2AConfig, L2AModel, sparsity_regulariser
from harness.models.l2a.recall import IGNORE, VOCAB, recall_batch

pytestmark = pytest.mark.gpu


def test_l2a_forward_and_gradients_on_cuda_match_the_cpu_path():
    if not torch.cuda.is_available():
        pytest.fail("marked gpu but no CUDA device; run with -m gpu on a GPU machine only")
    torch.manual_seed(0)
    cfg = L2AConfig(vocab=VOCAB, seq_len=128, d_model=64, n_layer=2, n_head=4, window=16,
                    leakage=0.0)  # fmt: skip
    cpu = L2AModel(cfg)
    gen = torch.Generator().manual_seed(1)
    for block in cpu.blocks:  # route about half the tokens
        block.router.weight.data = torch.randn(block.router.weight.shape, generator=gen)
    gpu = L2AModel(cfg).cuda()
    gpu.load_state_dict(cpu.state_dict())
    batch = recall_batch(8, 128, 8, torch.Generator().manual_seed(2))
    grads = []
    for model, device in ((cpu, "cpu"), (gpu, "cuda")):
        model.train()
        logits, routings = model(batch.tokens.to(device))
        ce = F.cross_entropy(logits.transpose(1, 2), batch.targets.to(device), ignore_index=IGNORE)
        loss = ce + 1e-3 * sparsity_regulariser(routings)
        loss.backward()
        grads.append({n: p.grad.detach().cpu() for n, p in model.named_parameters()})
        assert any(0 < r.routed.float().mean() < 1 for r in routings)
    for name, g in grads[0].items():
        torch.testing.assert_close(grads[1][name], g, rtol=1e-3, atol=1e-5, msg=name)
