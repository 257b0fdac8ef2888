"""Careless input, as a user types it: one line on stderr, exit 2, no traceback, the input named.

Each case runs the real command in a process of its own, forked by `tests.cli_forks` from one
that imported the CLI once. `{tmp}` and `{data}` in an argument are the
test's scratch folder (with the bad files made below) and the shipped data folder.
"""

import os
from pathlib import Path

import pytest

from tests.test_careless_input_two import run_forked

# (arguments, a word the one line must contain: it names the input or the fix)
# fmt: off
CASES: list[tuple[list[str], str]] = [
    # eval: suites, models, -T / -M
    (["eval", "--suite", "nope"], "nope"),
    (["eval"], "--suite"),
    (["eval", "--suite", "arith", "--bogus"], "--bogus"),
    (["eval", "--suite", "arith", "--model", "nope/x"], "nope"),
    (["eval", "--suite", "arith", "--model", "scripted"], "PROVIDER/NAME"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "n"], "-T"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "n=abc"], "n='abc'"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "difficulty=abc"], "difficulty"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "seed=abc"], "seed"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "limit=5"], "limit"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "ops=x"], "ops"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-M", "=3"], "-M"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-M", "delay=abc"], "delay"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-M", "bogus=1"], "bogus"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "--epochs", "0"], "--epochs"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "--limit", "0"], "--limit"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "--epochs", "x"], "--epochs"),
    (["eval", "--suite", "k-parity", "-T", "preset=nope"], "preset"),
    (["eval", "--suite", "k-parity", "-T", "workers=0"], "workers"),
    # eval: folders and files
    (["eval", "--suite", "arith", "--model", "scripted/x", "--log-dir", "{tmp}/afile"], "afile"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "--log-dir", "/proc/nope"], "nope"),
    (["eval", "--suite", "aime", "--model", "scripted/x", "--data-dir", "{tmp}/none"], "none"),
    (["eval", "--suite", "aime", "--model", "scripted/x", "--data-dir", "{tmp}/badbyte"], "row"),
    (["eval", "--suite", "aime", "--model", "scripted/x",
     "--data-dir", "{tmp}/badbyte", "-T", "skip_bad_rows=maybe"], "skip_bad_rows"),
    (["eval", "--suite", "aime", "--model", "scripted/x", "--data-dir", "{tmp}/empty"], "empty"),
    (["eval", "--suite", "aime", "--model",
     "replay/{tmp}/nomatch.jsonl", "--data-dir", "{data}"], "id"),
    (["eval", "--suite", "aime", "--model",
     "replay/{tmp}/empty.jsonl", "--data-dir", "{data}"], "empty"),
    (["eval", "--suite", "aime", "--model",
     "replay/{tmp}/dup.jsonl", "--data-dir", "{data}"], "again"),
    (["eval", "--suite", "aime", "--model",
     "replay/{tmp}/missing.jsonl", "--data-dir", "{data}"], "missing.jsonl"),
    (["eval", "--suite", "aime", "--model",
     "replay/{tmp}/notjson.jsonl", "--data-dir", "{data}"], "line 1"),
    # report
    (["report"], "LOG_DIRS"),
    (["report", "{tmp}/none"], "none"),
    (["report", "{tmp}/emptydir"], "no inspect logs"),
    (["report", "{tmp}/emptydir", "--format", "pdf"], "--format"),
    (["report", "{tmp}/emptydir", "-o", "/proc/x.md"], "/proc"),
    # leaderboard
    (["leaderboard", "build", "{tmp}/none", "-o", "{tmp}/site"], "none"),
    (["leaderboard", "build", "{tmp}/emptydir", "-o", "{tmp}/afile"], "afile"),
    (["leaderboard", "build", "{tmp}/emptydir", "-o", "/proc/x/y"], "/proc/x/y"),
    (["leaderboard", "build", "{tmp}/emptydir", "-o", "{tmp}/s2", "--alpha", "2"], "--alpha"),
    (["leaderboard", "serve", "{tmp}/emptydir"], "index.html"),
    (["leaderboard", "serve", "{tmp}/emptydir", "--port", "99999"], "--port"),
    (["leaderboard", "serve", "{tmp}/emptydir", "--port", "-1"], "--port"),
    (["leaderboard", "serve", "{tmp}/emptydir", "--port", "abc"], "--port"),
    (["leaderboard", "nope"], "nope"),
    # judge
    (["judge", "estimate", "--test", "{tmp}/none.jsonl",
     "--calibration", "{tmp}/none.jsonl"], "none.jsonl"),
    (["judge", "estimate", "--test", "{tmp}/emptydir",
     "--calibration", "{tmp}/emptydir"], "folder"),
    (["judge", "plan", "--p", "0", "--q0", "0.7", "--q1", "0.9", "--budget", "200"], "--p"),
    (["judge", "plan", "--p", "0.4", "--q0", "0.3", "--q1", "0.5", "--budget", "200"], "--q0"),
    (["judge", "plan", "--p", "2", "--q0", "0.7", "--q1", "0.9", "--budget", "200"], "--p"),
    (["judge", "plan", "--p", "0.4", "--q0", "0.7", "--q1", "0.9", "--budget", "1"], "--budget"),
    # sage
    (["sage", "score", "--data", "{tmp}/none.jsonl"], "none.jsonl"),
    (["sage", "score", "--data", "{tmp}/one_wrong.jsonl", "--k", "2"], "--references"),
    (["sage", "score", "--data", "{tmp}/one_wrong.jsonl", "--k", "0"], "k"),
    (["sage", "score", "--data", "{tmp}/no_annotation.jsonl"], "annotation"),
    (["sage", "score", "--data", "{tmp}/emptydir"], "emptydir"),
    # more that already worked: kept so they stay that way
    (["judge", "estimate", "--test", "{tmp}/judge2.jsonl",
     "--calibration", "{tmp}/judge2.jsonl"], "judge"),
    (["judge", "estimate", "--test", "{tmp}/judge2.jsonl"], "--calibration"),
    (["judge", "estimate", "--test", "{tmp}/t.jsonl", "--calibration",
     "{tmp}/t.jsonl", "--alpha", "1.5"], "--alpha"),
    (["suco", "msc", "{tmp}/nope.eval", "--calibrator", "local/x"], "nope.eval"),
    (["suco", "msc", "{tmp}/nope.eval"], "--calibrator"),
    (["report", "{tmp}/emptydir", "{tmp}/none"], "none"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "--display", "bogus"], "--display"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "ops=+-*"], "ops"),
    (["eval", "--suite", "arith", "--model", "scripted/x", "-T", "n=-3"], "n"),
    (["eval", "--suite", "aime", "--model", "scripted/x",
     "--data-dir", "{data}", "-T", "skip_bad_rows=maybe"], "skip_bad_rows"),
    (["eval", "--suite", "lokra", "-T", "lams=-1"], "lams"),
    (["eval", "--suite", "team", "-T", "preset=nope"], "preset"),
    (["suites", "extra"], "extra"),
    (["doctor", "extra"], "extra"),
    # other subcommands
    (["validate", "--suite", "arith"], "validator"),
    (["validate", "--suite", "nope"], "nope"),
    (["nope"], "nope"),
]
# fmt: on


