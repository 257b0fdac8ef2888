"""Leaderboard build time over many logs (target: 50 logs of 1,000 samples in under 10 s).

Makes 50 real logs (5 tasks x 10 models, 1,000 samples each) from one template eval, then times
`build_site` with and without the bundled viewer, and prints the weight of the pages without
the viewer (target: under 500 KB). Log making is not timed.

Usage: python benchmarks/leaderboard.py [--tasks 5] [--models 10] [--samples 1000] [--keep DIR]
(--keep: make the logs in DIR once and reuse them on later runs; making them takes minutes)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from harness.leaderboard.build import build_site
    from harness.suites.catalog import catalog_design
    from tests.leaderboard.logs import template_log, write_variant

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--keep", default=None, help="folder to keep (and reuse) the logs in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        start = time.perf_counter()
        n_logs = args.tasks * args.models
        made = list((work / "logs").glob("*.eval")) if args.keep else []
        template = template_log(work, args.samples) if len(made) != n_logs else None
        for t in range(args.tasks if template else 0):
            for m in range(args.models):
                write_variant(
                    template,
                    work / "logs" / f"task{t}-model{m}.eval",
                    task=f"bench_task{t}",
                    model=f"provider/model-{m:02d}",
                    accuracy=0.4 + 0.05 * m,
                    seed=100 * t + m,
                    errored_samples=m % 3,
                )
        n_logs = args.tasks * args.models
        print(
            f"made {n_logs} logs of {args.samples} samples in {time.perf_counter() - start:.1f} s"
        )
        for viewer in (False, True):
            site = work / f"site-{viewer}"
            result = build_site([str(work / "logs")], catalog_design, str(site), viewer=viewer)
            label = "with viewer   " if viewer else "without viewer"
            print(f"build {label}: {result.seconds:5.2f} s ({result.summary()})")
            if not viewer:
                weight = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
                print(f"pages without the viewer: {weight / 1000:.0f} KB (target < 500 KB)")


if __name__ == "__main__":
    main()
