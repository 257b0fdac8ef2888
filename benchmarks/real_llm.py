"""`local/smollm2-135m`: load time (cold conversion and cached) and generation throughput.

In one process:

1. Cold load: the GGUF file converted into an empty cache folder (`smollm2.checkpoint`).
2. Cached load: the converted folder loaded by the `local/` provider (tokenizer and weights).
3. Tokens per second through a full `harness eval` (the `arith` suite's prompts in SmolLM2's
   chat template, greedy, `max_tokens` each) against a bare transformers loop: the same rendered
   prompts, left-padded in chunks of the same batch size, `model.generate`, nothing else. The
   bare loop runs before and after the harness run and the faster one counts, so drift on a
   shared machine shows against the harness, not for it. Target: ratio >= 0.8.

Usage: python benchmarks/real_llm.py [--n 64] [--batch-size 32] [--max-tokens 16] [--hf]
(`--hf` adds inspect's own `hf/` provider on the converted folder, through the same eval path.)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def bare_loop(model, tok, prompts: list[str], batch_size: int, max_tokens: int) -> int:
    """Generate greedily with nothing but transformers; the number of tokens kept (to <eos>)."""
    import torch

    tok.padding_side = "left"
    kept = 0
    for i in range(0, len(prompts), batch_size):
        enc = tok(prompts[i : i + batch_size], return_tensors="pt", padding=True,
                  add_special_tokens=False)  # fmt: skip
        with torch.inference_mode():
            out = model.generate(
                **enc, max_new_tokens=max_tokens, do_sample=False, temperature=None, top_p=None,
                top_k=None, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
            )  # fmt: skip
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            kept += row.index(tok.eos_token_id) if tok.eos_token_id in row else len(row)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="arith problems")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--hf", action="store_true", help="also inspect's hf/ provider")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="harness-bench-llm-"))
    os.environ.setdefault("INSPECT_LOG_DIR", str(work / "inspect"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HARNESS_CACHE_DIR"] = str(work / "cache")  # an empty cache: the cold path

    import torch

    from harness.models.smollm2 import checkpoint

    start = time.perf_counter()
    folder = checkpoint()
    t_cold = time.perf_counter() - start

    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ChatMessageUser, get_model

    from harness.eval import EvalRequest, run
    from harness.models.local import render_prompt
    from harness.suites.arith.task import arith

    start = time.perf_counter()
    local = get_model("local/smollm2-135m", batch_size=args.batch_size)
    t_cached = time.perf_counter() - start
    model, tok = local.api.model, local.api.tokenizer  # type: ignore[attr-defined]

    task_args = {"n": args.n, "max_tokens": args.max_tokens}
    prompts = [
        render_prompt(tok, [ChatMessageUser(content=str(s.input))])
        for s in arith(**task_args).dataset
    ]
    bare_loop(model, tok, prompts[:2], 2, 2)  # warm-up: first-touch of the mapped weights

    def timed_bare() -> tuple[float, int]:
        start = time.perf_counter()
        kept = bare_loop(model, tok, prompts, args.batch_size, args.max_tokens)
        return time.perf_counter() - start, kept

    def through_harness(spec: str, model_args: dict, sub: str, n: int = 0) -> tuple[float, int]:
        if not n:  # pay one-time costs (inspect's eval machinery, a model load) outside the timing
            through_harness(spec, model_args, sub + "-warm", n=args.batch_size)
        start = time.perf_counter()
        ok, rows, _ = run(
            EvalRequest(
                suite="arith", models=(spec,), task_args={**task_args, "n": n or args.n},
                model_args=model_args, log_dir=str(work / sub), display="none",
            )
        )  # fmt: skip
        elapsed = time.perf_counter() - start
        assert ok and rows[0].errors == 0, rows
        log = read_eval_log(rows[0].log)
        return elapsed, sum(s.output.usage.output_tokens for s in log.samples or [])

    t_bare, k_bare = timed_bare()
    t_local, k_local = through_harness("local/smollm2-135m", {"batch_size": args.batch_size}, "l")
    t_bare2, k_bare2 = timed_bare()
    t_bare = min(t_bare, t_bare2)
    if not k_bare == k_bare2 == k_local:
        print(f"  note: tokens kept differ: bare {k_bare}/{k_bare2}, harness {k_local}")

    print(
        f"\nSmolLM2-135M-Instruct (float32, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}); {args.n} arith prompts in its "
        f"chat template, batch {args.batch_size}, greedy, max_tokens {args.max_tokens}"
    )
    print(f"  load, cold (GGUF -> cache) : {t_cold:7.1f} s  ({folder})")
    print(f"  load, cached               : {t_cached:7.1f} s")
    print(f"  bare transformers generate : {k_bare / t_bare:7.1f} tokens/s ({t_bare:.1f} s)")
    print(f"  harness eval, local/       : {k_local / t_local:7.1f} tokens/s ({t_local:.1f} s)")
    print(f"  ratio local/bare           : {(k_local / t_local) / (k_bare / t_bare):.2f}  (>= 0.8)")
    if args.hf:
        hf_args = {"batch_size": args.batch_size, "device": "cpu", "do_sample": False}
        t_hf, k_hf = through_harness(f"hf/{folder}", hf_args, "hf")
        print(f"  harness eval, hf/          : {k_hf / t_hf:7.1f} tokens/s ({t_hf:.1f} s)")


if __name__ == "__main__":
    main()
