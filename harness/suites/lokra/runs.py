"""The LoKRA suite's two experiments (specs/lokra.md §5.2-5.3), one training run per call.

Matrix fitting: fit a d×d target T with an adapter's update ΔW by Adam on ‖ΔW − T‖²/‖T‖² plus the
adapter's penalty. Targets (seeded): `lowrank` (rank 4), `flat` (Gaussian, a flat spectrum) and
`duplicated` (columns drawn from 8 directions with random scales, so many columns repeat a
direction). LoRA r and LoKRA+ I = J are chosen so both have r·2d = (I + J)·d parameters. The
closed-form optimum errors: LoRA's is the Eckart-Young tail of T's singular values; LoKRA+'s is
the per-column best rank-1 fit of each column reshaped to J×I (specs/lokra.md §3).

Tiny transfer: an MLP (d_in → hidden → hidden → classes, GELU) is pretrained from scratch on task
A, a 20-class Gaussian mixture; frozen; then its two hidden layers are adapted to task B (the
same classes with permuted labels and shifted means) from a few examples per class, the head
frozen. Score: test accuracy on B.

The numerical Kruskal rank (specs/lokra.md §5.1: a subset is dependent when σ_min of its
normalised columns is below 1e-3; 2,000 sampled subsets per size) is measured on A (LoRA,
LoKRA) or C (LoKRA+) after training. Everything is LoKRA (reconstructed): see
`harness.models.lokra.config`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

FIT_TARGETS = ("lowrank", "flat", "duplicated")


@dataclass(frozen=True)
class RunSpec:
    """One run: experiment, method, λ, seed and (for fitting) target, with the preset's sizes."""

    experiment: str  # "fit" or "transfer"
    method: str  # "lora", "lokra", "lokra_plus"
    lam: float  # penalty weight (0 for plain LoRA)
    seed: int  # seed of the target/data and of the adapter's initialisation
    target: str  # fit: lowrank, flat, duplicated; transfer: "gmm"
    settings: tuple[tuple[str, Any], ...]  # the preset's sizes and steps

    def get(self, key: str) -> Any:
        """A setting by name."""
        return dict(self.settings)[key]


@dataclass(frozen=True)
class RunResult:
    """What one run measured."""

    score: float  # fit: relative Frobenius error (lower is better); transfer: test accuracy
    optimum: float  # fit: the method's closed-form optimum relative error; transfer: nan
    krank: int  # numerical Kruskal rank of A (LoRA, LoKRA) or C (LoKRA+), summed over layers
    sigma: float  # worst σ_min over sampled full-size column subsets of that factor (min, layers)
    params: int  # trainable adapter parameters
    final_penalty: float  # the adapter penalty at the end (0 without one)
    curve: tuple[float, ...]  # score every `eval_every` steps

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return asdict(self)


def _config(spec: RunSpec, d: int, targets: tuple[str, ...]):
    from harness.models.lokra.config import AdapterConfig

    r, side = spec.get("r"), spec.get("kr_side")
    if spec.method == "lokra_plus":
        return AdapterConfig("lokra_plus", lam=spec.lam, kr_i=side, kr_j=side,
                             target_modules=targets)  # fmt: skip
    return AdapterConfig(spec.method, r=r, alpha=float(r), lam=spec.lam,  # type: ignore[arg-type]
                         target_modules=targets)  # fmt: skip


def make_target(kind: str, d: int, seed: int):
    """A d×d fitting target from the seed."""
    import torch

    g = torch.Generator().manual_seed(10_000 + seed)
    if kind == "lowrank":
        return torch.randn(d, 4, generator=g) @ torch.randn(4, d, generator=g) / 2.0
    if kind == "flat":
        return torch.randn(d, d, generator=g)
    if kind == "duplicated":
        base = torch.randn(d, 8, generator=g)
        pick = torch.randint(0, 8, (d,), generator=g)
        return base[:, pick] * (0.5 + torch.rand(d, generator=g))
    raise ValueError(f"unknown fitting target {kind!r}; targets: {', '.join(FIT_TARGETS)}")


def lora_optimum(target, r: int) -> float:
    """Best rank-r relative Frobenius error (Eckart-Young)."""
    import torch

    s = torch.linalg.svdvals(target.double())
    return float(torch.sqrt((s[r:] ** 2).sum() / (s**2).sum()))


def kr_optimum(target, i: int, j: int) -> float:
    """Best Khatri-Rao (D ⊙ C) relative error: per column, the best rank-1 J×I fit."""
    import torch

    d_out, d_in = target.shape
    if i * j != d_out:
        raise ValueError(f"the closed form needs I*J == d_out, got {i}*{j} != {d_out}")
    cols = target.double().T.reshape(d_in, j, i)  # column c: M[a, b] = T[a*I + b, c]
    s = torch.linalg.svdvals(cols)  # (d_in, min(i, j))
    return float(torch.sqrt((s[:, 1:] ** 2).sum() / (target.double() ** 2).sum()))


def _krank_of(layer) -> tuple[int, float]:
    """Numerical Kruskal rank of A (or C) and its worst sampled rows-sized subset's σ_min."""
    import torch

    from harness.models.lokra.kruskal import numerical_krank, worst_subset_sigma

    factor = (layer.C if layer.cfg.method == "lokra_plus" else layer.A).detach()  # (rows, d_in)
    k = numerical_krank(factor, generator=torch.Generator().manual_seed(0))
    sigma = worst_subset_sigma(factor, factor.shape[0], generator=torch.Generator().manual_seed(1))
    return k, sigma


