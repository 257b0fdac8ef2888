"""LoKRA (reconstructed) against LoRA, fine-tuning SmolLM2-135M-Instruct through peft, on CPU.

Task (ours, tiny): two-digit additions as plain text, `"23+45="` → `"68"` and a newline, loss on
the answer tokens only. 256 training and 100 held-out problems, drawn once from numpy seed 1234
(disjoint).
Each seed fixes the adapter initialisation and the batch order, shared by both arms, so the
arms are paired by seed. Both arms are peft's LoRA (r 8, alpha 16, q_proj and v_proj, AdamW
lr 1e-3, batch 16, `--steps` steps); the LoKRA arm adds `penalty(model)` (λ 1e-2, the
`get_lokra_model` defaults) to the loss.

Per seed and arm: the held-out mean answer NLL (nats per answer token, lower is better) and
the share of held-out problems whose answer tokens are all the argmax under teacher forcing.
Both go through the comparison engine (`harness.stats._compare`, unit seed, LoKRA against
LoRA as baseline).

Run: `python -m harness.validation.lokra_smollm2 --seeds 3 --steps 30`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from harness.models.lokra.peft_tuner import METHODS

MAX_LEN = 12


def problems(n_train: int, n_test: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Disjoint (prompt, answer) lists of two-digit additions."""
    rng = np.random.default_rng(1234)
    pairs = rng.choice(90 * 90, n_train + n_test, replace=False)
    out = [(f"{10 + p // 90}+{10 + p % 90}=", f"{10 + p // 90 + 10 + p % 90}\n") for p in pairs]
    return out[:n_train], out[n_train:]


def encode(tok: object, rows: list[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and labels (-100 outside the answer)."""
    ids, labels = [], []
    for prompt, answer in rows:
        p = tok(prompt, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        a = tok(answer, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        x = (p + a)[:MAX_LEN]
        pad = MAX_LEN - len(x)
        ids.append(x + [0] * pad)
        labels.append(([-100] * len(p) + a)[:MAX_LEN] + [-100] * pad)
    return torch.tensor(ids), torch.tensor(labels)


@torch.no_grad()
def held_out(
    model: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor
) -> tuple[float, float]:
    """Mean answer NLL per token and the share of all-argmax answers."""
    model.eval()
    logits = model(input_ids=ids).logits[:, :-1]  # right padding: causal, no mask needed
    target = labels[:, 1:]
    mask = target != -100
    lp = torch.log_softmax(logits.float(), -1)
    nll = -lp.gather(-1, target.clamp(min=0)[..., None])[..., 0]
    right = (logits.argmax(-1) == target) | ~mask
    model.train()
    return float(nll[mask].mean()), float(right.all(-1).float().mean())


# the two arms, by the adapters' own method names (harness.models.lokra.peft_tuner.METHODS)
LORA, LOKRA = METHODS[:2]
ARMS = (LORA, LOKRA)


def train(method: str, seed: int, steps: int, data: dict) -> tuple[float, float, float]:
    """One arm and seed: held-out NLL, exact share, seconds."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM

    from harness.models.lokra.peft_tuner import get_lokra_model, penalty
    from harness.models.smollm2 import checkpoint

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(checkpoint(), torch_dtype=torch.float32)
    cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    model = get_lokra_model(base, cfg, method=method, lam=1e-2)  # type: ignore[arg-type]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    ids, labels = data["train"]
    t0 = time.perf_counter()
    for _ in range(steps):
        b = torch.randint(0, len(ids), (16,), generator=gen)
        loss = model(input_ids=ids[b], labels=labels[b]).loss + penalty(model)
        opt.zero_grad()
        loss.backward()
        opt.step()
    nll, exact = held_out(model, *data["test"])
    return nll, exact, time.perf_counter() - t0


def main() -> None:
    """Train every seed and arm, print per-seed numbers and the engine's comparisons."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.models.smollm2 import checkpoint
    from harness.stats import Design, compare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    tok = AutoTokenizer.from_pretrained(checkpoint())
    tr, te = problems(256, 100)
    data = {"train": encode(tok, tr), "test": encode(tok, te)}
    base = AutoModelForCausalLM.from_pretrained(checkpoint(), torch_dtype=torch.float32)
    untuned = held_out(base, *data["test"])
    print("untuned SmolLM2: held-out NLL %.3f, exact %.3f" % untuned, flush=True)
    nll: dict[str, dict[str, float]] = {arm: {} for arm in ARMS}
    exact: dict[str, dict[str, float]] = {arm: {} for arm in ARMS}
    for seed in range(args.seeds):
        for arm in ARMS:
            n, e, s = train(arm, seed, args.steps, data)
            nll[arm][str(seed)], exact[arm][str(seed)] = n, e
            print(f"seed {seed} {arm}: held-out NLL {n:.4f}, exact {e:.3f}, {s:.0f} s", flush=True)
    lower = Design("seed", "unbounded", direction="lower", baseline=LORA)
    for metric, scores, design in (
        ("held-out answer NLL", nll, lower),
        ("held-out exact share", exact, Design("seed", "bounded", baseline=LORA)),
    ):
        c = compare(design, scores, metric=metric)
        for a in c.arms:
            i = a.interval
            print(f"{metric} {a.arm}: {i.estimate:.4f} [{i.low:.4f}, {i.high:.4f}] ({i.method})")
        p = c.pair(LOKRA, LORA)
        assert p is not None
        t = p.test
        if t is None:
            print(f"{metric} lokra − lora: not tested ({p.note})")
        else:
            print(
                f"{metric} lokra − lora: {t.estimate:+.4f} [{t.low:+.4f}, {t.high:+.4f}], "
                f"p {t.p_value:.3g}, Holm p {p.p_holm:.3g} ({t.method})"
            )


if __name__ == "__main__":
    main()
