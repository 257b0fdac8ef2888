"""Careless input, round two (issue 32): every subcommand, as a new user would type it.

Each case runs the real command line in a process of its own (`tests.cli_forks` forks one per
case from a process that imported the CLI once) and must end with exit 2, one line on stderr
that starts `harness: error:` and names the input or the fix, and no traceback. The cases
marked `intact` must leave those files byte for byte as they were: a command never overwrites
or deletes a file it did not write.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARITH = ["eval", "--suite", "arith", "--model", "scripted/x", "--limit", "2"]


@dataclass(frozen=True)
class Case:
    """One command line and what its one line of error must contain."""

    args: list[str]  # `{tmp}`, `{log}`, `{data}` are filled in
    needle: str  # a word the error line must contain
    intact: tuple[str, ...] = ()  # files (under {tmp}) that must not change
    env: dict[str, str] = field(default_factory=dict)  # added to the environment
    drop_env: tuple[str, ...] = ()  # removed from the environment
    memory_limit: bool = True  # cap the address space (Ray's processes reserve more)


# fmt: off
CASES: list[Case] = [
    # files lost: -o never replaces what the harness did not write
    Case(["report", "{tmp}/logs", "-o", "{log2}"], "log", intact=("{log2}",)),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/user.md"], "user.md", intact=("user.md",)),
    Case(["report", "{tmp}/logs", "--format", "html", "-o", "{tmp}/user.md"], "--force",
         intact=("user.md",)),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/logs/notes.json"], "notes.json",
         intact=("logs/notes.json",)),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/plots/r.md"], "r.forest.png",
         intact=("plots/r.forest.png",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/userdir"], "--force",
         intact=("userdir/notes.txt",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/site"], "notes.txt",
         intact=("site/viewer/notes.txt",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/sitelink"], "viewer",
         intact=("victim/keep.txt",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/logs3"], "logs3",
         intact=("{log3}",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{log}"], "log", intact=("{log}",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/siteidx"], "index.html"),
    # output paths checked before the work
    Case(["report", "{tmp}/logs", "-o", "/dev/full"], "/dev/full"),
    Case(["report", "{tmp}/logs", "-o", "/proc/x"], "/proc/x"),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/emptydir"], "folder"),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/afile/r.md"], "afile"),
    Case(["report", "{tmp}/logs", "-o", "{tmp}/fifo.md"], "fifo.md"),
    Case(["report", "{tmp}/logs", "-o", ""], "-o"),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", ""], "-o"),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}/afile"], "afile"),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "/dev/full"], "/dev/full"),
    Case([*ARITH, "--log-dir", ""], "--log-dir"),
    Case([*ARITH, "--log-dir", "{log}"], "--log-dir"),
    Case(["eval", "--suite", "arith", "--model", "local/tiny-arith", "--limit", "1"],
         "HARNESS_CACHE_DIR", env={"HARNESS_CACHE_DIR": "{tmp}/afile"}),
    Case(["leaderboard", "serve", "{log}"], "index.html"),
    # unreadable logs: named with their reason, exit 2 (issue 31, item 15)
    Case(["report", "{tmp}/badonly"], "bad.eval"),
    Case(["leaderboard", "build", "{tmp}/badonly", "-o", "{tmp}/s3"], "bad.eval"),
    Case(["report", "{tmp}/deep"], "deep.json"),
    Case(["leaderboard", "build", "{tmp}/deep", "-o", "{tmp}/s4"], "deep.json"),
    # providers that cannot start: the missing key, package or connection
    Case(["eval", "--suite", "arith", "--model", "openai/gpt-4o-mini", "--limit", "1"],
         "OPENAI_API_KEY", drop_env=("OPENAI_API_KEY",)),
    Case(["eval", "--suite", "arith", "--model", "anthropic/claude-x", "--limit", "1"],
         "anthropic"),
    Case(["eval", "--suite", "arith", "--model", "openai-api/vllm/qwen", "--limit", "1"],
         "VLLM_API_KEY", drop_env=("VLLM_API_KEY",)),
    Case(["sage", "score", "--data", "{tmp}/one_wrong.jsonl", "--judge", "nope/x"], "nope"),
    # input files that are not UTF-8, or nest deeply
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/latin1.jsonl",
          "--data-dir", "{data}"], "UTF-8"),
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/deep.jsonl",
          "--data-dir", "{data}"], "deep"),
    Case(["judge", "estimate", "--test", "{tmp}/latin1.jsonl",
          "--calibration", "{tmp}/t.jsonl"], "UTF-8"),
    Case(["judge", "estimate", "--test", "{tmp}/t.jsonl",
          "--calibration", "{tmp}/latin1.jsonl"], "UTF-8"),
    Case(["judge", "estimate", "--test", "{tmp}/deep.jsonl",
          "--calibration", "{tmp}/t.jsonl"], "deep"),
    Case(["sage", "score", "--data", "{tmp}/latin1.jsonl"], "UTF-8"),
    Case(["sage", "score", "--data", "{tmp}/deep.jsonl"], "deep"),
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/notalog.json",
          "--data-dir", "{data}"], "notalog.json"),
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/deep.json",
          "--data-dir", "{data}"], "deep.json"),
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/badepoch.jsonl",
          "--data-dir", "{data}"], "epoch"),
    # values a provider or task cannot take
    Case([*ARITH, "-M", "fail_seeds=abc"], "fail_seeds"),
    Case([*ARITH, "-M", "connections=-1"], "connections"),
    Case([*ARITH, "-M", "connections=0"], "connections"),
    Case([*ARITH, "-M", "delay=Infinity"], "delay"),
    Case([*ARITH, "-M", "delay=NaN"], "delay"),
    Case([*ARITH, "-M", "delay=-1"], "delay"),
    Case([*ARITH, "-M", "trace=/proc/nope/t.txt"], "trace"),
    Case([*ARITH, "-T", "max_tokens=0"], "max_tokens"),
    Case([*ARITH, "-T", "max_tokens=-5"], "max_tokens"),
    Case([*ARITH, "-T", "n=1000000000"], "n=1000000000"),
    Case([*ARITH, "-T", "n=0"], "n=0"),
    Case([*ARITH, "--epochs", "100000000"], "--epochs"),
    Case([*ARITH, "--data-dir", "/nonexistent"], "/nonexistent"),
    Case([*ARITH, "--model", "scripted/x"], "scripted/x"),
    Case(["eval", "--suite", "mas-prove", "--model", "scripted/x", "-T", "temperature=-1"],
         "temperature"),
    Case(["eval", "--suite", "mas-prove", "--model", "scripted/x", "-T", "temperature=NaN"],
         "temperature"),
    Case(["eval", "--suite", "mas-prove", "--model", "scripted/x", "-T", "judge_max_tokens=-1"],
         "judge_max_tokens"),
    Case(["eval", "--suite", "l2a-recall", "-T", "lams=NaN"], "lams=NaN"),
    Case(["eval", "--suite", "l2a-queries", "-T", "n=0"], "n=0"),
    Case(["eval", "--suite", "k-parity", "-T", "seeds=-1"], "seeds"),
    Case([*ARITH, "-T", "seed=1e400"], "seed"),
    # a log file where a folder is asked for
    Case(["report", "{tmp}/afile"], "afile"),
    # FIFOs where a file is read: never opened in a way that blocks
    Case(["judge", "estimate", "--test", "{tmp}/fifo.jsonl",
          "--calibration", "{tmp}/t.jsonl"], "fifo.jsonl"),
    Case(["sage", "score", "--data", "{tmp}/fifo.jsonl"], "fifo.jsonl"),
    Case(["eval", "--suite", "aime", "--model", "scripted/x",
          "--data-dir", "{tmp}/fifodata"], "aime2024.jsonl"),
    Case(["eval", "--suite", "iwg", "--model", "scripted/x",
          "-T", "instances={tmp}/iwgfifo"], "x.json"),
    Case(["eval", "--suite", "iwg", "--model", "scripted/x",
          "-T", "instances={tmp}/iwgdeep"], "deep"),
    # more of our own: links, FIFOs and bombs where a command writes or reads
    Case(["report", "{tmp}/logs", "-o", "{tmp}/linkreport.md"], "--force",
         intact=("user.md",)),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "{tmp}"], "--force"),
    Case(["leaderboard", "build", "{tmp}/logs", "-o", "/"], "/"),
    Case(["report", "{tmp}/fifologs"], "x.eval"),
    Case(["report", "{tmp}/zipbomb"], "header.json"),
    Case([*ARITH, "-M", "outputs={tmp}/deep.jsonl"], "deep"),
    Case([*ARITH, "-M", "outputs={tmp}/fifo.jsonl"], "fifo.jsonl"),
    Case([*ARITH, "--log-dir", "{tmp}/fifo.md"], "--log-dir"),
    Case(["eval", "--suite", "aime", "--model", "replay/{tmp}/emptydir",
          "--data-dir", "{data}"], "emptydir"),
    # iwg's own commands
    Case(["iwg", "generate", "-o", ""], "-o"),
    Case(["iwg", "synthesize", "--seeds", "{tmp}/latin1.jsonl", "--scout", "scripted/x",
          "--wrapper", "scripted/x", "--committee", "scripted/x", "-o", "{tmp}/syn"], "UTF-8"),
    Case(["iwg", "synthesize", "--seeds", "{tmp}/deep.jsonl", "--scout", "scripted/x",
          "--wrapper", "scripted/x", "--committee", "scripted/x", "-o", "{tmp}/syn2"], "deep"),
    # values other suites take, checked by their names
    Case(["eval", "--suite", "posttrainbench", "-T", "budget_minutes=Infinity"],
         "budget_minutes"),
    Case(["eval", "--suite", "swe-rebench", "--model", "scripted/x", "-T", "timeout=0"],
         "timeout"),
    Case([*ARITH, "-T", "difficulty=99999"], "difficulty"),
]
# fmt: on

# Cases that import a large library (transformers) before they fail: `make test-long`
# fmt: off
LONG_CASES: list[Case] = [
    Case(["eval", "--suite", "arith", "--model", "hf/gpt2", "--limit", "1"], "gpt2"),
    # sentence-transformers' reason ran over three lines
    Case(["sage", "score", "--data", "{tmp}/three.jsonl", "--k", "1", "--embedder",
          "nope/model"], "nope/model"),
    # Ray's "token authentication is enabled" notice came before the one line
    Case(["eval", "--suite", "k-parity", "-T", "executor=ray", "-T", "cpus_per_run=64"],
         "cpus_per_run", memory_limit=False),
]
# fmt: on


def _write_files(tmp: Path, log: Path, site_from: Path) -> None:
    (tmp / "afile").write_text("x")
    (tmp / "emptydir").mkdir()
    (tmp / "user.md").write_text("my notes\n")
    (log.parent / "notes.json").write_text('{"mine": true}\n')
    (tmp / "plots").mkdir()
    (tmp / "plots" / "r.forest.png").write_bytes(b"my own plot")
    (tmp / "userdir").mkdir()
    (tmp / "userdir" / "notes.txt").write_text("mine\n")
    shutil.copytree(site_from, tmp / "site", symlinks=True)
    (tmp / "site" / "viewer").mkdir(exist_ok=True)
    (tmp / "site" / "viewer" / "notes.txt").write_text("mine\n")
    shutil.copytree(site_from, tmp / "sitelink", symlinks=True)
    shutil.rmtree(tmp / "sitelink" / "viewer", ignore_errors=True)
    (tmp / "victim").mkdir()
    (tmp / "victim" / "keep.txt").write_text("keep\n")
    (tmp / "sitelink" / "viewer").symlink_to(tmp / "victim")
    (tmp / "siteidx" / "index.html").mkdir(parents=True)
    os.mkfifo(tmp / "fifo.md")
    os.mkfifo(tmp / "fifo.jsonl")
    (tmp / "fifodata" / "aime").mkdir(parents=True)
    for year in ("2024", "2025"):
        os.mkfifo(tmp / "fifodata" / "aime" / f"aime{year}.jsonl")
    (tmp / "iwgfifo").mkdir()
    os.mkfifo(tmp / "iwgfifo" / "x.json")
    (tmp / "linkreport.md").symlink_to(tmp / "user.md")
    (tmp / "fifologs").mkdir()
    os.mkfifo(tmp / "fifologs" / "x.eval")
    (tmp / "zipbomb").mkdir()
    with zipfile.ZipFile(tmp / "zipbomb" / "bomb.eval", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", b"{" + b" " * (100 << 20) + b"}")  # 100 MB from ~100 KB
    (tmp / "iwgdeep").mkdir()
    (tmp / "iwgdeep" / "deep.json").write_text("[" * 100_000)
    (tmp / "badonly").mkdir()
    (tmp / "badonly" / "bad.eval").write_bytes(b"PK\x03\x04 not a zip at all")
    (tmp / "deep").mkdir()
    (tmp / "deep" / "deep.json").write_text("[" * 100_000)
    (tmp / "latin1.jsonl").write_bytes(b'{"id": "caf\xe9", "output": "1", "judge": 1}\n')
    (tmp / "deep.jsonl").write_text("[" * 100_000 + "\n")
    (tmp / "deep.json").write_text("[" * 100_000)
    (tmp / "notalog.json").write_text('{"hello": "world"}\n')
    (tmp / "badepoch.jsonl").write_text('{"id": "2024-1", "output": "1", "epoch": "abc"}\n')
    (tmp / "three.jsonl").write_text("".join(
        f'{{"id": "{c}", "text": "x {c}", "annotation": "{c}", "label_correct": 1}}\n'
        for c in "abc"
    ))  # fmt: skip
    (tmp / "t.jsonl").write_text('{"id": "a", "judge": 1, "human": 1}\n')
    (tmp / "one_wrong.jsonl").write_text(
        '{"id": "a", "text": "x", "annotation": "y", "label_correct": 0}\n'
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def run_forked(cases: list[dict], tmp: Path) -> list[dict]:
    """The results of `tests.cli_forks` on these cases."""
    spec, out = tmp / "cases.json", tmp / "results.json"
    spec.write_text(json.dumps(cases))
    subprocess.run(
        [sys.executable, "-m", "tests.cli_forks", str(spec), str(out)],
        cwd=ROOT, check=True, timeout=900,
    )  # fmt: skip
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A real arith log and a site built from it (with its viewer), made once."""
    from harness.eval import EvalRequest, run
    from harness.leaderboard.build import build_site
    from harness.suites.catalog import catalog_design

    work = tmp_path_factory.mktemp("made")
    ok, _, _ = run(
        EvalRequest(
            suite="arith", models=("scripted/x",), limit=3, log_dir=str(work / "logs"),
            model_args={"answer": "1"}, display="none",
        )
    )  # fmt: skip
    assert ok
    [log] = (work / "logs").glob("*.eval")
    build_site([str(work / "logs")], catalog_design, str(work / "site"))
    return work, log, work / "site"


