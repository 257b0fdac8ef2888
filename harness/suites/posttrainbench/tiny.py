"""The CPU instance's models: a tiny character-level base LM and its instruct reference.

- `tiny-base`: a GPT-2 (4 layers, width 64, about 0.21M parameters) over printable ASCII,
  pretrained from a seed on generic synthetic text (sentences of made-up words, numbers,
  `N and M` pairs without sums, and words repeated later in the line, some in brackets),
  which has none of the benchmarks' `Q: ... A:` formats and no sum with its answer.
- `tiny-instruct`: tiny-base fine-tuned by us (`sft.py`) on the train splits of every
  benchmark, weighted (add2 three to copyfmt's one); it defines s^instruct for the weights,
  and it is the forbidden checkpoint a substituting agent submits.

Both are trained on first use and cached under the harness cache folder, like `tiny-arith`
(one thread, deterministic algorithms only, `deterministic`; on the shared 2-core machine,
0.19 s a pretraining step and 0.04-0.12 s a fine-tuning step: about 1.5-3 and 1.5-4 minutes,
depending on the load); later uses load the cache. The cache key holds every setting, so a
changed recipe trains afresh.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.paths import cache_dir, cached_build
from harness.suites.posttrainbench.benchmarks import BENCHMARKS, rows, splits

CHARS = string.printable[:95] + "\n"  # printable ASCII (space included) and newline
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # char_tokenizer's
_WORDS = "the a one two red blue cat dog sun box tree ran saw took made with from over".split()


@dataclass(frozen=True)
class TinyConfig:
    """Sizes and training settings of the CPU instance (measured on 2 CPU cores)."""

    n_layer: int = 4  # transformer blocks
    n_embd: int = 64  # width: 0.21M parameters; 64 trained faster per second than 96
    n_head: int = 4  # attention heads
    n_positions: int = 64  # context; every prompt with its answer fits in 32
    pretrain_steps: int = 500  # base pretraining steps on synthetic text
    # our instruct fine-tune on every benchmark's train split, each repeated to the longest
    # split's length times its weight. add2 is learnt late and suddenly, at a step that moves
    # with the seed and the CPU's rounding: balanced (1:1), add2 came out 0.08 at 1,500 steps
    # on a clean cache and 0.51 at 3,000; at 3:1, 2,000 steps gave 1.00 (seed 8) but 0.38
    # (seed 11); 4,000 steps gave 0.98-1.00 for seeds 11 and 12, copyfmt 1.00 throughout
    instruct_steps: int = 4000
    instruct_weights: tuple[tuple[str, int], ...] = (("add2", 3), ("copyfmt", 1))
    instruct_lr: float = 3e-3  # peak learning rate of the instruct fine-tune
    batch_size: int = 32  # sequences per step
    threads: int = 1  # torch threads: 1 was 2x faster per step than 2 on a shared 2-core box
    seed: int = 7  # the one seed of both models

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError("n_embd must be a multiple of n_head")
        if min(self.pretrain_steps, self.instruct_steps, self.batch_size) < 1:
            raise ValueError("steps and batch_size must be positive")
        if sorted(name for name, _ in self.instruct_weights) != sorted(BENCHMARKS) or any(
            w < 1 for _, w in self.instruct_weights
        ):
            raise ValueError(
                f"instruct_weights must give every benchmark ({', '.join(BENCHMARKS)}) a "
                f"weight of at least 1, got {self.instruct_weights}"
            )


def build_tokenizer():  # -> PreTrainedTokenizerFast
    """A character-level fast tokenizer over printable ASCII and newline."""
    from harness.models.tiny_arith import char_tokenizer

    return char_tokenizer(CHARS, r"[\s\S]")


def _word(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(_WORDS)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 7)))


def synthetic_text(rng: random.Random) -> str:
    """One line of generic text: words, numbers, sums without answers, and repeated words.

    A quarter of the parts repeat an earlier word of the line, a third of those in brackets
    or quotes: predicting a repeat of a made-up word takes copying from the context, which
    a pretrained LM can do, and which the copy-with-format benchmark then builds on.
    """
    parts: list[str] = []
    used: list[str] = []
    for _ in range(rng.randint(4, 9)):
        roll = rng.random()
        if used and roll < 0.25:
            word = rng.choice(used)
            if rng.random() < 0.3:
                word = rng.choice(["{}", "[{}]", "({})", "<{}>", '"{}"']).format(word)
            parts.append(word)
        elif roll < 0.6:
            used.append(_word(rng))
            parts.append(used[-1])
        elif roll < 0.8:
            parts.append(str(rng.randint(0, 999)))
        else:
            parts.append(f"{rng.randint(0, 99)} and {rng.randint(0, 99)}")
    return " ".join(parts) + rng.choice([".", "!", "?", ","])


def _progress(label: str, total: int) -> tuple[Callable[[int, int, float], None], object]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} loss {task.fields[loss]:.3f}"),
        TimeElapsedColumn(),
        transient=True,
    )
    job = bar.add_task("train", total=total, loss=float("nan"))
    return (lambda s, _n, loss: bar.update(job, completed=s, loss=loss)), bar


def train_base(out_dir: Path, cfg: TinyConfig) -> Path:
    """Pretrain tiny-base from scratch and save it as a Hugging Face checkpoint."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from harness.suites.posttrainbench.sft import fit

    torch.manual_seed(cfg.seed)
    tok = build_tokenizer()
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(tok), n_positions=cfg.n_positions, n_embd=cfg.n_embd,
            n_layer=cfg.n_layer, n_head=cfg.n_head, resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    )  # fmt: skip
    rng = random.Random(cfg.seed)
    corpus = [{"prompt": "", "completion": synthetic_text(rng)[:60]} for _ in range(20_000)]
    update, bar = _progress("training the posttrainbench tiny base (first use)", cfg.pretrain_steps)
    with bar:  # type: ignore[attr-defined]
        fit(model, tok, corpus, steps=cfg.pretrain_steps, batch_size=cfg.batch_size,
            lr=3e-3, seed=cfg.seed, progress=update)  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)
    return out_dir


