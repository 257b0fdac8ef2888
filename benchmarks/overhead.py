"""What `harness eval` costs over a bare `inspect eval` of the same task, in one process.

Both run the `arith` suite's task with 300 samples on `scripted/` (an instant model, so the
time is the engine's own): once through `harness eval` (`harness.eval.run`: `eval_set`,
the model checks, the summary read back from the log) and once through inspect's `eval()` as
`inspect eval harness/arith --model scripted/bench -T n=300` runs it. Each side runs `--repeats`
times, alternating, each in a fresh log folder, after one untimed warm-up of each. The result
is the median wall time of each and their ratio harness/inspect. Target: <= 1.1.

Usage: python benchmarks/overhead.py [--n 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

CONNECTIONS = 32  # scripted/'s default; both sides run this many samples at once


def run_harness(n: int, log_dir: Path) -> None:
    from harness.eval import EvalRequest, run

    request = EvalRequest(
        suite="arith",
        models=("scripted/bench",),
        task_args={"n": n},
        model_args={"answer": "0"},
        log_dir=str(log_dir),
        display="none",
    )
    ok, rows, _ = run(request)
    assert ok and rows[0].n == n, rows


def run_inspect(n: int, log_dir: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from harness.suites.arith.task import arith

    model = get_model("scripted/bench", answer="0")
    [log] = inspect_eval(
        arith(n=n), model=model, log_dir=str(log_dir), display="none", score_on_error=True
    )
    assert log.status == "success" and len(log.samples or []) == n, log.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="samples")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for var in ("INSPECT_LOG_DIR", "INSPECT_CACHE_DIR"):
            os.environ[var] = str(work / var.lower())
        sides = {"harness": run_harness, "inspect": run_inspect}
        times: dict[str, list[float]] = {name: [] for name in sides}
        for name, run in sides.items():  # warm-up: imports, registry, first log write
            run(args.n, work / f"warm-{name}")
        for rep in range(args.repeats):
            for name, run in sides.items():
                start = time.perf_counter()
                run(args.n, work / f"{name}-{rep}")
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"samples: {args.n}, scripted/ model, {args.repeats} timed runs of each side")
    for name, t in times.items():
        print(f"{name:8s} median {med[name]:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in t)}")
    print(f"harness/inspect wall-time ratio: {med['harness'] / med['inspect']:.2f} (target <= 1.1)")


if __name__ == "__main__":
    main()
