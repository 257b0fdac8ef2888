"""Supervised fine-tuning of a causal LM on `{"prompt", "completion"}` JSONL lines.

The loss is on the completion and the end token only. This file is self-contained (torch,
transformers and, for `--lora`, peft): the harness imports it to make the CPU instance's
instruct reference, and the scripted agents copy it into their sandbox and run it there as
`python sft.py --model base_model --data data/train.jsonl --out final_model`.
Deterministic for a seed and a thread count.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from typing import Any


def load_rows(paths: list[str]) -> list[dict[str, str]]:
    """Every `{"prompt", "completion"}` line of the given JSONL files, in order."""
    rows = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                rows.append({"prompt": item["prompt"], "completion": item["completion"]})
    return rows


def encode(tokenizer: Any, rows: list[dict[str, str]]) -> list[tuple[list[int], int]]:
    """Token ids of prompt + completion + end token, and where the completion starts."""
    out = []
    for row in rows:
        prompt = tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        answer = tokenizer(row["completion"], add_special_tokens=False)["input_ids"]
        out.append((prompt + answer + [tokenizer.eos_token_id], len(prompt)))
    return out


def fit(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, str]],
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    progress: Any = None,
) -> Any:
    """Train `model` in place with AdamW and a cosine schedule; returns the model."""
    import torch

    if not rows:
        raise ValueError("no training rows")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    data = encode(tokenizer, rows)
    pad = tokenizer.pad_token_id
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    model.train()
    for step in range(steps):
        scale = min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        batch = [data[rng.randrange(len(data))] for _ in range(batch_size)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((batch_size, width), pad, dtype=torch.long)  # (B, T)
        labels = torch.full((batch_size, width), -100, dtype=torch.long)  # (B, T)
        for row, (seq, start) in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq)
            # position t predicts token t + 1: label the completion and the end token
            labels[row, max(0, start - 1) : len(seq) - 1] = ids[row, max(1, start) : len(seq)]
        logits = model(input_ids=ids, attention_mask=(ids != pad).long()).logits  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if progress is not None:
            progress(step + 1, steps, loss.item())
    model.eval()
    return model


def finetune(
    model_dir: str,
    data: list[str],
    out_dir: str,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    threads: int = 1,
    lora: bool = False,
) -> None:
    """Load `model_dir`, fine-tune it on the JSONL files `data`, and save it to `out_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    if lora:
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj", "c_fc"])
        model = get_peft_model(model, config)
    fit(model, tokenizer, load_rows(data), steps=steps, batch_size=batch_size, lr=lr, seed=seed)
    if lora:
        model = model.merge_and_unload()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def main(argv: list[str] | None = None) -> None:
    """The command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="checkpoint folder to start from")
    parser.add_argument("--data", action="append", required=True, help="JSONL file; repeatable")
    parser.add_argument("--out", required=True, help="where to save the fine-tuned model")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lora", action="store_true", help="train a merged LoRA adapter")
    args = parser.parse_args(argv)
    finetune(
        args.model,
        args.data,
        args.out,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        threads=args.threads,
        lora=args.lora,
    )
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