def _files(tmp: Path, data: Path) -> None:
    (tmp / "afile").write_text("x")
    (tmp / "emptydir").mkdir()
    for name, content in (("badbyte", None), ("empty", b"")):
        folder = tmp / name / "aime"
        folder.mkdir(parents=True)
        for year in ("2024", "2025"):
            body = (data / "aime" / f"aime{year}.jsonl").read_bytes()
            (folder / f"aime{year}.jsonl").write_bytes(
                body + b'\xff{"x": 1}\n' if content is None else content
            )
    (tmp / "nomatch.jsonl").write_text('{"id": 60, "output": "1"}\n{"id": 61, "output": "2"}\n')
    (tmp / "empty.jsonl").write_text("")
    (tmp / "dup.jsonl").write_text('{"id": "2024-1", "output": "1"}\n' * 2)
    (tmp / "notjson.jsonl").write_text("{nope\n")
    (tmp / "no_annotation.jsonl").write_text('{"id": "a", "text": "x"}\n')
    (tmp / "judge2.jsonl").write_text('{"id": "a", "judge": 2}\n')
    (tmp / "t.jsonl").write_text('{"id": "a", "judge": 1, "human": 1}\n')
    (tmp / "one_wrong.jsonl").write_text(
        '{"id": "a", "text": "x", "annotation": "y", "label_correct": 0}\n'
    )


def test_every_careless_input_is_one_line_and_exit_2(tmp_path, data_dir):
    _files(tmp_path, Path(data_dir))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HARNESS_DATA_DIR": str(data_dir)}
    specs = []
    for i, (args, _) in enumerate(CASES):
        cwd = tmp_path / f"cwd{i}"  # each case its own folder: no case sees another's logs
        cwd.mkdir()
        filled = [a.replace("{tmp}", str(tmp_path)).replace("{data}", str(data_dir)) for a in args]
        specs.append({"args": filled, "cwd": str(cwd), "env": env, "timeout": 300})
    runner = tmp_path / "runner"
    runner.mkdir()
    results = run_forked(specs, runner)
    failures = []
    for (args, needle), proc in zip(CASES, results, strict=True):
        stderr = proc.get("stderr", "")
        lines = [line for line in stderr.splitlines() if line.strip()]
        problems = []
        if proc.get("timed_out"):
            problems.append("hung (killed)")
        if proc.get("rc") != 2:
            problems.append(f"exit {proc.get('rc')}")
        if "Traceback" in stderr:
            problems.append("traceback")
        if len(lines) != 1:
            problems.append(f"{len(lines)} stderr lines")
        elif not lines[0].startswith("harness: error: ") or needle not in lines[0]:
            problems.append(f"line {lines[0]!r} lacks {needle!r}")
        if problems:
            failures.append(f"{' '.join(args)}: {', '.join(problems)}: {stderr[-300:]!r}")
    assert not failures, f"{len(failures)} of {len(CASES)} cases:\n" + "\n".join(failures)


@pytest.mark.parametrize("flag", ["-T", "-M"])
def test_the_malformed_flag_hint_is_an_argument_the_suite_takes(flag):
    from harness.errors import HarnessUsageError
    from harness.kv_args import parse_kv

    with pytest.raises(HarnessUsageError) as ex:
        parse_kv(["n"], flag)
    assert "limit=5" not in str(ex.value)
