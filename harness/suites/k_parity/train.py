"""One k-parity training run: AR or MD, from a seed, with train and test accuracy curves.

- AR: a causal model, next-token cross-entropy on the label only (`answer_only`, default) or on
  every token (`all_tokens`); evaluated by predicting the label after the bits.
- MD: a bidirectional model trained with masked diffusion over the whole sequence, bits
  included (`harness.suites.k_parity.schedules`); evaluated by masking only the label.

AdamW with betas (0.9, 0.98) and weight decay on matrices only, batches drawn without
replacement within each step from the fixed training set. Evaluation every `eval_every` steps;
the run stops at the first evaluation with test accuracy >= `stop_at` ("steps to generalise").
Deterministic for a given seed and thread count.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch
from torch.nn import functional as F

from harness.models.parity_transformer import MASK, ParityModelConfig, ParityTransformer
from harness.suites.k_parity.data import ParityData, make_parity_data
from harness.suites.k_parity.schedules import MaskSchedule, draw_mask, md_loss


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one training run."""

    objective: Literal["ar", "md"]  # autoregressive or masked diffusion
    schedule: MaskSchedule | None  # MD's mask-rate schedule and weighting; None for AR
    seed: int  # data draw, secret subset, initialisation and batches
    n: int = 12  # bits
    k: int = 3  # relevant bits
    n_train: int = 1000  # training strings
    n_test: int = 2000  # fresh test strings
    d_model: int = 32  # width
    n_layer: int = 2  # blocks
    n_head: int = 4  # heads
    batch_size: int = 256  # strings per step (capped at n_train)
    lr: float = 1e-3  # AdamW learning rate
    weight_decay: float = 1.0  # on matrices only
    max_steps: int = 1500  # budget
    eval_every: int = 50  # steps between evaluations
    stop_at: float = 0.99  # stop once test accuracy reaches this
    ar_loss: Literal["answer_only", "all_tokens"] = "answer_only"  # AR targets

    def __post_init__(self) -> None:
        if self.objective not in ("ar", "md"):
            raise ValueError(f"objective must be 'ar' or 'md', got {self.objective!r}")
        if (self.objective == "md") != (self.schedule is not None):
            raise ValueError("MD needs a schedule and AR takes none")
        if self.ar_loss not in ("answer_only", "all_tokens"):
            raise ValueError(f"ar_loss must be answer_only or all_tokens, got {self.ar_loss!r}")


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run."""

    final_test_acc: float  # test accuracy at the last evaluation
    final_train_acc: float  # training accuracy at the last evaluation
    steps_to_generalize: int | None  # first evaluated step with test acc >= stop_at, else None
    steps: list[int] = field(default_factory=list)  # evaluated steps
    train_acc: list[float] = field(default_factory=list)  # training accuracy at each
    test_acc: list[float] = field(default_factory=list)  # test accuracy at each
    seconds: float = 0.0  # wall time of the run
    secret: tuple[int, ...] = ()  # the relevant positions

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def _accuracy(model: ParityTransformer, rows: torch.Tensor, objective: str) -> float:
    n = rows.shape[1] - 1
    with torch.inference_mode():
        if objective == "ar":
            logits = model.logits_at(rows[:, :n], n - 1)  # (N, 2): the label after the bits
        else:
            masked = rows.clone()
            masked[:, n] = MASK
            logits = model.logits_at(masked, n)  # (N, 2)
    return float((logits.argmax(-1) == rows[:, n]).float().mean())


def _loss(
    model: ParityTransformer, batch: torch.Tensor, cfg: RunConfig, gen: torch.Generator
) -> torch.Tensor:
    n = batch.shape[1] - 1
    if cfg.objective == "ar":
        logits = model(batch[:, :n])  # (B, n, 2): position i predicts token i+1
        if cfg.ar_loss == "answer_only":
            return F.cross_entropy(logits[:, n - 1], batch[:, n])
        return F.cross_entropy(logits.reshape(-1, 2), batch[:, 1:].reshape(-1))
    assert cfg.schedule is not None
    t = cfg.schedule.sample_t(batch.shape[0], gen)  # (B,)
    masked = draw_mask(t, batch.shape[1], gen)  # (B, T)
    inputs = torch.where(masked, torch.full_like(batch, MASK), batch)
    return md_loss(model(inputs), batch, masked, t, cfg.schedule)


def train_run(cfg: RunConfig, data: ParityData | None = None) -> RunResult:
    """Train from scratch and evaluate every `eval_every` steps."""
    start = time.perf_counter()
    data = data or make_parity_data(cfg.n, cfg.k, cfg.n_train, cfg.n_test, cfg.seed)
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    model = ParityTransformer(
        ParityModelConfig(cfg.n + 1, cfg.d_model, cfg.n_layer, cfg.n_head, cfg.objective == "ar")
    )
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0},
        ],
        lr=cfg.lr,
        betas=(0.9, 0.98),
        fused=True,  # one kernel per step instead of a loop over parameters (CPU and CUDA)
    )
    batch_size = min(cfg.batch_size, data.train.shape[0])
    steps, train_acc, test_acc = [], [], []
    hit = None
    for step in range(1, cfg.max_steps + 1):
        idx = torch.randperm(data.train.shape[0], generator=gen)[:batch_size]
        model.train()
        loss = _loss(model, data.train[idx], cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            model.eval()
            steps.append(step)
            train_acc.append(_accuracy(model, data.train, cfg.objective))
            test_acc.append(_accuracy(model, data.test, cfg.objective))
            if test_acc[-1] >= cfg.stop_at:
                hit = step
                break
    return RunResult(
        final_test_acc=test_acc[-1],
        final_train_acc=train_acc[-1],
        steps_to_generalize=hit,
        steps=steps,
        train_acc=train_acc,
        test_acc=test_acc,
        seconds=time.perf_counter() - start,
        secret=data.secret,
    )


def train_run_dict(cfg: RunConfig) -> dict[str, Any]:
    """Worker entry point: train, return a dict.

    It lives here, not in the suite, so that a spawned worker imports torch and not inspect.
    """
    return train_run(cfg).as_dict()
