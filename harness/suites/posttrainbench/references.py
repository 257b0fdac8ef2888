"""The reference scores of the CPU instance: tiny-base and its instruct reference, per benchmark.

They set the weights (1 / (s_instruct - s_base)) and the score a flagged run gets (the
base's). Each is the pristine evaluator's result, cached under the harness cache folder by
the checkpoint's weight digest, the benchmark and the ladder; the first sample of an eval to
finish its agent computes them and the others wait for it.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.paths import cache_dir
from harness.suites.posttrainbench.anticheat import weights_digest
from harness.suites.posttrainbench.evaluator import Metrics, evaluate_checkpoint, metrics_from_dict
from harness.suites.posttrainbench.tiny import base_checkpoint, instruct_checkpoint

_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> its lock
_done: dict[tuple[str, tuple[int, ...]], References] = {}


@dataclass(frozen=True)
class References:
    """Checkpoints and reference metrics for one benchmark."""

    base: Path  # tiny-base
    instruct: Path  # the instruct reference (the forbidden checkpoint)
    base_metrics: Metrics  # the base on the test split
    instruct_metrics: Metrics  # the instruct reference on the test split


async def cached_metrics(checkpoint: Path, benchmark: str, ladder: tuple[int, ...]) -> Metrics:
    """The pristine evaluator's metrics for a checkpoint, from the cache when there."""
    digest = await asyncio.to_thread(weights_digest, checkpoint)
    rungs = "-".join(map(str, ladder))
    path = cache_dir() / "posttrainbench" / f"{str(digest)[:16]}-{benchmark}-{rungs}.json"
    if path.exists():
        return metrics_from_dict(json.loads(path.read_text()))
    metrics = await evaluate_checkpoint(checkpoint, benchmark, ladder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(metrics)))
    return metrics


def _the_lock() -> asyncio.Lock:
    """One lock per event loop: each inspect eval runs its own."""
    return _locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())


async def checkpoints() -> tuple[Path, Path]:
    """The base and instruct reference checkpoints, trained first if missing (one at a time)."""
    async with _the_lock():
        base = await asyncio.to_thread(base_checkpoint)
        return base, await asyncio.to_thread(instruct_checkpoint)


async def references(benchmark: str, ladder: tuple[int, ...]) -> References:
    """Base and instruct reference for `benchmark`, trained and evaluated once per process."""
    base, instruct = await checkpoints()
    async with _the_lock():
        key = (benchmark, ladder)
        if key not in _done:
            base_m = await cached_metrics(base, benchmark, ladder)
            instruct_m = await cached_metrics(instruct, benchmark, ladder)
            _done[key] = References(base, instruct, base_m, instruct_m)
        return _done[key]
