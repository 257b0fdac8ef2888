"""LoRA, LoKRA and LoKRA+ as a wrapper around a frozen nn.Linear, and attaching it to a model.

- lora:       h = W0·x + (α/r)·B·A·x, A (r×d_in) Kaiming-uniform, B (d_out×r) zero.
- lokra:      the same layer; `penalty()` = λ·(P(A) + P(Bᵀ)) with P the log-det penalty.
- lokra_plus: h = W0·x + kr_scale·ΔW·x, ΔW = crop_{d_out}(D ⊙ C), C (I×d_in) Kaiming-uniform,
              D (J×d_in) zero, so ΔW = 0 at initialisation; `penalty()` = λ·(P(C) + P(D)).

The penalty and LoKRA+ are reconstructions (specs/lokra.md §4): results made with them are
"LoKRA (reconstructed)". The zero-initialised factor (B or D) has a singular Gram matrix, so its
penalty term follows `AdapterConfig.b_warmup`: "skip_zero" leaves it out until the factor first
becomes non-zero (after the first optimiser step), "noise" starts it at N(0, 1e-6²) instead.

The training objective is L_task + total_penalty(model), the sum of every adapted layer's
penalty; whether the paper sums or averages over layers is unknown.

References:
    E. J. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022.
    Y. Xu et al., "LoKRA: Low Kruskal-Rank Adaptation", ICML 2026 (poster).

"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harness.errors import HarnessUsageError
from harness.kernels.lokra_plus import lokra_plus_linear
from harness.models.lokra.config import NOISE_STD, AdapterConfig
from harness.models.lokra.kr_linear import kr_delta_output, kr_delta_weight
from harness.models.lokra.penalty import logdet_penalty, stacked_logdet_penalty


def factor_penalty(cfg: AdapterConfig, M: Tensor, generator: torch.Generator | None) -> Tensor:
    """P(M) with the config's ε and subsets; s defaults to M's row count (r, I or J)."""
    s = cfg.subset_size or M.shape[0]
    return logdet_penalty(M, s, cfg.eps, cfg.subset_mode, cfg.n_subsets, generator)


def factor_penalties(
    cfg: AdapterConfig, factors: list[Tensor], generator: torch.Generator | None = None
) -> Tensor:
    """Σ P(M) over `factors`, batched: one stacked evaluation per factor shape.

    A model's adapted layers mostly share a few shapes (q, k, v alike, up, down), so the penalty
    of all of them costs a handful of batched kernels instead of two small chains per layer.
    """
    groups: dict[tuple, list[Tensor]] = {}
    for M in factors:
        groups.setdefault((tuple(M.shape), M.dtype, M.device), []).append(M)
    total = factors[0].new_zeros((), dtype=torch.float32) if factors else torch.zeros(())
    for (shape, _, _), same in groups.items():
        s = cfg.subset_size or shape[0]
        stacked = torch.stack(same)  # (L, rows, n)
        p = stacked_logdet_penalty(stacked, s, cfg.eps, cfg.subset_mode, cfg.n_subsets, generator)
        total = total + p.sum()
    return total


class AdaptedLinear(nn.Module):
    """A frozen nn.Linear plus a trainable LoRA / LoKRA / LoKRA+ update.

    Args:
        base: the layer to adapt; its weight and bias are frozen in place.
        cfg: the adapter's hyper-parameters.
        name: the layer's name in its model, used in error messages.

    """

    def __init__(self, base: nn.Linear, cfg: AdapterConfig, name: str = "") -> None:
        super().__init__()
        d_in, d_out = base.in_features, base.out_features
        cfg.check_layer(name or "<layer>", d_in, d_out)
        self.base = base
        self.base.requires_grad_(False)
        self.cfg = cfg
        self.scale = cfg.scale
        self.dropout = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()
        self.merged = False
        like = {"device": base.weight.device, "dtype": base.weight.dtype}
        if cfg.method == "lokra_plus":
            n_i, n_j = cfg.kr_factors(d_out)
            self.C = nn.Parameter(torch.empty(n_i, d_in, **like))  # (I, d_in)
            self.D = nn.Parameter(torch.zeros(n_j, d_in, **like))  # (J, d_in)
            nn.init.kaiming_uniform_(self.C, a=math.sqrt(5))
            zero = self.D
        else:
            self.A = nn.Parameter(torch.empty(cfg.r, d_in, **like))  # (r, d_in)
            self.B = nn.Parameter(torch.zeros(d_out, cfg.r, **like))  # (d_out, r)
            nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
            zero = self.B
        if cfg.b_warmup == "noise":
            nn.init.normal_(zero, std=NOISE_STD)
        # Whether the zero-initialised factor's penalty term is on; it turns on once, for good.
        self._second_term_on = cfg.b_warmup == "noise"

    def forward(self, x: Tensor) -> Tensor:
        """Base output plus the scaled update; the base alone once merged."""
        if self.merged:
            return self.base(x)
        if self.cfg.method == "lokra_plus" and not (self.training and self.cfg.dropout > 0):
            # No live dropout: fold the update into the base weight, x·(W + s·ΔW)ᵀ + b, one
            # matmul instead of two; on CUDA the fused Triton kernel, which never stores ΔW.
            w, b = self.base.weight, self.base.bias
            return lokra_plus_linear(x, w, b, self.C, self.D, self.scale)
        y = self.base(x)  # (..., d_out)
        xd = self.dropout(x)
        if self.cfg.method == "lokra_plus":
            return y + self.scale * kr_delta_output(xd, self.C, self.D, self.base.out_features)
        return y + self.scale * F.linear(F.linear(xd, self.A), self.B)  # (..., r) -> (..., d_out)

    def delta_weight(self) -> Tensor:
        """The scaled update ΔW added to the base weight, shape (d_out, d_in)."""
        if self.cfg.method == "lokra_plus":
            return self.scale * kr_delta_weight(self.C, self.D, self.base.out_features)
        return self.scale * (self.B @ self.A)

    def penalty_factors(self) -> tuple[Tensor, Tensor]:
        """The factors whose columns the penalty spreads: (A, Bᵀ) or (C, D); zero-init second."""
        if self.cfg.method == "lokra_plus":
            return self.C, self.D
        return self.A, self.B.T

    def penalised_factors(self) -> list[Tensor]:
        """The factors the penalty applies to now: none for LoRA or λ = 0; see the module notes."""
        if self.cfg.method == "lora" or self.cfg.lam == 0:
            return []
        first, second = self.penalty_factors()
        if not self._second_term_on:
            self._second_term_on = bool(second.detach().any())
        return [first, second] if self._second_term_on else [first]

    def penalty(self, generator: torch.Generator | None = None) -> Tensor:
        """λ·(P(first) + P(second)); zero for plain LoRA or λ = 0 (see the module notes)."""
        factors = self.penalised_factors()
        if not factors:
            return self.penalty_factors()[0].new_zeros(())
        return self.cfg.lam * sum(factor_penalty(self.cfg, M, generator) for M in factors)

    @torch.no_grad()
    def merge(self) -> None:
        """Add ΔW into the base weight; the forward output is unchanged. No-op when merged."""
        if not self.merged:
            self.base.weight += self.delta_weight().to(self.base.weight.dtype)
            self.merged = True

    @torch.no_grad()
    def unmerge(self) -> None:
        """Subtract ΔW from the base weight again. Call it before training further."""
        if self.merged:
            self.base.weight -= self.delta_weight().to(self.base.weight.dtype)
            self.merged = False

    def trainable_parameters(self) -> int:
        """Number of adapter parameters (the base layer's are frozen)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def extra_repr(self) -> str:
        """Method and factor shapes."""
        shapes = ", ".join(f"{n}={tuple(p.shape)}" for n, p in self.named_parameters(recurse=False))
        return f"method={self.cfg.method}, {shapes}, scale={self.scale:g}"


def adapted_modules(model: nn.Module) -> list[tuple[str, AdaptedLinear]]:
    """Every AdaptedLinear of the model with its name, in module order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, AdaptedLinear)]


def _short_names(names: list[str], limit: int = 10) -> str:
    short = list(dict.fromkeys(n.rsplit(".", 1)[-1] for n in names))
    more = f", … ({len(short) - limit} more)" if len(short) > limit else ""
    return ", ".join(short[:limit]) + more


def attach_adapters(model: nn.Module, cfg: AdapterConfig) -> list[str]:
    """Replace the target nn.Linear modules by AdaptedLinear and freeze everything else.

    A module is a target when its name equals one of `cfg.target_modules` or ends with
    "." + it ("q_proj" matches "model.layers.0.self_attn.q_proj"). Every layer is checked before
    any is replaced, so a failure leaves the model as it was.

    Returns:
        The names of the adapted modules, in module order.

    Raises:
        HarnessUsageError: a target matches no nn.Linear, a layer is too small for the config, or
            the model already has adapters.

    """
    if adapted_modules(model):
        raise HarnessUsageError("the model already has adapters; attach them to a fresh model")
    linear = {n: m for n, m in model.named_modules() if isinstance(m, nn.Linear)}
    hits = {t: [n for n in linear if n == t or n.endswith("." + t)] for t in cfg.target_modules}
    missing = [t for t, found in hits.items() if not found]
    if missing:
        raise HarnessUsageError(
            f"target_modules: {', '.join(map(repr, missing))} match no nn.Linear of the model; "
            f"nn.Linear names that exist: {_short_names(list(linear)) or 'none'}"
        )
    chosen = set().union(*hits.values())
    names = [n for n in linear if n in chosen]
    for n in names:
        cfg.check_layer(n, linear[n].in_features, linear[n].out_features)
    model.requires_grad_(False)
    for n in names:
        parent_name, _, attr = n.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, AdaptedLinear(linear[n], cfg, n))
    return names


def total_penalty(model: nn.Module, generator: torch.Generator | None = None) -> Tensor:
    """Sum of every adapted layer's penalty, batched over layers; add it to the task loss.

    Equal in distribution to the sum of the layers' `penalty()`: each factor draws its own
    subsets. Factors of one shape are evaluated together (`factor_penalties`).
    """
    layers = adapted_modules(model)
    if not layers:
        raise HarnessUsageError("the model has no adapters; call attach_adapters first")
    by_cfg: dict[AdapterConfig, list[Tensor]] = {}
    for _, m in layers:
        by_cfg.setdefault(m.cfg, []).extend(m.penalised_factors())
    total = layers[0][1].penalty_factors()[0].new_zeros(())
    for cfg, factors in by_cfg.items():
        if factors:
            total = total + cfg.lam * factor_penalties(cfg, factors, generator)
    return total


def merge_all(model: nn.Module) -> None:
    """Merge every adapted layer's ΔW into its base weight."""
    for _, m in adapted_modules(model):
        m.merge()


def unmerge_all(model: nn.Module) -> None:
    """Undo `merge_all`."""
    for _, m in adapted_modules(model):
        m.unmerge()
