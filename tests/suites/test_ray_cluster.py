"""The README's multi-node sweep, on one machine: `ray start --head`, a second node joins, then
`harness eval ... -T executor=ray` with `RAY_ADDRESS` naming the head.

Two Ray nodes on one host would listen on its external address, so the whole sweep runs in a
private network namespace that has only loopback, and a private PID namespace, so that `ray stop`
and the namespace's end stop only this cluster's processes, not a user's own Ray. Marked long
(`make test-long`): 41 s on 2 idle cores, 165 s on loaded ones (two nodes start, then
k-parity's `ar` arm trains 2 seeds), which the default run's 15 minutes cannot spare.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from inspect_ai.log import read_eval_log

pytestmark = pytest.mark.long
if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is the optional extra harness[ray]", allow_module_level=True)

SWEEP = """\
set -eu
ip link set lo up 2>/dev/null || true
bin="$(dirname "$PYTHON")"
trap '"$bin/ray" stop --force > /dev/null 2>&1 || true' EXIT
"$bin/ray" start --head --port=6390 --num-cpus=1 --include-dashboard=false \\
    --disable-usage-stats > "$HOME/head.log" 2>&1
"$bin/ray" start --address=127.0.0.1:6390 --num-cpus=1 --disable-usage-stats \\
    > "$HOME/node.log" 2>&1
RAY_ADDRESS=127.0.0.1:6390 "$PYTHON" -m harness.cli eval --suite k-parity \\
    -T executor=ray -T arms=ar -T seeds=2 -T max_steps={steps} \\
    --log-dir "{log_dir}" --display none
"""


def _namespace() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is missing")
    flags = ["--net", "--pid", "--fork", "--mount-proc"]
    if os.geteuid() != 0:
        flags.insert(0, "--map-root-user")
    probe = subprocess.run([unshare, *flags, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private network namespace here: {probe.stderr.decode().strip()}")
    return [unshare, *flags]


def test_a_sweep_on_a_two_node_cluster_named_by_ray_address(tmp_path):
    home = tmp_path / "home"  # Ray keeps its auth token and session files under it
    home.mkdir()
    script = SWEEP.format(steps=40, log_dir=tmp_path / "logs")
    env = {**os.environ, "HOME": str(home), "PYTHON": sys.executable}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([*_namespace(), "bash", "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    logs = "\n".join(p.read_text()[-2000:] for p in home.glob("*.log"))
    assert done.returncode == 0, textwrap.shorten(done.stderr + logs, 4000)

    [path] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == 2
    where = [e.data for s in log.samples for e in s.events
             if e.event == "info" and e.source == "training"]  # fmt: skip
    assert [w["executor"] for w in where] == ["ray", "ray"]
    # each node has one CPU and each run declares one, so the two seeds ran on both nodes
    assert len({w["node"] for w in where}) == 2, where
