"""Overhead of the method wrappers (`pdr/`, `sr/`) apart from the inner model's own time.

Two measurements per wrapper, in one process, with a zero-latency inner model:

1. `own ms`: the wrapper's `generate` with its inner-call function replaced by one that returns
   at once, so no inner model and none of inspect's per-call machinery runs. This is everything
   the wrapper itself does per wrapped call: prompts, concurrency, spans, distill and
   workspaces, budgets, metadata. Target: under 5 ms.
2. `e2e ms`: the wrapped model's `Model.generate` through inspect, with `scripted/` (no work) as
   the inner model, against the baseline of the same inner call made alone (`t_inner`). The
   ratio e2e / (n * t_inner) shows what a wrapped call costs against its n inner calls made one
   after another; it includes inspect's own cost of running them concurrently and of the outer
   call.

Usage: python benchmarks/methods.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from harness.models.methods.refine_loop import CallOutput

PROMPT = "What is 12+34? Answer with the final answer in \\boxed{}."
WRAPPERS = (
    ("pdr/scripted/bench", {"rounds": "8,4,1", "distill": "global"}),
    ("pdr/scripted/bench", {"rounds": "8,4,1", "distill": "shared_topk", "topk_score": "self"}),
    ("pdr/scripted/bench", {"rounds": "8,4,1", "distill": "per_sample_topk", "topk_score": "vote"}),
    ("pdr/scripted/bench", {"rounds": "8,4,1", "distill": "random_k"}),
    ("sr/scripted/bench", {"rounds": 4}),
)


async def median_seconds(fn, calls: int) -> float:
    """Median seconds per `await fn()`, over `calls` sequential calls after a warm-up."""
    for _ in range(5):
        await fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def instant_call(messages, config) -> CallOutput:
    """An inner call that costs nothing: a fixed boxed answer, one token in and out per word."""
    return CallOutput("Draft reasoning. \\boxed{46}", len(messages[-1].text.split()), 3)


async def main(calls: int) -> None:
    config = GenerateConfig(max_tokens=64)
    inner = get_model("scripted/bench", answer="Draft reasoning. \\boxed{46}")
    t_inner = await median_seconds(lambda: inner.generate(PROMPT, config=config), calls * 4)
    print(
        f"baseline: one inner call through inspect (scripted/, zero latency) {t_inner * 1e3:.3f} ms"
    )
    print(f"{'wrapper':<70} {'n':>3} {'own ms':>7} {'e2e ms':>7} {'e2e/(n*inner)':>13}")
    worst = 0.0
    messages = [ChatMessageUser(content=PROMPT)]
    for spec, args in WRAPPERS:
        model = get_model(spec, inner_answer="Draft reasoning. \\boxed{46}", **args)
        out = await model.generate(PROMPT, config=config)
        n = out.metadata["harness_method"]["budget"]["calls"]
        e2e = await median_seconds(lambda m=model: m.generate(PROMPT, config=config), calls)
        api = model.api
        api._call = instant_call  # the wrapper alone: no inner model, no inspect call path
        own = await median_seconds(lambda a=api: a.generate(messages, [], "auto", config), calls)
        worst = max(worst, own)
        label = spec + " " + ",".join(f"{k}={v}" for k, v in args.items())
        print(
            f"{label:<70} {n:>3} {own * 1e3:>7.2f} {e2e * 1e3:>7.2f} {e2e / (n * t_inner):>13.2f}"
        )
    verdict = "meets" if worst < 5e-3 else "MISSES"
    print(
        f"worst wrapper overhead: {worst * 1e3:.2f} ms per wrapped call ({verdict} the 5 ms target)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="timed wrapped calls per wrapper")
    asyncio.run(main(parser.parse_args().calls))
