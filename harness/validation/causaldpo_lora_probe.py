"""Probe whether CausalDPO on SmolLM2-135M with LoRA fits a CPU run of minutes.

Times one LoRA training step (forward and backward, AdamW on the adapter) and one scoring
forward pass of `local/smollm2-135m` on prompts the size the §5 world would give with titles as
text: a history of 8 titles and a one-title response. The titles are made-up words (the §5
world has item ids, no titles); only their token count matters here. Prints the per-sequence
costs and the cost of the smallest §5-shaped run, extrapolated from them.

    python -m harness.validation.causaldpo_lora_probe [--batch 8] [--steps 3]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass

from harness.errors import HarnessUsageError

WORDS = ("night", "river", "blue", "house", "star", "last", "king", "dream", "city", "war", "love",
         "dark", "road", "summer", "ghost", "fire", "song", "island", "secret", "moon")  # fmt: skip


@dataclass(frozen=True)
class Probe:
    """Measured per-sequence costs (seconds) and the sequence length they were measured at."""

    tokens: int  # tokens per prompt + response
    train_wall: float  # one LoRA step, wall seconds per sequence
    train_cpu: float  # the same, process CPU seconds per sequence
    score_wall: float  # one no-grad forward, wall seconds per sequence
    score_cpu: float  # the same, process CPU seconds per sequence
    trainable: int  # LoRA parameters
    threads: int  # torch threads


def title(rng: random.Random) -> str:
    """A made-up title of 2-4 words."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))).title()


def prompt(rng: random.Random) -> str:
    """A history of 8 titles, the question, and one title as the response."""
    history = "; ".join(title(rng) for _ in range(8))
    return f"The user watched: {history}. Which title next? Answer: {title(rng)}"


def probe(batch: int, steps: int, seed: int = 0) -> Probe:
    """Time `steps` LoRA steps and scoring passes on `batch` sequences, after one warm-up."""
    try:
        import peft
    except ImportError:
        raise HarnessUsageError("the LoRA probe needs peft: pip install peft") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.models.local import resolve_checkpoint

    path = resolve_checkpoint("smollm2-135m")
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    cfg = peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])
    model = peft.get_peft_model(model, cfg)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    rng = random.Random(seed)
    enc = tok([prompt(rng) for _ in range(batch)], return_tensors="pt", padding=True)
    ids, mask = enc["input_ids"], enc["attention_mask"]  # (B, T)

    def timed(fn) -> tuple[float, float]:
        fn()  # warm-up
        w, c = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn()
        return (time.perf_counter() - w) / steps / batch, (time.process_time() - c) / steps / batch

    def train_step() -> None:
        model.train()
        out = model(input_ids=ids, attention_mask=mask, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad()

    def score_step() -> None:
        model.eval()
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask)

    tw, tc = timed(train_step)
    sw, sc = timed(score_step)
    return Probe(int(ids.shape[1]), tw, tc, sw, sc, trainable, torch.get_num_threads())


def main(argv: list[str] | None = None) -> None:
    """Print the probe and the smallest §5-shaped run it implies."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args(argv)
    p = probe(a.batch, a.steps)
    print(f"SmolLM2-135M + LoRA r=8 (q,v; {p.trainable:,} trainable), {p.tokens} tokens per "
          f"sequence, batch {a.batch}, {p.threads} torch threads")  # fmt: skip
    print(f"train step: {p.train_wall:.3f} s wall, {p.train_cpu:.3f} s CPU per sequence")
    print(f"scoring forward: {p.score_wall:.3f} s wall, {p.score_cpu:.3f} s CPU per sequence")
    # the §5 run per arm and seed: SFT 4 epochs of 6,000 examples; preference 2 epochs with the
    # chosen and 3 rejected responses (4 policy sequences; the reference scored once, 4 more);
    # evaluation ranks 120 items for each of 1,000 val + 2 × 2,000 test histories
    sft = 4 * 6000 * p.train_cpu
    pref = 2 * 6000 * 4 * p.train_cpu + 6000 * 4 * p.score_cpu
    rank = 5000 * 120 * p.score_cpu
    print(f"one arm, one seed at §5 sizes (CPU s): SFT {sft:,.0f}, preference {pref:,.0f}, "
          f"ranking 120 titles {rank:,.0f}; total {sft + pref + rank:,.0f}")  # fmt: skip
    budget = 300.0  # five CPU-minutes
    n = budget / (8 * p.train_cpu + 4 * p.score_cpu)  # SFT 4 epochs + 1 preference epoch
    print(f"in 5 CPU-minutes: about {n:,.0f} training examples for SFT + DPO of one arm, "
          f"no evaluation")  # fmt: skip


if __name__ == "__main__":
    main()
