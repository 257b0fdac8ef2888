"""`local/tiny-arith`: a character-level GPT-2 trained from scratch on the `arith` suite's problems.

The model is a transformers `GPT2LMHeadModel` with a character tokenizer, so the checkpoint it
saves is an ordinary Hugging Face folder that `local/PATH` and inspect's `hf/` provider both load.
It is trained on first use (about a minute on 2 CPU cores) and cached under the harness cache
folder; later uses load the cache.

Training data are fresh seeded problems in the suite's exact prompt format (`"123+456="` followed
by the answer and an end token). Operand lengths are drawn from 1 to `max_digits`, so one model
serves every difficulty up to that. The loss is on the answer tokens only.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.models.tiny_arith_data import make_problem
from harness.paths import cache_dir, cached_build

CHARS = "0123456789+-= "
PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
# Messages are joined as they are; the prompt is the user's text and nothing else.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


@dataclass(frozen=True)
class TinyArithConfig:
    """Training settings for tiny-arith (measured on 2 CPU cores)."""

    max_digits: int = 2  # operands have 1..max_digits digits; the arith default is 2
    n_layer: int = 4  # transformer blocks: depth mattered more than width (64x4 beat 128x2)
    n_embd: int = 64  # model width
    n_head: int = 4  # attention heads
    steps: int = 3000  # optimiser steps (about 90 s on 2 CPU cores)
    batch_size: int = 64  # sequences per step
    lr: float = 3e-3  # peak AdamW learning rate, cosine decay after a short warm-up
    seed: int = 1234  # training seed; the suite's evaluation seeds are small integers

    def __post_init__(self) -> None:
        if not 1 <= self.max_digits <= 8:
            raise ValueError(f"max_digits must be in 1..8, got {self.max_digits}")
        if self.n_embd % self.n_head:
            raise ValueError("n_embd must be a multiple of n_head")


# `local/tiny-arith-small`: the same recipe at a tenth of the training (1 block of width 32, 300
# steps, about 5 s), a weaker model of the same family for comparisons that should be decided
SMALL = TinyArithConfig(n_layer=1, n_embd=32, n_head=2, steps=300)


def char_tokenizer(chars: str, split: str = "."):  # -> PreTrainedTokenizerFast
    """A character-level fast tokenizer over `chars`, with PAD, EOS and UNK and a plain template.

    `split` is the pre-tokenizer's pattern for one character ("." leaves a newline unmatched).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {PAD: 0, EOS: 1, UNK: 2} | {c: i + 3 for i, c in enumerate(chars)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(split), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.padding_side = "left"
    return tok


def build_tokenizer():  # -> PreTrainedTokenizerFast
    """A character-level fast tokenizer over digits, the operators and spaces."""
    return char_tokenizer(CHARS)


def _batch(rng: random.Random, cfg: TinyArithConfig, max_len: int):
    """One training batch: right-padded ids and labels on the answer and end tokens only."""
    import torch

    lookup = {c: i + 3 for i, c in enumerate(CHARS)}
    ids = torch.zeros((cfg.batch_size, max_len), dtype=torch.long)  # 0 is <pad>
    labels = torch.full_like(ids, -100)
    for row in range(cfg.batch_size):
        # three in four problems at the full width: the shorter ones are learnt quickly
        digits = cfg.max_digits if rng.random() < 0.75 else rng.randint(1, cfg.max_digits)
        prompt, answer = make_problem(rng, digits)
        seq = [lookup[c] for c in prompt + answer] + [1]  # 1 is <eos>
        ids[row, : len(seq)] = torch.tensor(seq)
        labels[row, len(prompt) - 1 : len(seq) - 1] = ids[row, len(prompt) : len(seq)]
    return ids, labels


def train(
    out_dir: Path,
    cfg: TinyArithConfig = TinyArithConfig(),
    progress: Callable[[int, int, float], None] | None = None,
) -> Path:
    """Train tiny-arith from scratch and save it as a Hugging Face checkpoint in `out_dir`."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    tok = build_tokenizer()
    max_len = 2 * cfg.max_digits + 2 + cfg.max_digits + 2  # "a+b=" + answer (sign) + eos
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok),
            n_positions=64,
            n_embd=cfg.n_embd,
            n_layer=cfg.n_layer,
            n_head=cfg.n_head,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=tok.eos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    )
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    warmup = max(1, cfg.steps // 20)
    model.train()
    for step in range(cfg.steps):
        lr = cfg.lr * min(1.0, (step + 1) / warmup)
        lr *= 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        ids, labels = _batch(rng, cfg, max_len)
        logits = model(input_ids=ids, attention_mask=(ids != 0).long()).logits  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if progress is not None:
            progress(step + 1, cfg.steps, loss.item())
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    meta = {"name": "tiny-arith", "config": asdict(cfg), "trained_at": time.time()}
    (out_dir / "harness_tiny.json").write_text(json.dumps(meta, indent=2))
    return out_dir


def checkpoint(cfg: TinyArithConfig = TinyArithConfig()) -> Path:
    """The cached checkpoint folder, training it first if it is missing."""
    key = json.dumps(asdict(cfg), sort_keys=True)
    digest = format(abs(hash_str(key)), "x")[:10]
    path = cache_dir() / "models" / f"tiny-arith-{digest}"

    def build(tmp: Path) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("training local/tiny-arith (first use)"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} loss {task.fields[loss]:.3f}"),
            TimeElapsedColumn(),
            transient=True,
        ) as bar:
            job = bar.add_task("train", total=cfg.steps, loss=float("nan"))
            train(tmp, cfg, lambda s, _n, loss: bar.update(job, completed=s, loss=loss))

    return cached_build(path, "harness_tiny.json", build)


def hash_str(text: str) -> int:
    """A stable (process-independent) hash of a string."""
    import hashlib

    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)