def _check(case: Case, result: dict, tmp: Path, before: dict[str, str]) -> list[str]:
    lines = [line for line in result.get("stderr", "").splitlines() if line.strip()]
    problems = []
    if result.get("timed_out"):
        problems.append("hung (killed)")
    if result.get("rc") != 2:
        problems.append(f"exit {result.get('rc')}")
    if "Traceback" in result.get("stderr", ""):
        problems.append("traceback")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    elif not lines[0].startswith("harness: error: ") or case.needle not in lines[0]:
        problems.append(f"line {lines[0][:300]!r} lacks {case.needle!r}")
    for name, digest in before.items():
        if _digest(tmp / name) != digest:
            problems.append(f"{name} changed")
    return problems


def test_careless_input_round_two(made, tmp_path, data_dir):
    _battery(CASES, made, tmp_path, data_dir)


@pytest.mark.long
def test_careless_input_round_two_heavy_imports(made, tmp_path, data_dir):
    _battery(LONG_CASES, made, tmp_path, data_dir)


def _battery(cases: list[Case], made, tmp_path: Path, data_dir: Path) -> None:
    work, made_log, made_site = made
    tmp = tmp_path / "w"
    tmp.mkdir()
    for name in ("logs", "logs2", "logs3"):
        shutil.copytree(work / "logs", tmp / name)
    log = tmp / "logs" / made_log.name
    _write_files(tmp, log, made_site)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HF_TOKEN"}
    env |= {"HF_HUB_OFFLINE": "1", "HARNESS_DATA_DIR": str(data_dir), "NO_COLOR": "1"}
    env["HARNESS_CACHE_DIR"] = str(tmp / "cache")

    def fill(text: str) -> str:
        for k in ("2", "3"):
            text = text.replace(f"{{log{k}}}", str(tmp / f"logs{k}" / log.name))
        return (
            text.replace("{tmp}", str(tmp))
            .replace("{log}", str(log))
            .replace("{data}", str(data_dir))
        )

    specs, befores = [], []
    for i, case in enumerate(cases):
        (tmp / f"cwd{i}").mkdir()
        case_env = {k: v for k, v in env.items() if k not in case.drop_env}
        case_env |= {k: fill(v) for k, v in case.env.items()}
        cwd = str(tmp / f"cwd{i}")
        specs.append({"args": [fill(a) for a in case.args], "cwd": cwd, "env": case_env,
                      "timeout": 120, "memory_limit": case.memory_limit})  # fmt: skip
        names = [str(Path(fill(n)).relative_to(tmp)) if "{" in n else n for n in case.intact]
        befores.append({n: _digest(tmp / n) for n in names})
    results = run_forked(specs, tmp_path)
    failures = []
    for case, result, before in zip(cases, results, befores, strict=True):
        problems = _check(case, result, tmp, before)
        if problems:
            tail = result.get("stderr", "")[-400:]
            failures.append(f"{' '.join(case.args)}: {', '.join(problems)}: {tail!r}")
    assert stat.S_ISFIFO((tmp / "fifo.md").stat().st_mode)
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n\n".join(failures)


