"""`-T executor=ray`: the training suites on a local Ray cluster, started once for this module.

The cluster is started by the harness itself (`ray.init()` without `RAY_ADDRESS`), the way a user
without a cluster gets one. Its worker processes keep the environment they were started with,
so `HARNESS_CACHE_DIR` is fixed for them before the first run (see the team test, which then
gives this process a different cache, as a driver on another node would have).
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import ipaddress
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from inspect_ai.log import read_eval_log

from harness.cli import main
from harness.errors import HarnessUsageError
from harness.eval import EvalRequest, run
from harness.suites.training_pool import TrainingPool, training_pool

# not imported here: the harness imports Ray itself, after setting the switch that keeps a local
# cluster on loopback (and tests/suites/test_ray_executor.py checks that it does)
if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is the optional extra harness[ray]", allow_module_level=True)


@pytest.fixture(scope="module")
def worker_cache(tmp_path_factory):
    """The cache the Ray workers see; the cluster starts with it and stops after the module."""
    from harness.suites.ray_runs import connect

    cache = tmp_path_factory.mktemp("ray-worker-cache")
    before = os.environ.get("HARNESS_CACHE_DIR")
    os.environ["HARNESS_CACHE_DIR"] = str(cache)
    os.environ.pop("RAY_ADDRESS", None)
    try:
        connect()
        yield cache
    finally:
        import ray

        ray.shutdown()
        if before is None:
            os.environ.pop("HARNESS_CACHE_DIR", None)
        else:
            os.environ["HARNESS_CACHE_DIR"] = before


def _eval(suite: str, log_dir: Path, **task_args) -> tuple[dict, list]:
    request = EvalRequest(
        suite=suite, models=(), task_args=task_args, log_dir=str(log_dir), display="none"
    )
    ok, rows, _ = run(request)
    assert ok and rows and all(r.errors == 0 for r in rows), rows
    log = read_eval_log(rows[0].log)
    return log.eval.metadata, log.samples


def _placements(samples) -> list[dict]:
    return [e.data for s in samples for e in s.events if e.event == "info"
            and e.source == "training"]  # fmt: skip


def test_k_parity_on_ray_gives_the_runs_of_two_local_workers(worker_cache, tmp_path):
    # two local workers train with cpu_count // 2 torch threads each; the Ray runs declare as
    # many CPUs, so they train with the same thread count, and a run is deterministic for its
    # seed and thread count on one machine
    threads = max(1, (os.cpu_count() or 1) // 2)
    args = {"arms": "ar,md-optimal", "seeds": 2, "max_steps": 60}
    meta_ray, on_ray = _eval("k-parity", tmp_path / "ray", executor="ray",
                             cpus_per_run=threads, **args)  # fmt: skip
    meta_local, local = _eval("k-parity", tmp_path / "local", workers=2, **args)
    assert meta_ray["training"]["executor"] == "ray" and meta_local["training"]["workers"] == 2
    where = _placements(on_ray)
    assert len(where) == 4 and {w["executor"] for w in where} == {"ray"}
    assert all(w["pid"] != os.getpid() and w["cpus"] == threads for w in where)

    def runs(samples):
        return {s.id: {k: v for k, v in s.metadata["run"].items() if k != "seconds"}
                for s in samples}  # fmt: skip

    assert runs(on_ray) == runs(local)  # every curve and accuracy, exactly


def test_team_ships_its_checkpoint_to_a_driver_with_another_cache(
    worker_cache, tmp_path, monkeypatch
):
    driver_cache = tmp_path / "driver-cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(driver_cache))
    meta, samples = _eval("team", tmp_path / "logs", executor="ray", preset="tiny", steps=10,
                          n_test=2, variants="vanilla")  # fmt: skip
    assert meta["training"]["executor"] == "ray" and len(samples) == 2
    on_worker = sorted(p.name for p in (worker_cache / "team").glob("*.pt"))
    on_driver = sorted(p.name for p in (driver_cache / "team").glob("*.pt"))
    assert on_worker and on_driver == on_worker
    assert not list((driver_cache / "team").glob("*.tmp"))


@pytest.mark.parametrize(
    ("suite", "args"),
    [
        ("l2a-recall", {"preset": "tiny", "steps": 5, "seeds": 1, "variants": "full"}),
        ("lokra", {"steps": 5, "seeds": 1, "lams": "1e-2"}),  # its fit and transfer tasks
    ],
)
def test_the_other_training_suites_take_executor_ray(worker_cache, tmp_path, suite, args):
    meta, samples = _eval(suite, tmp_path / "logs", executor="ray", **args)
    assert meta["training"] == {"executor": "ray", "cpus_per_run": 1, "gpus_per_run": 0.0,
                                "max_retries": 3}  # fmt: skip
    assert len(_placements(samples)) == len(samples) > 0


def _die_on_first_attempt(marker: str) -> int:
    """Kills its own worker process the first time; the second attempt returns."""
    path = Path(marker)
    attempts = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(attempts))
    if attempts == 1:
        os._exit(1)
    return attempts


def test_a_run_whose_worker_dies_is_run_again(worker_cache, tmp_path):
    from harness.suites.ray_runs import run_on_ray

    def run(pool: TrainingPool):
        return asyncio.run(run_on_ray(pool, _die_on_first_attempt, (str(marker),)))

    marker = tmp_path / "attempts"
    result, where = run(TrainingPool("ray"))
    assert result == 2 and marker.read_text() == "2"
    assert where["executor"] == "ray"

    marker.unlink()
    with pytest.raises(Exception, match="(?i)worker|died|crash|exit"):
        run(TrainingPool("ray", retries=0))
    assert marker.read_text() == "1"  # tried once, not again


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return (mapped or address).is_loopback


def test_the_local_cluster_listens_on_loopback_only(worker_cache):
    import psutil

    ours = psutil.Process().children(recursive=True)
    listening = []
    for proc in ours:
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        listening += [(proc.name(), c.laddr.ip) for c in conns if c.status == psutil.CONN_LISTEN]
    assert listening, "no Ray process found listening: the check would prove nothing"
    assert all(_loopback(ip) for _, ip in listening), listening


def test_bad_executor_arguments_are_usage_errors():
    with pytest.raises(HarnessUsageError, match="unknown executor 'spark'.*local, ray"):
        training_pool("k-parity", "spark")
    with pytest.raises(HarnessUsageError, match="workers is for executor=local"):
        training_pool("k-parity", "ray", workers=2)
    with pytest.raises(HarnessUsageError, match="cpus_per_run must be at least 1"):
        training_pool("k-parity", "ray", cpus_per_run=0)


def test_a_run_no_node_can_hold_is_refused_not_left_waiting(worker_cache):
    # Ray would keep an infeasible task pending for ever
    with pytest.raises(HarnessUsageError, match="cpus_per_run=4096, but the largest node"):
        training_pool("k-parity", "ray", cpus_per_run=4096)
    with pytest.raises(HarnessUsageError, match="declares 4096 GPUs, but the largest node"):
        training_pool("k-parity", "ray", gpus=4096)


def test_without_ray_the_error_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    args = ["eval", "--suite", "k-parity", "-T", "executor=ray", "--log-dir", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    message = result.output.strip()
    assert "pip install 'harness[ray]'" in message and len(message.splitlines()) == 1, message
    assert not list(tmp_path.glob("*.eval"))  # refused before anything ran


class _NoDescriptor(io.StringIO):
    """A stream as inspect's full-screen display leaves sys.stderr: no file descriptor."""

    def fileno(self) -> int:
        return -1


