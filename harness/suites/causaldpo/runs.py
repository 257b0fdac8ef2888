"""One training run of the causaldpo suite: SFT on the seed's world, then one preference arm.

An arm (specs/causaldpo.md §5), all from the same SFT model of the seed (π_ref = SFT), on the
same batches and the same sampled negatives within a seed, so arms pair within a seed:
- `sft`: the SFT model itself;
- `dpo`: DPO, one random negative;
- `sdpo`: S-DPO with `negatives` random negatives;
- `causaldpo-code`: CausalDPO as the code computes its invariance term: K soft environments
  from k-means on the batch's projected pooled states, per-environment weighted losses, and
  the single-point MMD (σ = 1) of the environments' q-weighted mean logits, λ = 0.001;
- `causaldpo-w<λ>`: CausalDPO with the weighted MMD over per-example log-probability vectors
  (ours), at λ;
- `causaldpo-oracle`: the weighted form with the true environments as one-hot q, λ = 0.01;
- `irm-oracle`: IRMv1 on the DPO logit with the true environments, λ = 1.
The clustering features are f = A·h with h the pooled state and A a fixed random d×d map (the
code never trains A); k-means (10 Lloyd steps) on each batch stands in for the code's DBSCAN.
The assignments are detached (ours). Everything but the loss formulas is reconstructed.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.suites.causaldpo.world import WorldConfig, make_world

CODE_LAM = 0.001  # the authors' λ
ORACLE_LAM = 0.01  # ours: CausalDPO with oracle environments
IRM_LAM = 1.0  # the spec's IRMv1 λ
SPLITS = ("val", "iid", "ood", "ood_h2")
METRICS = ("ndcg10", "hr10", "pop1", "orr10")


@dataclass(frozen=True)
class Arm:
    """What an arm name means."""

    name: str
    loss: str  # "sft", "dpo", "sdpo", "causal", "irm"
    lam: float = 0.0  # weight of the invariance term
    mmd: str = "weighted"  # CausalDPO's invariance term: "single_point" or "weighted"
    oracle: bool = False  # true environments instead of clusters


def parse_arm(name: str) -> Arm:
    """The arm called `name`; ValueError for an unknown one."""
    fixed = {
        "sft": Arm("sft", "sft"),
        "dpo": Arm("dpo", "dpo"),
        "sdpo": Arm("sdpo", "sdpo"),
        "causaldpo-code": Arm("causaldpo-code", "causal", CODE_LAM, "single_point"),
        "causaldpo-oracle": Arm("causaldpo-oracle", "causal", ORACLE_LAM, oracle=True),
        "irm-oracle": Arm("irm-oracle", "irm", IRM_LAM, oracle=True),
    }
    if name in fixed:
        return fixed[name]
    if name.startswith("causaldpo-w"):
        try:
            lam = float(name.removeprefix("causaldpo-w"))
        except ValueError:
            lam = math.nan
        if lam >= 0:
            return Arm(name, "causal", lam)
    raise ValueError(f"unknown arm {name!r}")


@dataclass(frozen=True)
class RunSpec:
    """One run: an arm on a seed, with the preset's settings."""

    arm: str  # an arm name (`parse_arm`)
    seed: int  # seed of the world, the SFT model, the batches and the negatives
    settings: tuple[tuple[str, Any], ...]  # the preset's sizes and optimiser settings

    def get(self, key: str) -> Any:
        """A setting by name."""
        return dict(self.settings)[key]


def _world_config(settings: dict[str, Any]) -> WorldConfig:
    return WorldConfig(train=settings["train"], val=settings["val"], test=settings["test"])


def _tensors(split: Any) -> tuple[Any, Any, Any]:
    import torch

    return (torch.from_numpy(split.history), torch.from_numpy(split.target),
            torch.from_numpy(split.env))  # fmt: skip