def _cli(args: list[str]) -> int:
    """Run `harness ARGS` in this process; its exit code."""
    from harness.cli import main

    try:
        main(args, prog_name="harness")
    except SystemExit as ex:
        return int(ex.code or 0)
    return 0


def test_report_writes_beside_the_logs_replaces_its_own_and_forces_with_a_word(
    made, tmp_path, capsys
):
    work, _, _ = made
    logs = tmp_path / "logs"
    shutil.copytree(work / "logs", logs)
    assert (
        _cli(["report", str(logs)]) == 0
    )  # README: `harness report logs/demo` -> logs/demo/report.md
    report = logs / "report.md"
    assert report.read_text().startswith("<!-- written by harness report")
    assert _cli(["report", str(logs)]) == 0  # its own file: replaced without --force
    assert _cli(["report", str(logs), "--format", "json"]) == 0
    assert json.loads((logs / "report.json").read_text())["written_by"] == "harness report"
    assert _cli(["leaderboard", "build", str(logs), "-o", str(logs / "site")]) == 0
    capsys.readouterr()
    assert _cli(["report", str(logs), "--format", "json"]) == 0
    # what the harness wrote beside the logs is not read as a log: no "left out" line
    assert "left out" not in capsys.readouterr().err
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n")
    capsys.readouterr()
    assert _cli(["report", str(logs), "-o", str(mine)]) == 2
    assert mine.read_text() == "my notes\n"
    assert _cli(["report", str(logs), "-o", str(mine), "--force"]) == 0
    assert f"replaced {mine}" in capsys.readouterr().err
    assert mine.read_text().startswith("<!-- written by harness report")
    [log] = logs.glob("*.eval")
    assert _cli(["report", str(log), "-o", str(tmp_path / "one.md")]) == 0  # a log file itself


