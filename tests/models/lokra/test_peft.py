from pathlib import Path

import pytest
import torch
from peft import LoraConfig
from peft.tuners.lora import Linear as LoraLinear

from harness.errors import HarnessUsageError
from harness.models.lokra.peft_tuner import LokraPlusLinear, get_lokra_model, penalty

TARGETS = ["q_proj", "v_proj", "up_proj", "down_proj"]


def _load(path: Path) -> torch.nn.Module:
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(path, local_files_only=True)


def _ids() -> torch.Tensor:
    return torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))


def _step(model: torch.nn.Module, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """One AdamW step on task loss + penalty; returns every parameter before the step."""
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    loss = model(input_ids=ids, labels=ids).loss + penalty(model)
    loss.backward()
    opt.step()
    return before


@pytest.mark.parametrize("method", ["lokra", "lokra_plus"])
def test_training_step_changes_only_adapters(tiny_llama_dir, method):
    torch.manual_seed(0)
    model = get_lokra_model(
        _load(tiny_llama_dir), LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS), method
    )
    layer_type = LokraPlusLinear if method == "lokra_plus" else LoraLinear
    layers = [m for m in model.modules() if isinstance(m, LoraLinear)]
    assert len(layers) == 2 * len(TARGETS) and all(type(m) is layer_type for m in layers)
    before = _step(model, _ids())
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    adapters = {n for n in before if ".lora_A." in n or ".lora_B." in n}
    assert changed == adapters  # every A/B (C/D) moved, nothing else did


@pytest.mark.parametrize("method", ["lokra", "lokra_plus"])
def test_penalty_is_finite_and_reaches_lora_a(tiny_llama_dir, method):
    torch.manual_seed(0)
    model = get_lokra_model(
        _load(tiny_llama_dir),
        LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS),
        method,
        lam=0.1,
    )
    p = penalty(model)
    assert torch.isfinite(p) and p.item() > 0
    p.backward()
    for m in model.modules():
        if isinstance(m, LoraLinear):
            grad_a = m.lora_A["default"].weight.grad
            assert grad_a is not None and torch.isfinite(grad_a).all() and grad_a.abs().sum() > 0
            assert m.lora_B["default"].weight.grad is None  # B (D) is zero: its term is skipped


def test_lora_method_has_zero_penalty(tiny_llama_dir):
    model = get_lokra_model(_load(tiny_llama_dir), LoraConfig(r=4, target_modules=TARGETS), "lora")
    assert penalty(model).item() == 0.0


@pytest.mark.parametrize("method", ["lokra", "lokra_plus"])
def test_merge_and_unload_is_equivalent(tiny_llama_dir, method):
    torch.manual_seed(0)
    base = _load(tiny_llama_dir)
    ids = _ids()
    with torch.no_grad():
        base_logits = base(input_ids=ids).logits
    model = get_lokra_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS), method)
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, base_logits, rtol=0, atol=0)
    _step(model, ids)
    model.eval()
    with torch.no_grad():
        adapted = model(input_ids=ids).logits
    assert (adapted - base_logits).abs().max() > 1e-4  # the step changed the function
    merged = model.merge_and_unload()
    assert not any(isinstance(m, LoraLinear) for m in merged.modules())
    with torch.no_grad():
        torch.testing.assert_close(merged(input_ids=ids).logits, adapted, rtol=0, atol=1e-5)


def test_caller_config_is_not_changed(tiny_llama_dir):
    config = LoraConfig(r=4, target_modules=TARGETS)
    get_lokra_model(_load(tiny_llama_dir), config, "lokra_plus")
    assert config._custom_modules is None


def test_unknown_target_module(tiny_llama_dir):
    model = _load(tiny_llama_dir)
    with pytest.raises(HarnessUsageError) as ex:
        get_lokra_model(model, LoraConfig(r=4, target_modules=["q_proj", "qkv"]), "lokra")
    message = str(ex.value)
    assert "\n" not in message and "target_modules" in message and "'qkv'" in message
    assert "q_proj" in message and "gate_proj" in message  # names that do exist
    assert not any(isinstance(m, LoraLinear) for m in model.modules())


def test_rank_above_layer_size(tiny_llama_dir):
    model = _load(tiny_llama_dir)
    with pytest.raises(HarnessUsageError) as ex:
        get_lokra_model(model, LoraConfig(r=33, target_modules=["q_proj"]), "lokra")
    assert "r=33 exceeds min(d_in, d_out)=32" in str(ex.value) and "\n" not in str(ex.value)
    assert not any(isinstance(m, LoraLinear) for m in model.modules())


def test_negative_lambda(tiny_llama_dir):
    with pytest.raises(HarnessUsageError, match="lam=-0.1"):
        get_lokra_model(_load(tiny_llama_dir), LoraConfig(target_modules=TARGETS), lam=-0.1)
