"""Peak memory of the log readers on hostile logs (issue 42, class 4), by `/usr/bin/time -v`.

One real scripted eval gives a good log; from it come zstd bombs (a member of a few KB that
inflates to GBs, its size declared honestly or not) and copies of them. Each command runs in a
child process under `/usr/bin/time -v`, and its maximum resident set size is printed beside
the 300 MB bound. Not a test: memory depends on the machine; run it by hand.

    HARNESS_DATA_DIR=../shared/data .venv/bin/python benchmarks/hostile_logs.py [--gb 3]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BOUND_MB = 300


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", *args]


def peak(command: list[str], cwd: Path) -> tuple[int, float, str]:
    """(exit code, peak RSS in MB, last line of stderr) of one command."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], cwd=cwd, capture_output=True,
                          text=True, check=False)  # fmt: skip
    kb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    lines = [line for line in done.stderr.splitlines() if line and not line.startswith("\t")]
    last = next((line for line in reversed(lines) if "exit status" not in line), "")
    return done.returncode, int(kb.group(1)) / 1024 if kb else float("nan"), last[:110]


def main() -> None:
    """Make the logs, run each command on each, print the table."""
    from tests import hostile_log_files as H

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=3.0, help="what a bomb inflates to")
    args = parser.parse_args()
    size = int(args.gb * (1 << 30))
    work = Path(tempfile.mkdtemp(prefix="hostile-logs-"))
    subprocess.run(_harness("eval", "--suite", "arith", "--model", "scripted/a", "-T", "n=5",
                            "--log-dir", str(work / "good"), "--display", "none"),
                   cwd=work, check=True, capture_output=True)  # fmt: skip
    good = next((work / "good").glob("*.eval"))
    cases: dict[str, Path] = {}
    for member, declared, name in [
        ("summaries.json", None, "summaries bomb"),
        ("summaries.json", 4000, "summaries bomb, size lied"),
        ("header.json", 4000, "header bomb, size lied"),
        ("samples/arith-1_epoch_1.json", 4000, "sample bomb, size lied"),
    ]:
        folder = work / name.replace(" ", "_").replace(",", "")
        folder.mkdir()
        shutil.copy(good, folder / "good.eval")
        cases[name] = H.bomb(good, folder / "bomb.eval", member, min(size, (4 << 30) - 1)
                             if declared else size, declared)  # fmt: skip
    four = work / "four_copies"
    four.mkdir()
    for i in range(4):
        shutil.copy(cases["summaries bomb, size lied"], four / f"bomb{i}.eval")
    print(f"bombs of {args.gb} GB; good log {good.stat().st_size} bytes; bound {BOUND_MB} MB")
    print(f"{'log':<28} {'KB':>5} {'command':<18} {'rc':>3} {'peak MB':>8}  last line")
    runs = []
    for name, log in [*cases.items(), ("4 copies of the lying bomb", four / "bomb0.eval")]:
        folder = log.parent
        commands = {
            "manifest": _harness("manifest", str(log)),
            "report": _harness("report", str(folder), "-o", str(work / "r.md"), "--force"),
            "leaderboard build": _harness("leaderboard", "build", str(folder), "-o",
                                          str(work / "site"), "--force", "--no-viewer"),
            "reproduce": _harness("reproduce", str(log), "--plan-only"),
        }  # fmt: skip
        for command, argv in commands.items():
            rc, mb, last = peak(argv, work)
            runs.append(mb)
            kb = log.stat().st_size // 1024
            print(f"{name:<28} {kb:>5} {command:<18} {rc:>3} {mb:>8.0f}  {last}")
    print(f"highest peak {max(runs):.0f} MB: {'within' if max(runs) < BOUND_MB else 'OVER'} "
          f"the {BOUND_MB} MB bound")  # fmt: skip


if __name__ == "__main__":
    main()