def test_a_site_is_rebuilt_in_place_and_force_says_what_it_built_over(made, tmp_path, capsys):
    work, _, site_from = made
    site = tmp_path / "site"
    shutil.copytree(site_from, site)
    logs = str(work / "logs")
    assert _cli(["leaderboard", "build", logs, "-o", str(site)]) == 0  # marked: rebuilt
    assert (site / "viewer" / "index.html").is_file()
    (site / "viewer" / "notes.txt").write_text("mine\n")
    assert _cli(["leaderboard", "build", logs, "-o", str(site), "--no-viewer"]) == 2
    assert (site / "viewer" / "notes.txt").read_text() == "mine\n"
    capsys.readouterr()
    assert _cli(["leaderboard", "build", logs, "-o", str(site), "--force"]) == 0
    assert "viewer/notes.txt" in capsys.readouterr().err
    assert _cli(["leaderboard", "build", logs, "-o", str(site), "--no-viewer"]) == 0
    user = tmp_path / "user"
    user.mkdir()
    (user / "keep.txt").write_text("keep\n")
    assert _cli(["leaderboard", "build", logs, "-o", str(user), "--no-viewer", "--force"]) == 0
    assert (user / "keep.txt").read_text() == "keep\n"  # --force builds beside, never deletes
    assert _cli(["leaderboard", "build", logs, "-o", str(user), "--no-viewer"]) == 2  # still hers


