"""The bwrap sandbox's overhead: start-up, and the cost per command against the same on the host.

In one process, interleaved: `true`, `echo hi` and `python3 -c pass` (the same binaries under
/usr) run REPS times each through `BwrapSandboxEnvironment.exec` (a fresh bwrap with its
namespaces and prlimit per command) and as a plain asyncio subprocess on the host. Prints the
medians, the overhead per command (sandbox − host) and the ratio, and the time of `sample_init`
plus `sample_cleanup` (a sample's start-up).
Target (issue 8): under 50 ms of overhead per command.

Usage: python benchmarks/sandbox.py [--reps 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from harness.sandbox import BwrapConfig, BwrapSandboxEnvironment, bwrap_available

# absolute paths: the same binaries on the host and in the sandbox (PATH may differ)
COMMANDS = {
    "true": ["/usr/bin/true"],
    "echo": ["/usr/bin/echo", "hi"],
    "python3": ["/usr/bin/python3", "-c", "pass"],
}


async def _host(cmd: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await proc.communicate()


async def main(reps: int) -> None:
    """Time start-up and each command, sandboxed and on the host."""
    if (why := bwrap_available()) is not None:
        raise SystemExit(f"sandbox benchmark: {why}")
    config = BwrapConfig()
    starts = []
    for _ in range(5):
        t0 = time.perf_counter()
        envs = await BwrapSandboxEnvironment.sample_init("bench", config, {})
        await BwrapSandboxEnvironment.sample_cleanup("bench", config, envs, False)
        starts.append((time.perf_counter() - t0) * 1e3)
    envs = await BwrapSandboxEnvironment.sample_init("bench", config, {})
    env = next(iter(envs.values()))
    try:
        print(f"sample start-up (init + cleanup): {statistics.median(starts):.1f} ms median of 5")
        print(f"{'command':<9} {'host ms':>8} {'bwrap ms':>9} {'overhead':>9} {'ratio':>6}")
        worst = 0.0
        for name, cmd in COMMANDS.items():
            host, boxed = [], []
            for _ in range(reps):  # interleaved, so drifts in machine load hit both alike
                t0 = time.perf_counter()
                await _host(cmd)
                host.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                result = await env.exec(cmd)
                boxed.append((time.perf_counter() - t0) * 1e3)
                if not result.success:
                    raise SystemExit(f"{name} failed in the sandbox: {result.stderr.strip()}")
            h, b = statistics.median(host), statistics.median(boxed)
            worst = max(worst, b - h)
            print(f"{name:<9} {h:8.1f} {b:9.1f} {b - h:+9.1f} {b / h:5.1f}x")
        verdict = "met" if worst < 50 else "NOT met"
        print(f"largest overhead per command {worst:.1f} ms: target < 50 ms {verdict}")
    finally:
        await BwrapSandboxEnvironment.sample_cleanup("bench", config, envs, False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    asyncio.run(main(parser.parse_args().reps))
