"""Training runs as Ray tasks (`-T executor=ray`): a local cluster, or the one `RAY_ADDRESS` names.

Each run is one task with the CPUs and GPUs its suite declares, and `max_retries` re-runs for a
worker process or node that dies (an exception raised by the run itself is not retried: a
training error is a result, not a fault). The run trains with as many torch threads as it
declares CPUs.

Without `RAY_ADDRESS` (and without a running cluster found by Ray), `ray.init()` starts a local
cluster for this process and stops it at exit. That cluster binds to loopback only: Ray binds
to the node's external address by default, so the harness sets Ray's own switch
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, which makes Ray use 127.0.0.1 as the node address)
before Ray is imported. A real cluster's addresses are its administrator's.

Progress: the task display shows a "Ray runs" counter (finished/submitted, and failed), and each
run's node, worker and seconds are in the sample's transcript.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from harness.errors import HarnessUsageError

if TYPE_CHECKING:
    from harness.suites.training_pool import TrainingPool

T = TypeVar("T")

log = logging.getLogger(__name__)


def _not_the_token_notice(record: logging.LogRecord) -> bool:
    """Drop Ray's notice that token authentication is on, the safe default.

    It is one line too many before a one-line error; the warning when it is off still shows.
    """
    return not str(record.msg).startswith("Token authentication is enabled for this Ray cluster")


logging.getLogger("ray._private.authentication.authentication_token_setup").addFilter(
    _not_the_token_notice
)
MISSING = "executor=ray needs Ray, an optional extra: pip install 'harness[ray]'"

_lock = threading.Lock()
_counts = {"submitted": 0, "finished": 0, "failed": 0}
_remote: dict[tuple[int, float, int], Any] = {}


def require_ray() -> Any:
    """The `ray` module, else a one-line usage error naming the extra."""
    local = not os.environ.get("RAY_ADDRESS")
    imported = "ray" in sys.modules
    if local:
        # before the first import: Ray reads it once, and its local cluster then binds 127.0.0.1
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise HarnessUsageError(MISSING) from None
    if local and imported:  # imported before us (a notebook): the same switch, read too late
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


def connect() -> Any:
    """Ray, initialised once per process: `RAY_ADDRESS`'s cluster, else a local one.

    Called when a task that trains on Ray is made, before inspect's display starts: `ray.init`
    blocks for seconds, and it enables `faulthandler` on `sys.stderr`, which fails under
    inspect's full-screen display (its stderr has no file descriptor), so the real streams are
    put back around it in any case. A cluster that cannot be reached is a usage error.
    """
    ray = require_ray()
    address = os.environ.get("RAY_ADDRESS") or None
    with _lock:
        if not ray.is_initialized():
            if address:
                _check_reachable(address)
            streams = (sys.__stdout__ or sys.stdout, sys.__stderr__ or sys.stderr)
            try:
                with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
                    ray.init(
                        address=address,
                        include_dashboard=False,
                        configure_logging=False,
                        log_to_driver=False,
                    )
            except Exception as ex:  # Ray raises a bare Exception when its node times out
                where = f"RAY_ADDRESS={address}" if address else "a local cluster"
                first = str(ex).strip().splitlines()[0] if str(ex).strip() else type(ex).__name__
                raise HarnessUsageError(
                    f"executor=ray: cannot start or reach {where}: {first}"
                ) from None
            atexit.register(ray.shutdown)
            node = ray.util.get_node_ip_address()
            if not os.environ.get("RAY_ADDRESS") and node not in ("127.0.0.1", "::1"):
                log.warning("the local Ray cluster listens on %s, not loopback only", node)
    return ray


def check_fits(suite: str, cpus: int, gpus: float) -> None:
    """A usage error unless some live node has the CPUs and GPUs one run declares.

    Ray keeps a task that no node can hold waiting for ever (an autoscaler might add one); the
    harness does not drive an autoscaler, so it refuses the run instead.
    """
    ray = connect()
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    most_cpus = max((r.get("CPU", 0.0) for r in nodes), default=0.0)
    most_gpus = max((r.get("GPU", 0.0) for r in nodes), default=0.0)
    if cpus > most_cpus:
        raise HarnessUsageError(
            f"{suite}: cpus_per_run={cpus}, but the largest node of the Ray cluster has "
            f"{most_cpus:g} CPUs; give at most that"
        )
    if gpus > most_gpus:
        raise HarnessUsageError(
            f"{suite}: a run declares {gpus:g} GPUs, but the largest node of the Ray cluster "
            f"has {most_gpus:g}"
        )


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """A usage error unless `host:port` accepts a connection.

    Ray itself retries an unreachable head for ever (measured: a warning every 5 s, for minutes).
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or address.startswith(("ray://", "auto")):
        return  # "auto", a Ray client address or another form: Ray's to judge
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as ex:
        raise HarnessUsageError(
            f"executor=ray: cannot reach RAY_ADDRESS={address}: {ex.strerror or ex}; start the "
            f"head with `ray start --head`, or unset RAY_ADDRESS for a local cluster"
        ) from None


def ray_entry(fn: Callable[..., T], threads: int, args: tuple[Any, ...]) -> tuple[T, dict]:
    """Runs in the Ray worker: fix torch's threads, train, and say where it ran."""
    import ray
    import torch

    torch.set_num_threads(threads)
    start = time.perf_counter()
    result = fn(*args)
    context = ray.get_runtime_context()
    return result, {
        "node": context.get_node_id()[:12],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "train_seconds": round(time.perf_counter() - start, 3),
    }


def _remote_entry(ray: Any, pool: TrainingPool) -> Any:
    key = (pool.cpus, pool.gpus, pool.retries)
    with _lock:
        if key not in _remote:
            _remote[key] = ray.remote(
                num_cpus=pool.cpus,
                num_gpus=pool.gpus,
                max_retries=pool.retries,
                retry_exceptions=False,
            )(ray_entry)
        return _remote[key]


def _show_progress() -> None:
    from inspect_ai.util import display_counter

    c = _counts
    failed = f", {c['failed']} failed" if c["failed"] else ""
    display_counter("Ray runs", f"{c['finished']}/{c['submitted']}{failed}")


async def run_on_ray(
    pool: TrainingPool, fn: Callable[..., T], args: tuple[Any, ...]
) -> tuple[T, dict[str, Any]]:
    """Submit `fn(*args)` as a Ray task and await it; cancelling the sample cancels the task."""
    import asyncio

    ray = connect()
    ref = _remote_entry(ray, pool).remote(fn, pool.cpus, args)
    _counts["submitted"] += 1
    _show_progress()
    try:
        result, where = await asyncio.wrap_future(ref.future())
    except asyncio.CancelledError:
        ray.cancel(ref, force=True)
        raise
    except Exception:
        _counts["failed"] += 1
        _show_progress()
        raise
    _counts["finished"] += 1
    _show_progress()
    return result, {"executor": "ray", "cpus": pool.cpus, "gpus": pool.gpus, **where}