def test_an_unreadable_log_in_the_log_dir_is_set_aside_and_the_run_goes_on(tmp_path, capsys):
    from harness.eval import EvalRequest, run

    logs = tmp_path / "logs"
    logs.mkdir()
    bad = logs / "2026-01-01T00-00-00_arith_crashed.eval"
    bad.write_bytes(b"PK\x03\x04 cut short by a crash")
    ok, rows, _ = run(
        EvalRequest(suite="arith", models=("scripted/x",), limit=2, log_dir=str(logs),
                    model_args={"answer": "1"}, display="none")
    )  # fmt: skip
    assert ok and rows
    assert not bad.exists()
    assert (logs / (bad.name + ".unreadable")).read_bytes() == b"PK\x03\x04 cut short by a crash"
    assert f"set aside {bad}" in capsys.readouterr().err


def test_report_on_a_nesting_bomb_stays_under_500_mb(tmp_path):
    bomb = tmp_path / "bomb"
    bomb.mkdir()
    (bomb / "deep.json").write_text("[" * 100_000)  # 100 KB; it took a reader to 24 GB
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'harness.cli', 'report', sys.argv[1]],"
        " capture_output=True, text=True)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(r.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(bomb)], capture_output=True, text=True, cwd=tmp_path,
        timeout=300, check=True,
    ).stdout  # fmt: skip
    first, _, stderr = out.partition("\n")
    rc, peak_kb = (int(x) for x in first.split())
    assert rc == 2 and "deep.json" in stderr and "Traceback" not in stderr, stderr
    assert peak_kb < 500 * 1024, f"peak RSS {peak_kb / 1024:.0f} MB"


