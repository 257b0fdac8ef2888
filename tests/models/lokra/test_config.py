import pytest
from torch import nn

from harness.errors import HarnessUsageError
from harness.models.lokra.config import AdapterConfig
from harness.models.lokra.layers import AdaptedLinear, attach_adapters


def _one_line(ex: pytest.ExceptionInfo, name: str) -> None:
    message = str(ex.value)
    assert "\n" not in message
    assert name in message


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"method": "dora"}, "method"),
        ({"method": "lokra", "lam": -1e-3}, "lam"),
        ({"method": "lokra", "eps": 0.0}, "eps"),
        ({"method": "lokra", "eps": -1.0}, "eps"),
        ({"method": "lokra", "r": 0}, "r="),
        ({"method": "lokra", "dropout": 1.0}, "dropout"),
        ({"method": "lokra", "subset_mode": "blocks"}, "subset_mode"),
        ({"method": "lokra", "subset_mode": "sample"}, "n_subsets"),
        ({"method": "lokra", "n_subsets": 4}, "n_subsets"),
        ({"method": "lokra", "kr_i": 4, "kr_j": 4}, "kr_i"),
        ({"method": "lokra_plus", "kr_i": 4}, "kr_j"),
        ({"method": "lokra_plus", "kr_scale": 0.0}, "kr_scale"),
        ({"method": "lokra", "b_warmup": "late"}, "b_warmup"),
        ({"method": "lokra", "target_modules": ()}, "target_modules"),
        ({"method": "lokra", "target_modules": "q_proj"}, "target_modules"),
    ],
)
def test_bad_config_names_the_parameter(kwargs, name):
    with pytest.raises(HarnessUsageError) as ex:
        AdapterConfig(**kwargs)
    _one_line(ex, name)


def test_rank_above_layer_size_is_caught_when_attached():
    cfg = AdapterConfig(method="lokra", r=9, target_modules=("fc",))
    AdaptedLinear(nn.Linear(16, 9), cfg)  # r = min(d_in, d_out) is fine
    with pytest.raises(HarnessUsageError) as ex:
        AdaptedLinear(nn.Linear(16, 8), cfg, "fc")
    _one_line(ex, "r=9")
    assert "min(d_in, d_out)=8" in str(ex.value) and "'fc'" in str(ex.value)


def test_kr_factors_too_small_for_d_out():
    cfg = AdapterConfig(method="lokra_plus", kr_i=3, kr_j=4)
    AdaptedLinear(nn.Linear(5, 12), cfg)
    with pytest.raises(HarnessUsageError) as ex:
        AdaptedLinear(nn.Linear(5, 13), cfg, "fc")
    _one_line(ex, "kr_i*kr_j=3*4=12")
    assert "d_out=13" in str(ex.value)


def test_subset_size_above_factor_rows():
    with pytest.raises(HarnessUsageError) as ex:
        AdaptedLinear(nn.Linear(16, 16), AdapterConfig(method="lokra", r=4, subset_size=5))
    _one_line(ex, "subset_size=5")


def test_default_kr_factors_are_ceil_sqrt():
    cfg = AdapterConfig(method="lokra_plus")
    assert cfg.kr_factors(64) == (8, 8)
    assert cfg.kr_factors(65) == (9, 9)
    assert cfg.kr_factors(1) == (1, 1)
    assert cfg.scale == 1.0
    assert AdapterConfig(method="lora", r=8, alpha=16).scale == 2.0


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)


def test_unknown_target_module_lists_existing_names():
    model = _Net()
    cfg = AdapterConfig(method="lokra", r=2, target_modules=("fc1", "q_proj"))
    with pytest.raises(HarnessUsageError) as ex:
        attach_adapters(model, cfg)
    _one_line(ex, "target_modules")
    assert "'q_proj'" in str(ex.value) and "fc1, fc2" in str(ex.value)
    assert isinstance(model.fc1, nn.Linear)  # nothing replaced
    assert all(p.requires_grad for p in model.parameters())  # nothing frozen


def test_failing_layer_check_leaves_the_model_untouched():
    model = _Net()
    with pytest.raises(HarnessUsageError, match="r=8 exceeds min"):
        attach_adapters(model, AdapterConfig(method="lora", r=8, target_modules=("fc1", "fc2")))
    assert type(model.fc1) is nn.Linear and type(model.fc2) is nn.Linear
