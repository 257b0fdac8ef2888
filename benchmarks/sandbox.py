"""The bwrap sandbox's overhead: start-up, and the cost per command against the same on the host.

In one process, interleaved: `true`, `echo hi` and `python3 -c pass` (the same binaries under
/usr) run REPS times each three ways: as a plain asyncio subprocess on the host; through
`BwrapSandboxEnvironment.exec` without the limits of issues 20 and 31 (`BwrapConfig(
seccomp=False, cgroup=False, filesystem_limit=False, cpus=None)`: a fresh bwrap with its
namespaces and prlimit, the work quota walked after each command); and with all of them (the
seccomp filter from a memfd; the command joining the sample's cgroup with its memory, process
and CPU limits, then `setpriv`; the work folder a loop-mounted image of its own size, checked
with one `statvfs` after each command), where the host has them. Prints the medians, each
sandbox's overhead per command (sandbox − host), the ratio with/without, and the time of
`sample_init` plus `sample_cleanup` (with the image: mkfs.ext4, mount, umount).
Target (issues 8, 20 and 31): under 50 ms of overhead per command, every limit included.

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


async def _sandbox(config: BwrapConfig) -> tuple[dict, BwrapSandboxEnvironment]:
    envs = await BwrapSandboxEnvironment.sample_init("bench", config, {})
    return envs, next(iter(envs.values())).as_type(BwrapSandboxEnvironment)


async def _timed(env: BwrapSandboxEnvironment, name: str, cmd: list[str]) -> float:
    t0 = time.perf_counter()
    result = await env.exec(cmd)
    if not result.success:
        raise SystemExit(f"{name} failed in the sandbox: {result.stderr.strip()}")
    return (time.perf_counter() - t0) * 1e3


async def main(reps: int) -> None:
    """Time start-up and each command: on the host, sandboxed before, and sandboxed now."""
    if (why := bwrap_available()) is not None:
        raise SystemExit(f"sandbox benchmark: {why}")
    before_config = BwrapConfig(seccomp=False, cgroup=False, filesystem_limit=False, cpus=None)
    now_config = BwrapConfig()
    starts: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(5):
        for label, config in (("before", before_config), ("now", now_config)):
            t0 = time.perf_counter()
            envs, _ = await _sandbox(config)
            await BwrapSandboxEnvironment.sample_cleanup("bench", config, envs, False)
            starts[label].append((time.perf_counter() - t0) * 1e3)
    before_envs, before = await _sandbox(before_config)
    now_envs, now = await _sandbox(now_config)
    try:
        work = "a loop-mounted image" if now.image else "walked after each command"
        group = now.cgroup.version if now.cgroup else "none here"
        quota = now.cgroup.cpus if now.cgroup else None
        print(f"cgroup for the sample: {group}, cpu quota {quota}, work folder {work}")
        print("sample start-up (init + cleanup), median of 5: "
              f"without the limits {statistics.median(starts['before']):.1f} ms, "
              f"with them {statistics.median(starts['now']):.1f} ms")  # fmt: skip
        print(f"{'command':<9} {'host ms':>8} {'without ms':>10} {'with ms':>7} "
              f"{'overhead without':>16} {'overhead with':>13} {'with/without':>11}")  # fmt: skip
        worst = 0.0
        for name, cmd in COMMANDS.items():
            host, old, new = [], [], []
            for _ in range(reps):  # interleaved, so drifts in machine load hit all alike
                t0 = time.perf_counter()
                await _host(cmd)
                host.append((time.perf_counter() - t0) * 1e3)
                old.append(await _timed(before, name, cmd))
                new.append(await _timed(now, name, cmd))
            h, b, n = statistics.median(host), statistics.median(old), statistics.median(new)
            worst = max(worst, n - h)
            print(f"{name:<9} {h:8.1f} {b:10.1f} {n:7.1f} {b - h:+16.1f} {n - h:+13.1f} "
                  f"{n / b:10.2f}x")  # fmt: skip
        verdict = "met" if worst < 50 else "NOT met"
        print(f"largest overhead per command with every limit {worst:.1f} ms: "
              f"target < 50 ms {verdict}")  # fmt: skip
    finally:
        await BwrapSandboxEnvironment.sample_cleanup("bench", before_config, before_envs, False)
        await BwrapSandboxEnvironment.sample_cleanup("bench", now_config, now_envs, False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    asyncio.run(main(parser.parse_args().reps))