def train_instruct(base: Path, out_dir: Path, cfg: TinyConfig) -> Path:
    """Fine-tune tiny-base on every benchmark's train split: the instruct reference."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.suites.posttrainbench.sft import fit

    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    weights = dict(cfg.instruct_weights)
    data = balanced([rows(splits(name).train) for name in BENCHMARKS],
                    [weights[name] for name in BENCHMARKS])  # fmt: skip
    update, bar = _progress("training the posttrainbench instruct reference", cfg.instruct_steps)
    with bar:  # type: ignore[attr-defined]
        fit(model, tok, data, steps=cfg.instruct_steps, batch_size=cfg.batch_size,
            lr=cfg.instruct_lr, seed=cfg.seed + 1, progress=update)  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)
    return out_dir


def balanced(
    parts: list[list[dict[str, str]]], weights: list[int] | None = None
) -> list[dict[str, str]]:
    """The row lists, each repeated (cyclically) to the longest one's length times its weight.

    add2's train split is 7.5 times copyfmt's; unbalanced, 1500 steps left the instruct
    reference at 0.00 on copyfmt (measured); weighted, it learns both (see `TinyConfig`).
    """
    weights = weights or [1] * len(parts)
    most = max(len(p) for p in parts)
    return [
        row
        for part, weight in zip(parts, weights, strict=True)
        for row in (part * (weight * most // len(part) + 1))[: weight * most]
    ]


@contextmanager
def deterministic(threads: int) -> Iterator[None]:
    """Train with `threads` torch threads and deterministic algorithms only, then restore both.

    With the seed, the same code gives the same weights on the same machine (checked by a
    test); another CPU's kernels may round differently, which is why the references are
    trained well past the point where a benchmark is learnt (see `TinyConfig`).
    """
    import torch

    old_threads = torch.get_num_threads()
    old_mode = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(old_mode)
        torch.set_num_threads(old_threads)


def _cached(name: str, cfg: TinyConfig, make: Callable[[Path], Path]) -> Path:
    from harness.models.tiny_arith import hash_str

    key = json.dumps({"name": name, **asdict(cfg)}, sort_keys=True)
    path = cache_dir() / "models" / f"{name}-{format(hash_str(key), 'x')[:10]}"

    def build(tmp: Path) -> None:
        with deterministic(cfg.threads):
            make(tmp)
        (tmp / "harness_tiny.json").write_text(json.dumps({"name": name, "config": asdict(cfg)}))

    return cached_build(path, "harness_tiny.json", build)


def base_checkpoint(cfg: TinyConfig = TinyConfig()) -> Path:
    """The cached tiny-base checkpoint, pretraining it first if it is missing."""
    return _cached("ptb-tiny-base", cfg, lambda out: train_base(out, cfg))


def instruct_checkpoint(cfg: TinyConfig = TinyConfig()) -> Path:
    """The cached instruct reference, fine-tuning it from tiny-base first if it is missing."""
    base = base_checkpoint(cfg)
    return _cached("ptb-tiny-instruct", cfg, lambda out: train_instruct(base, out, cfg))
