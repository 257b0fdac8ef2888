"""LoKRA and LoKRA+ for Hugging Face peft users: keep the LoraConfig, change one call.

    peft_model = get_lokra_model(model, LoraConfig(r=32, lora_alpha=64, target_modules=[...]),
                                 method="lokra", lam=1e-2)
    loss = task_loss + penalty(peft_model)

- "lora" and "lokra" are peft's own LoRA (`LoraModel`, `lora_A` / `lora_B` modules) unchanged;
  `penalty` reads the `lora_A` / `lora_B` weights and returns λ·Σ_layers (P(A) + P(Bᵀ)) for
  "lokra" (zero for "lora").
- "lokra_plus" injects `LokraPlusLinear` through peft 0.21's experimental custom-module mechanism
  (`LoraConfig._register_custom_module`, which peft dispatches before its own layers). It stores
  C (I×d_in) in `lora_A` and D (J×d_in) in `lora_B`, so peft's merge, `merge_and_unload`,
  adapter switching and state-dict naming apply unchanged. The registration is not saved with
  the config: to load a saved LoKRA+ adapter, build the model with `get_lokra_model` again and
  load the weights into it (`peft.set_peft_model_state_dict`), not with `PeftModel.from_pretrained`.

The penalty and LoKRA+ are reconstructions (specs/lokra.md §4); label results
"LoKRA (reconstructed)". Only nn.Linear targets are supported for "lokra" and "lokra_plus".
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import replace
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import Linear as LoraLinear
from peft.tuners.tuners_utils import _maybe_include_all_linear_layers, check_target_module_exists
from peft.utils.other import get_pattern_key
from torch import Tensor, nn

from harness.errors import HarnessUsageError
from harness.models.lokra.config import NOISE_STD, AdapterConfig, BWarmup, Method, SubsetMode
from harness.models.lokra.kr_linear import kr_delta_output, kr_delta_weight
from harness.models.lokra.layers import factor_penalties

# Attribute of the PeftModel that records the AdapterConfig `penalty` uses.
CONFIG_ATTR = "lokra_config"


class LokraPlusLinear(LoraLinear):
    """peft LoRA layer whose update is LoKRA+'s crop_{d_out}(D ⊙ C) (see `kr_linear`).

    `lora_A[name]` holds C (I×d_in, Kaiming-uniform), `lora_B[name]` holds D (J×d_in, zero), and
    `scaling[name]` is `kr_scale`. The LoraConfig's r and lora_alpha are recorded, not used.
    """

    def __init__(
        self,
        base_layer: nn.Module,
        adapter_name: str,
        config: LoraConfig,
        *,
        lokra: AdapterConfig,
        **kwargs: Any,
    ) -> None:
        object.__setattr__(self, "_lokra", lokra)  # read by update_layer inside super().__init__
        super().__init__(base_layer, adapter_name, config, **kwargs)

    def update_layer(
        self, adapter_name: str, r: int, lora_alpha: int, config: LoraConfig, **kwargs: Any
    ) -> None:
        """Create C and D for `adapter_name` (peft calls this when adding an adapter)."""
        cfg: AdapterConfig = self._lokra
        d_in, d_out = self.in_features, self.out_features
        cfg.check_layer(kwargs.get("target_name") or "<layer>", d_in, d_out)
        n_i, n_j = cfg.kr_factors(d_out)
        self.r[adapter_name] = r
        self.lora_alpha[adapter_name] = lora_alpha
        self.scaling[adapter_name] = cfg.kr_scale
        drop = nn.Dropout(config.lora_dropout) if config.lora_dropout > 0 else nn.Identity()
        self.lora_dropout.update(nn.ModuleDict({adapter_name: drop}))
        self.lora_A[adapter_name] = nn.Linear(d_in, n_i, bias=False)  # C: weight (I, d_in)
        self.lora_B[adapter_name] = nn.Linear(d_in, n_j, bias=False)  # D: weight (J, d_in)
        nn.init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
        if cfg.b_warmup == "noise":
            nn.init.normal_(self.lora_B[adapter_name].weight, std=NOISE_STD)
        else:
            nn.init.zeros_(self.lora_B[adapter_name].weight)
        self.lora_bias[adapter_name] = False
        self.use_rslora[adapter_name] = False
        self.use_dora[adapter_name] = False
        self._move_adapter_to_device_of_base_layer(adapter_name)
        self.set_adapter(self.active_adapters, inference_mode=config.inference_mode)

    def get_delta_weight(self, adapter: str) -> Tensor:
        """kr_scale · crop_{d_out}(D ⊙ C), shape (d_out, d_in)."""
        C, D = self.lora_A[adapter].weight, self.lora_B[adapter].weight
        return self.scaling[adapter] * kr_delta_weight(C, D, self.out_features)

    def forward(self, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """Base output plus each active adapter's scaled Khatri–Rao update."""
        self._check_forward_args(x, *args, **kwargs)
        if kwargs.pop("adapter_names", None) is not None:
            raise HarnessUsageError(
                "adapter_names: LoKRA+ layers do not serve mixed-adapter batches"
            )
        kwargs.pop("alora_offsets", None)  # a LoRA-variant argument; not for the base layer
        if self.disable_adapters:
            if self.merged:
                self.unmerge()
            return self.base_layer(x, *args, **kwargs)
        result = self.base_layer(x, *args, **kwargs)  # (..., d_out)
        if self.merged:
            return result
        dtype = result.dtype
        for name in self.active_adapters:
            if name not in self.lora_A:
                continue
            C, D = self.lora_A[name].weight, self.lora_B[name].weight
            xd = self.lora_dropout[name](self._cast_input_dtype(x, C.dtype))
            # torch update on every device: peft's base layer may be wrapped or quantised, so
            # the fused kernel (base matmul included) serves AdaptedLinear only
            result = result + self.scaling[name] * kr_delta_output(xd, C, D, self.out_features)
        return result.to(dtype)

    def __repr__(self) -> str:
        return "lokra_plus." + nn.Module.__repr__(self)