def fit_run(spec: RunSpec) -> RunResult:
    """Matrix fitting: train an adapter's ΔW towards the target."""
    import torch
    from torch import nn

    from harness.models.lokra.layers import AdaptedLinear

    d, steps, lr = spec.get("d"), spec.get("steps"), spec.get("lr")
    target = make_target(spec.target, d, spec.seed)
    torch.manual_seed(spec.seed)
    base = nn.Linear(d, d, bias=False)
    nn.init.zeros_(base.weight)
    layer = AdaptedLinear(base, _config(spec, d, ("fit",)), name="fit")
    params = [p for p in layer.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    norm = float((target**2).sum())
    curve = []
    for step in range(steps):
        err = ((layer.delta_weight() - target) ** 2).sum() / norm
        loss = err + layer.penalty()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step % spec.get("eval_every") == 0:
            curve.append(math.sqrt(float(err.detach())))
    with torch.no_grad():
        rel = math.sqrt(float(((layer.delta_weight() - target) ** 2).sum()) / norm)
        penalty = float(layer.penalty())
    if spec.method == "lokra_plus":
        side = spec.get("kr_side")
        optimum = kr_optimum(target, side, side)
    else:
        optimum = lora_optimum(target, spec.get("r"))
    n_params = sum(p.numel() for p in params)
    krank, sigma = _krank_of(layer)
    return RunResult(rel, optimum, krank, sigma, n_params, penalty, tuple(curve))


@functools.lru_cache(maxsize=8)
def _mixture(seed: int, dim: int, classes: int, mean_scale: float):
    """Task A and task B of the transfer experiment: class means, shift and label permutation.

    Class means are N(0, mean_scale²) per coordinate around unit-variance noise; `mean_scale`
    sets how separable the classes are (at 1.5 every method is at the ceiling, see the preset).
    """
    import torch

    g = torch.Generator().manual_seed(20_000 + seed)
    means = torch.randn(classes, dim, generator=g) * mean_scale
    shift = torch.randn(dim, generator=g) * 1.0
    perm = torch.randperm(classes, generator=g)
    return means, shift, perm


def _draw(seed: int, dim: int, classes: int, scale: float, n: int, task_b: bool, stream: int):
    import torch

    means, shift, perm = _mixture(seed, dim, classes, scale)
    g = torch.Generator().manual_seed(30_000 + 97 * seed + stream)
    y = torch.randint(0, classes, (n,), generator=g)
    x = means[y] + torch.randn(n, dim, generator=g)
    if task_b:
        x = x + shift
        y = perm[y]
    return x, y


def _mlp(dim: int, hidden: int, classes: int):
    from torch import nn

    return nn.Sequential(
        nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
        nn.Linear(hidden, classes),
    )  # fmt: skip


@functools.lru_cache(maxsize=8)
def pretrained(seed: int, dim: int, hidden: int, classes: int, scale: float, steps: int) -> dict:
    """The task-A model's weights for a seed (trained once per process)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    model = _mlp(dim, hidden, classes)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    x, y = _draw(seed, dim, classes, scale, 20_000, task_b=False, stream=0)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (256,), generator=g)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _accuracy(model, x, y) -> float:
    import torch

    with torch.no_grad():
        return float((model(x).argmax(-1) == y).float().mean())


def transfer_run(spec: RunSpec) -> RunResult:
    """Adapt the frozen task-A model to task B with an adapter on its hidden layers."""
    import torch
    import torch.nn.functional as F

    from harness.models.lokra.layers import attach_adapters, total_penalty

    dim, hidden, classes = spec.get("dim"), spec.get("hidden"), spec.get("classes")
    steps, lr, scale = spec.get("steps"), spec.get("lr"), spec.get("mean_scale")
    model = _mlp(dim, hidden, classes)
    weights = pretrained(spec.seed, dim, hidden, classes, scale, spec.get("pretrain_steps"))
    model.load_state_dict(weights)
    # the hidden layers are modules "0" (dim -> hidden) and "2" (hidden -> hidden)
    torch.manual_seed(1000 + spec.seed)
    attach_adapters(model, _config(spec, hidden, ("0", "2")))
    x, y = _draw(spec.seed, dim, classes, scale, spec.get("n_per_class") * classes, True, 1)
    x_test, y_test = _draw(spec.seed, dim, classes, scale, 4000, task_b=True, stream=2)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    g = torch.Generator().manual_seed(spec.seed)
    curve = []
    for step in range(steps):
        idx = torch.randint(0, len(x), (min(128, len(x)),), generator=g)
        loss = F.cross_entropy(model(x[idx]), y[idx]) + total_penalty(model)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % spec.get("eval_every") == 0:
            curve.append(_accuracy(model, x_test, y_test))
    acc = _accuracy(model, x_test, y_test)
    layers = [_krank_of(m) for m in model.modules() if hasattr(m, "delta_weight")]
    krank, sigma = sum(k for k, _ in layers), min(s for _, s in layers)
    with torch.no_grad():
        penalty = float(total_penalty(model))
    n_params = sum(p.numel() for p in params)
    return RunResult(acc, math.nan, krank, sigma, n_params, penalty, tuple(curve))


def run(spec: RunSpec) -> dict[str, Any]:
    """Train one run and return its result as a dict (process-pool friendly)."""
    result = fit_run(spec) if spec.experiment == "fit" else transfer_run(spec)
    return result.as_dict()