@functools.lru_cache(maxsize=4)
def sft_state(seed: int, settings: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The SFT model's weights for a seed (trained once per process and settings)."""
    import torch
    import torch.nn.functional as F

    from harness.suites.causaldpo.model import ModelConfig, Recommender

    s = dict(settings)
    world = make_world(seed, _world_config(s))
    x, y, _ = _tensors(world.splits["train"])
    torch.manual_seed(seed)
    model = Recommender(ModelConfig())
    opt = torch.optim.Adam(model.parameters(), lr=s["sft_lr"])
    g = torch.Generator().manual_seed(seed)
    for _ in range(s["sft_epochs"]):
        for idx in torch.randperm(len(x), generator=g).split(s["sft_batch"]):
            loss = F.cross_entropy(model(x[idx])[0], y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _negatives(target: Any, items: int, count: int, g: Any) -> Any:
    """`count` distinct random items other than the target, per example: (n, count)."""
    import torch

    scores = torch.rand(len(target), items, generator=g)  # (n, items)
    scores[torch.arange(len(target)), target] = -1.0
    return scores.topk(count, dim=1).indices


def _projection(seed: int, d: int) -> Any:
    import torch

    g = torch.Generator().manual_seed(7000 + seed)
    return torch.randn(d, d, generator=g) / math.sqrt(d)


def _preference_step(arm: Arm, model: Any, batch: tuple, spec: RunSpec, g: Any, proj: Any) -> Any:
    """The arm's loss on one batch."""
    import torch

    from harness.suites.causaldpo import losses

    x, y, env, neg, ref = batch
    beta = spec.get("beta")
    logits, pooled = model(x)  # (B, items), (B, d)
    delta = torch.log_softmax(logits, dim=1) - ref  # (B, items): log π_θ − log π_ref
    d_w = delta.gather(1, y[:, None])[:, 0]  # (B,)
    d_l = delta.gather(1, neg)  # (B, J)
    if arm.loss == "dpo":
        return losses.dpo_loss(d_w, d_l[:, 0], beta)
    if arm.loss == "sdpo":
        return losses.sdpo_loss(d_w, d_l, beta)
    if arm.loss == "irm":
        return losses.irm_v1_loss(d_w, d_l[:, 0], env, beta=beta, lam=arm.lam)
    k = spec.get("envs")
    if arm.oracle:
        q = torch.nn.functional.one_hot(env, 3).float()  # (B, 3)
    else:
        f = pooled.detach() @ proj.T  # (B, d)
        centres = losses.kmeans_centres(f, k, steps=spec.get("kmeans_steps"), generator=g)
        q = losses.soft_assign(f, centres)  # (B, K)
    feats = logits if arm.mmd == "single_point" else torch.log_softmax(logits, dim=1)
    mmd = "single_point" if arm.mmd == "single_point" else "weighted"
    return losses.causal_dpo_loss(d_w, d_l[:, 0], q, feats, beta=beta, lam=arm.lam, mmd=mmd).total


def _evaluate(model: Any, world: Any) -> dict[str, float]:
    import torch

    from harness.suites.causaldpo import metrics

    out = {}
    with torch.no_grad():
        for name in SPLITS:
            x, y, _ = _tensors(world.splits[name])
            scores = model(x)[0].numpy()
            r = metrics.ranks(scores, y.numpy())
            out[f"{name}_ndcg10"] = metrics.ndcg(r, 10)
            out[f"{name}_hr10"] = metrics.hit_rate(r, 10)
            out[f"{name}_pop1"] = metrics.pop_at_1(scores, world.hot)
            out[f"{name}_orr10"] = metrics.or_ratio(metrics.top_k(scores, 10))
    return out


def cluster_ari(model: Any, world: Any, seed: int, k: int, steps: int) -> float:
    """ARI of the hard soft-cluster argmax against the true environments, on the IID test split."""
    import torch

    from harness.suites.causaldpo import losses, metrics

    x, _, env = _tensors(world.splits["iid"])
    with torch.no_grad():
        f = model(x)[1] @ _projection(seed, model.cfg.d).T  # (n, d)
        g = torch.Generator().manual_seed(seed)
        q = losses.soft_assign(f, losses.kmeans_centres(f, k, steps=steps, generator=g))
    return metrics.adjusted_rand_index(q.argmax(dim=1).numpy(), env.numpy())


def train_run(spec: RunSpec) -> dict[str, Any]:
    """Train the run's arm from the seed's SFT model and evaluate it on every split."""
    import torch

    from harness.suites.causaldpo.model import ModelConfig, Recommender

    start = time.process_time()
    arm = parse_arm(spec.arm)
    s = dict(spec.settings)
    world = make_world(spec.seed, _world_config(s))
    model = Recommender(ModelConfig())
    model.load_state_dict(sft_state(spec.seed, spec.settings))
    losses_seen: list[float] = []
    ari = math.nan
    if arm.loss == "sft":
        ari = cluster_ari(model, world, spec.seed, s["envs"], s["kmeans_steps"])
    else:
        x, y, env = _tensors(world.splits["train"])
        with torch.no_grad():
            ref = torch.log_softmax(model(x)[0], dim=1)  # (n, items): π_ref = SFT
        proj = _projection(spec.seed, model.cfg.d)
        opt = torch.optim.Adam(model.parameters(), lr=s["lr"])
        g = torch.Generator().manual_seed(1000 + spec.seed)  # the same batches in every arm
        g_k = torch.Generator().manual_seed(2000 + spec.seed)  # k-means starts
        count = s["negatives"] if arm.loss == "sdpo" else 1
        for _ in range(s["epochs"]):
            negs = _negatives(y, model.cfg.items, s["negatives"], g)[:, :count]
            for idx in torch.randperm(len(x), generator=g).split(s["batch"]):
                if len(idx) < s["envs"]:
                    continue  # too few examples to start k-means (a last short batch)
                batch = (x[idx], y[idx], env[idx], negs[idx], ref[idx])
                loss = _preference_step(arm, model, batch, spec, g_k, proj)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses_seen.append(float(loss.detach()))
    model.eval()
    result = _evaluate(model, world)
    return {
        "score": result["ood_ndcg10"],
        **result,
        "ari": ari,
        "final_loss": float(np.mean(losses_seen[-20:])) if losses_seen else math.nan,
        "cpu_seconds": round(time.process_time() - start, 2),
        **{k: v for k, v in asdict(arm).items() if k in ("lam", "mmd", "oracle")},
    }