def _targets(model: nn.Module, lora_config: LoraConfig) -> dict[str, nn.Module]:
    """Modules the LoraConfig would adapt, found with peft's own matching, without changing them."""
    if lora_config.target_modules is None:
        raise HarnessUsageError(
            "target_modules: set LoraConfig(target_modules=[...]) explicitly, e.g. the DoRA "
            "protocol's ['q_proj', 'k_proj', 'v_proj', 'up_proj', 'down_proj']"
        )
    resolved = _maybe_include_all_linear_layers(copy.deepcopy(lora_config), model)
    found = {n: m for n, m in model.named_modules() if check_target_module_exists(resolved, n)}
    wanted = resolved.target_modules
    if isinstance(wanted, str):
        missing = [] if found else [wanted]
    else:
        missing = [t for t in wanted if not any(n == t or n.endswith("." + t) for n in found)]
    if missing:
        linear = dict.fromkeys(
            n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, nn.Linear)
        )
        raise HarnessUsageError(
            f"target_modules: {', '.join(map(repr, sorted(missing)))} match no module of the "
            f"model; nn.Linear names that exist: {', '.join(list(linear)[:10]) or 'none'}"
        )
    return found


def _check(model: nn.Module, lora_config: LoraConfig, cfg: AdapterConfig) -> None:
    for name, module in _targets(model, lora_config).items():
        if cfg.method == "lora":
            continue
        if not isinstance(module, nn.Linear):
            raise HarnessUsageError(
                f"target_modules: {name!r} is a {type(module).__name__}; method={cfg.method!r} "
                "adapts nn.Linear layers only"
            )
        r = lora_config.rank_pattern.get(get_pattern_key(lora_config.rank_pattern, name), cfg.r)
        cfg_r = cfg if r == cfg.r or cfg.method == "lokra_plus" else replace(cfg, r=r)
        cfg_r.check_layer(name, module.in_features, module.out_features)
    if cfg.method == "lokra_plus":
        for field in ("use_dora", "lora_bias", "use_rslora"):
            if getattr(lora_config, field):
                raise HarnessUsageError(f"{field}=True is not supported with method='lokra_plus'")


# the adapter methods `get_lokra_model` takes: plain LoRA, LoKRA's penalty, LoKRA+
METHODS = ("lora", "lokra", "lokra_plus")


