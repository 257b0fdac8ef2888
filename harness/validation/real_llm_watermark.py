"""KGW on a real LLM: SmolLM2-135M-Instruct's answers, watermarked and clean (issue 44, item 2).

The provenance suite's parts, unchanged, on real text: `generate.generate` samples (temperature 1)
from SmolLM2 behind a KV cache, `watermark.KGWProcessor` adds delta to the green logits of a
fresh key per text, `detect.detect` tests the answer alone (the prompt is not given to the
detector) with the exact binomial test and dedup, and the conditional power model
(`power.poisson_binomial_sf` on the per-position P_wm(green | dedup) the generator records)
predicts each text's chance of detection at its own number of scored tokens. An answer ends at
its first special token (`<|im_end|>`); what the model would sample after it is dropped, so the
number of scored tokens varies by text and the prediction is per text, then averaged.

Prompts: the instructions of LLMBar Natural (the shipped judge data) under 300 characters, in
file order, in the model's chat template. The false-positive rate: clean answers (same prompts,
no watermark) each tested under `--fpr-keys` fresh keys; the tests on one text share it, so the
Wilson interval over all text-key pairs treats them as independent, which they are not quite.

Run: `python -m harness.validation.real_llm_watermark --data-dir ../shared/data`
(`--prompts 40 --tokens 64 --settings 0.25:2,0.5:1 --alpha 0.01 --fpr-keys 20 --seed 0`).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.stats import wilson
from harness.suites.provenance.detect import critical_count, detect, scored_positions
from harness.suites.provenance.generate import Generated, generate
from harness.suites.provenance.greenlist import GreenList
from harness.suites.provenance.power import poisson_binomial_sf
from harness.suites.provenance.watermark import KGWProcessor

H = 2  # the suite's context width


class HFTeacher:
    """The generator's `Teacher` on a Hugging Face causal LM, left-padded prompts, KV cache."""

    def __init__(self, model: Any, attention: torch.Tensor) -> None:
        """The model and the prompts' attention mask (B, P), 0 on the left padding."""
        self.model, self.attention = model, attention

    @torch.no_grad()
    def start(self, prefix: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Logits after each prompt, and (cache, mask, next positions)."""
        mask = self.attention
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        out = self.model(input_ids=prefix, attention_mask=mask, position_ids=pos, use_cache=True)
        return out.logits[:, -1].float(), (out.past_key_values, mask, pos[:, -1] + 1)

    @torch.no_grad()
    def step(self, state: Any, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Logits after one more token per row."""
        cache, mask, pos = state
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
        out = self.model(
            input_ids=tokens[:, None],
            attention_mask=mask,
            position_ids=pos[:, None],
            past_key_values=cache,
            use_cache=True,
        )
        return out.logits[:, -1].float(), (out.past_key_values, mask, pos + 1)


@dataclass(frozen=True)
class Rate:
    """A proportion with its 95% Wilson interval."""

    hits: int
    n: int
    estimate: float
    low: float
    high: float


def rate(hits: int, n: int) -> Rate:
    """The share `hits / n` with its Wilson interval."""
    ci = wilson(hits, n)
    return Rate(hits, n, ci.estimate, ci.low, ci.high)


def load_prompts(data_dir: Path, count: int, max_chars: int = 300) -> list[str]:
    """The first `count` LLMBar Natural instructions shorter than `max_chars`, in file order."""
    items = json.loads((data_dir / "judges/llmbar/LLMBar_Natural/dataset.json").read_text())
    prompts = [it["input"] for it in items if len(it["input"]) < max_chars]
    return prompts[:count]


def answers(gen: Generated, stop: set[int]) -> list[np.ndarray]:
    """Each row's generated tokens up to (not including) its first special token."""
    out = []
    for row in gen.tokens[:, gen.prompt_len :]:
        ends = [i for i, t in enumerate(row.tolist()) if t in stop]
        out.append(row[: ends[0]] if ends else row)
    return out


def power_of(gen: Generated, rule: GreenList, stop: set[int], alpha: float) -> dict[str, Any]:
    """Measured detection of each answer under its own key, and the power model's prediction."""
    hits, predicted, scored, green_rate = 0, [], [], []
    for i, toks in enumerate(answers(gen, stop)):
        d = detect(toks, int(gen.keys[i]), rule)
        hits += d.p_value <= alpha
        scored.append(d.scored)
        if d.scored:
            green_rate.append(d.green / d.scored)
        pos = scored_positions(toks, rule.h)
        probs = gen.green_prob_dedup[i, pos]
        c = critical_count(pos.size, rule.gamma, alpha)
        predicted.append(float(poisson_binomial_sf(probs[None], c)[0]) if pos.size else 0.0)
    n = gen.tokens.shape[0]
    return {
        "power": asdict(rate(int(hits), n)),
        "predicted": float(np.mean(predicted)),
        "scored_mean": float(np.mean(scored)),
        "scored_min": int(min(scored)),
        "green_rate": float(np.mean(green_rate)) if green_rate else float("nan"),
        "kl_per_token": float(gen.kl.mean()),
    }


def fpr_of(gen: Generated, rule: GreenList, stop: set[int], alpha: float,
           keys: np.ndarray) -> dict[str, Any]:  # fmt: skip
    """Clean answers tested under each of `keys`: the share of text-key pairs rejected at alpha."""
    texts = answers(gen, stop)
    pvals = np.array([[detect(t, int(k), rule).p_value for k in keys] for t in texts])
    return {
        "fpr": asdict(rate(int((pvals <= alpha).sum()), pvals.size)),
        "texts_flagged_by_any_key": int((pvals <= alpha).any(1).sum()),
        "mean_p": float(pvals.mean()),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the measurement and print (and optionally write) its JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--settings", default="0.25:2,0.5:1", help="gamma:delta,gamma:delta")
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--fpr-keys", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.models.smollm2 import checkpoint

    torch.manual_seed(args.seed)
    start = time.perf_counter()
    folder = checkpoint()
    tok = AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompts = load_prompts(args.data_dir, args.prompts)
    chats = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                     add_generation_prompt=True) for p in prompts]  # fmt: skip
    enc = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
    ids, teacher = enc["input_ids"].numpy(), HFTeacher(model, enc["attention_mask"])
    special = tuple(sorted(set(tok.all_special_ids)))
    stop, vocab = set(special), int(model.config.vocab_size)
    rng = np.random.default_rng(args.seed)
    result: dict[str, Any] = {"prompts": len(prompts), "tokens": args.tokens, "alpha": args.alpha,
                              "seed": args.seed, "settings": []}  # fmt: skip
    for i, item in enumerate(args.settings.split(",")):
        gamma, delta = (float(x) for x in item.split(":"))
        rule = GreenList(gamma, vocab, H, special)
        keys = rng.integers(1, 2**63, size=len(prompts), dtype=np.uint64)
        gen = generate(teacher, ids, args.tokens, rule, keys, KGWProcessor(rule, keys, delta),
                       seed=args.seed + 1 + i)  # fmt: skip
        cell = {"gamma": gamma, "delta": delta, **power_of(gen, rule, stop, args.alpha)}
        result["settings"].append(cell)
        print(json.dumps(cell), flush=True)
    clean_rule = GreenList(0.25, vocab, H, special)
    clean = generate(teacher, ids, args.tokens, clean_rule, np.zeros(len(prompts), np.uint64),
                     seed=args.seed + 100)  # fmt: skip
    result["clean_example"] = tok.decode(answers(clean, stop)[0])
    result["fpr"] = []
    for gamma in sorted({c["gamma"] for c in result["settings"]}):
        rule = GreenList(gamma, vocab, H, special)
        fkeys = rng.integers(1, 2**63, size=args.fpr_keys, dtype=np.uint64)
        result["fpr"].append({"gamma": gamma, **fpr_of(clean, rule, stop, args.alpha, fkeys)})
    result["seconds"] = time.perf_counter() - start
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
