"""k-parity on a local Ray cluster against two local worker processes: the same runs, and the time.

Runs `harness eval --suite k-parity -T preset=quick -T seeds=2` twice, each as its own process
so that each wall time includes its start-up (spawning the pool; starting the Ray cluster and
its workers):
- local: `-T workers=2`, each process training with cpu_count // 2 torch threads;
- ray: `-T executor=ray -T cpus_per_run=cpu_count // 2`, a local cluster started by the harness.

Every run's results (final and best accuracies, steps to generalise, the train and test curves)
must be equal; only the run's own `seconds` may differ. Prints one row per run, the wall times
and their ratio ray/local, and exits 1 if any run differs.

Usage: python benchmarks/ray_executor.py [--seeds 2] [--arms ...] [--max-steps N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def harness_eval(log_dir: Path, task_args: dict[str, Any]) -> float:
    """Wall seconds of one `harness eval` process."""
    cmd = [sys.executable, "-m", "harness.cli", "eval", "--suite", "k-parity",
           "--log-dir", str(log_dir), "--display", "none"]  # fmt: skip
    for key, value in task_args.items():
        cmd += ["-T", f"{key}={value}"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def runs(log_dir: Path) -> dict[str, dict[str, Any]]:
    """Each sample's run results, less its own seconds."""
    from inspect_ai.log import read_eval_log

    [path] = sorted(log_dir.glob("*.eval"))
    log = read_eval_log(str(path))
    return {s.id: {k: v for k, v in s.metadata["run"].items() if k != "seconds"}
            for s in log.samples or []}  # fmt: skip


def compare(seeds: int = 2, arms: str | None = None, max_steps: int | None = None) -> dict:
    """Run both sides; the per-run table, the wall times, and whether every run is equal."""
    threads = max(1, (os.cpu_count() or 1) // 2)
    common: dict[str, Any] = {"preset": "quick", "seeds": seeds}
    if arms:
        common["arms"] = arms
    if max_steps:
        common["max_steps"] = max_steps
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        local_s = harness_eval(work / "local", {**common, "workers": 2})
        ray_s = harness_eval(work / "ray", {**common, "executor": "ray", "cpus_per_run": threads})
        local, on_ray = runs(work / "local"), runs(work / "ray")
    rows = [(run_id, local[run_id]["final_test_acc"], on_ray.get(run_id, {}).get("final_test_acc"),
             local[run_id] == on_ray.get(run_id)) for run_id in sorted(local)]  # fmt: skip
    return {"rows": rows, "local_s": local_s, "ray_s": ray_s, "threads": threads,
            "same": local.keys() == on_ray.keys() and all(r[3] for r in rows)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--arms", default=None, help="default: the quick preset's five")
    parser.add_argument("--max-steps", type=int, default=None)
    args = parser.parse_args()
    result = compare(args.seeds, args.arms, args.max_steps)
    print(f"{'run':<26} {'local acc':>10} {'ray acc':>10}  equal")
    for run_id, acc_local, acc_ray, same in result["rows"]:
        print(f"{run_id:<26} {acc_local:>10.4f} {acc_ray or float('nan'):>10.4f}  {same}")
    print(f"torch threads per run: {result['threads']}")
    print(f"wall: local workers=2 {result['local_s']:.1f} s, ray {result['ray_s']:.1f} s, "
          f"ratio ray/local {result['ray_s'] / result['local_s']:.2f}")  # fmt: skip
    print("every run equal" if result["same"] else "RUNS DIFFER")
    sys.exit(0 if result["same"] else 1)


if __name__ == "__main__":
    main()