def test_hostile_logs_are_left_out_with_their_reason_not_fatal(tmp_path, capsys):
    from inspect_ai.log import read_eval_log, write_eval_log

    from tests.leaderboard.logs import template_log, write_variant

    template = template_log(tmp_path / "t", 8)
    logs = tmp_path / "logs"
    # an arith log labelled k-parity: the k-parity section finds none of its fields
    write_variant(template, logs / "kp.eval", task="k-parity_x", model="scripted/x",
                  accuracy=0.5, seed=1)  # fmt: skip
    write_variant(template, logs / "ok.eval", task="arith_easy", model="scripted/y",
                  accuracy=0.5, seed=2)  # fmt: skip
    crafted = write_variant(template, logs / "crafted.eval", task="arith_easy",
                            model="x/" + "a" * 300, accuracy=0.5, seed=3)  # fmt: skip
    log = read_eval_log(str(crafted))
    for sample, value in zip(log.samples or [], [{"judge": "x"}, "null", 1e308], strict=False):
        for score in sample.scores.values():
            score.value = value  # type: ignore[assignment]
    write_eval_log(log, str(crafted))
    assert _cli(["report", str(logs), "-o", str(tmp_path / "r.md")]) == 0
    err = capsys.readouterr().err
    assert "kp.eval: its suite's section cannot read it" in err
    # a score no reader can take is that sample's error, with its reason; the log is used
    assert "crafted.eval" not in err
    assert 'unparseable score {"judge": "x"}' in (tmp_path / "r.md").read_text()
    assert _cli(["leaderboard", "build", str(logs), "-o", str(tmp_path / "s"), "--no-viewer"]) == 0