def test_ray_init_gets_the_real_streams_and_its_failure_is_one_line(worker_cache, monkeypatch):
    # under inspect's full-screen display `ray.init` failed every sample: it enables
    # faulthandler on sys.stderr, whose fileno() is not a descriptor there (found in a terminal)
    import ray

    from harness.suites import ray_runs

    seen = []

    def init(**kwargs):
        seen.append((sys.stdout, sys.stderr))
        raise ConnectionError("Could not find any running Ray instance.\nsecond line")

    monkeypatch.setattr(sys, "stdout", _NoDescriptor())
    monkeypatch.setattr(sys, "stderr", _NoDescriptor())
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    with pytest.raises(HarnessUsageError) as ex:
        ray_runs.connect()
    assert seen == [(sys.__stdout__, sys.__stderr__)]
    assert str(ex.value) == (
        "executor=ray: cannot start or reach RAY_ADDRESS=10.0.0.9:6379: "
        "Could not find any running Ray instance."
    )


def test_an_unreachable_ray_address_is_refused_at_once(worker_cache, monkeypatch):
    # Ray itself retries an unreachable head for ever; the harness checks the port first
    import socket

    import ray

    from harness.suites import ray_runs

    with socket.socket() as sock:  # a loopback port that nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: pytest.fail("ray.init was reached"))
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(HarnessUsageError, match=f"cannot reach RAY_ADDRESS=127.0.0.1:{port}: "):
        ray_runs.connect()