def get_lokra_model(
    model: nn.Module,
    lora_config: LoraConfig,
    method: Method = "lokra",
    *,
    lam: float = 1e-2,
    eps: float = 1e-4,
    subset_size: int | None = None,
    subset_mode: SubsetMode = "partition",
    n_subsets: int | None = None,
    kr_i: int | None = None,
    kr_j: int | None = None,
    kr_scale: float = 1.0,
    b_warmup: BWarmup = "skip_zero",
    adapter_name: str = "default",
) -> PeftModel:
    """Wrap `model` like `peft.get_peft_model`, as LoRA, LoKRA or LoKRA+.

    Args:
        model: the base model; adapted in place, as peft does. Every check runs before it is
            touched, so a `HarnessUsageError` leaves it unchanged.
        lora_config: peft's LoraConfig; r, lora_alpha, lora_dropout and target_modules are used.
        method: "lora", "lokra" or "lokra_plus".
        lam: λ, the penalty weight (see `AdapterConfig` for this and the fields below).
        eps: ε added to each subset's Gram matrix.
        subset_size: s; None for a factor's row count.
        subset_mode: "partition" or "sample".
        n_subsets: subsets per call in "sample" mode.
        kr_i: LoKRA+ I; None with kr_j for ⌈√d_out⌉.
        kr_j: LoKRA+ J.
        kr_scale: LoKRA+ output scale.
        b_warmup: "skip_zero" or "noise", the rule for the zero-initialised factor.
        adapter_name: peft's adapter name.

    Returns:
        The PeftModel, with the resulting `AdapterConfig` as its `lokra_config` attribute.

    """
    targets = lora_config.target_modules
    cfg = AdapterConfig(
        method=method,
        r=lora_config.r,
        alpha=lora_config.lora_alpha,
        dropout=lora_config.lora_dropout,
        lam=lam,
        eps=eps,
        subset_size=subset_size,
        subset_mode=subset_mode,
        n_subsets=n_subsets,
        kr_i=kr_i,
        kr_j=kr_j,
        kr_scale=kr_scale,
        b_warmup=b_warmup,
        target_modules=(targets,) if isinstance(targets, str) else tuple(sorted(targets or ())),
    )
    _check(model, lora_config, cfg)
    config = lora_config
    if method == "lokra_plus":
        config = copy.deepcopy(lora_config)  # the caller's config stays plain LoRA
        config._register_custom_module({nn.Linear: functools.partial(LokraPlusLinear, lokra=cfg)})
    peft_model = get_peft_model(model, config, adapter_name=adapter_name)
    if method != "lokra_plus" and b_warmup == "noise":
        with torch.no_grad():
            for _, layer in _lora_layers(peft_model):
                nn.init.normal_(layer.lora_B[adapter_name].weight, std=NOISE_STD)
    setattr(peft_model, CONFIG_ATTR, cfg)
    return peft_model


def _lora_layers(model: nn.Module) -> list[tuple[str, LoraLinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoraLinear)]


def penalty(
    model: nn.Module, cfg: AdapterConfig | None = None, generator: torch.Generator | None = None
) -> Tensor:
    """λ·Σ over adapted layers and active adapters of P(A) + P(Bᵀ), or P(C) + P(D) for LoKRA+.

    Factors of one shape are evaluated in one batched call (`layers.factor_penalties`).

    Args:
        model: a PeftModel; its `lora_A` / `lora_B` weights are read.
        cfg: the penalty's settings; by default the one `get_lokra_model` stored on the model.
        generator: random source for the column subsets.

    Returns:
        A scalar to add to the task loss; zero for method "lora" or λ = 0. The B (or D) term of a
        layer is skipped while B is exactly zero under b_warmup="skip_zero".

    """
    cfg = cfg if cfg is not None else getattr(model, CONFIG_ATTR, None)
    if cfg is None:
        raise HarnessUsageError(
            "cfg: pass an AdapterConfig or build the model with get_lokra_model"
        )
    layers = _lora_layers(model)
    if not layers:
        raise HarnessUsageError("the model has no peft LoRA layers; build it with get_lokra_model")
    device = layers[0][1].get_base_layer().weight.device
    total = torch.zeros((), device=device)
    if cfg.method == "lora" or cfg.lam == 0:
        return total
    factors: list[Tensor] = []
    for _, layer in layers:
        on: dict[str, bool] = layer.__dict__.setdefault("_lokra_second_on", {})
        for name in layer.active_adapters:
            if name not in layer.lora_A:
                continue
            A, B = layer.lora_A[name].weight, layer.lora_B[name].weight
            first, second = (A, B) if isinstance(layer, LokraPlusLinear) else (A, B.T)
            factors.append(first)
            if not on.get(name, cfg.b_warmup == "noise"):
                on[name] = bool(second.detach().any())
            if on[name]:
                factors.append(second)
    return total + cfg.lam * factor_penalties(cfg, factors, generator)
