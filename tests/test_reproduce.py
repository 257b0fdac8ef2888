"""`harness reproduce`: exact for deterministic models, and the drifted field named."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.eval.manifest import Manifest
from harness.eval.reproduce import compare_manifests


def _manifest(**change: object) -> Manifest:
    base = Manifest(
        task="t", model="m/x",
        data={"sha256": "d" * 64, "n": 2, "per_sample": {"a": "1", "b": "2"}},
        code={"scorer": "s", "solver": "v", "task": "t", "model": "m"}, prompt="p" * 64,
        outputs="o" * 64, output_samples={"a#1": "x", "b#1": "y"}, judge={}, sandbox={},
        harness={"version": "0.1.0", "commit": "c1", "dirty": False},
        packages={"inspect_ai": "0.3.285"}, hardware={"cpu": "x86"},
    )  # fmt: skip
    return dataclasses.replace(base, **change)  # type: ignore[arg-type]


def _status(fields) -> dict[str, str]:
    return {f.field: f.status for f in fields}


def test_each_field_drifts_alone():
    old = _manifest()
    assert all(s == "same" for s in _status(compare_manifests(old, _manifest())).values())
    cases = {
        "data": _manifest(data={**old.data, "per_sample": {"a": "1", "b": "3"}}),
        "prompt": _manifest(prompt="q" * 64),
        "code": _manifest(code={**old.code, "scorer": "s2"}),
        "packages": _manifest(packages={"inspect_ai": "0.3.286"}),
        "outputs": _manifest(output_samples={"a#1": "x", "b#1": "z"}),
    }
    for name, new in cases.items():
        status = _status(compare_manifests(old, new))
        assert [k for k, v in status.items() if v == "drifted"] == [name], (name, status)
    moved = _status(compare_manifests(old, _manifest(harness={**old.harness, "commit": "c2"})))
    assert moved["harness"] == "differs" and "drifted" not in moved.values()
    # a --limit run: compared on the shared samples, and exact there
    fewer = _manifest(data={**old.data, "per_sample": {"a": "1"}}, output_samples={"a#1": "x"})
    assert "drifted" not in _status(compare_manifests(old, fewer)).values()


def test_a_log_without_a_manifest_is_one_line(tmp_path: Path):
    from tests.leaderboard.logs import template_log

    log = template_log(tmp_path, 3)
    for command in (["manifest", log.location], ["reproduce", log.location]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        [line] = result.output.strip().splitlines()
        assert "has no manifest" in line and "what can still be compared" in line
        assert "data #" in line and "Traceback" not in result.output


def _eval(args: list[str]) -> Path:
    result = CliRunner().invoke(main, ["eval", *args, "--display", "none", "--json"])
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["scores"][0]["log"])


def _reproduce(log: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["reproduce", str(log), "--log-dir", str(out), *extra])
    return result.exit_code, result.output


def _line(output: str, field: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(field + " "))


@pytest.mark.slow
def test_scripted_reproduces_exactly_and_a_changed_problem_is_named(tmp_path: Path, data_dir):
    data = tmp_path / "data"
    shutil.copytree(data_dir / "aime", data / "aime")
    log = _eval(
        [
            "--suite",
            "aime",
            "--model",
            "scripted/x",
            "-M",
            "answer=\\boxed{204}",
            "--limit",
            "4",
            "--data-dir",
            str(data),
            "--log-dir",
            str(tmp_path / "l"),
        ]
    )
    code, out = _reproduce(log, tmp_path / "r1")
    assert code == 0, out
    assert "same" in _line(out, "outputs") and "exact on 4 sample-epochs" in out
    assert "inside the old 95% interval" in out and out.rstrip().endswith("drifted: nothing")
    # the first problem's text changes in the data folder the log names
    path = data / "aime" / "aime2024.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["problem"] += " (edited)"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out = _reproduce(log, tmp_path / "r2", "--limit", "2")
    assert code == 1, out
    assert "drifted" in _line(out, "data") and "1 of 2 samples differ" in _line(out, "data")
    assert "same" in _line(out, "outputs")  # the script answers the same whatever it is asked
    assert out.rstrip().endswith("drifted: data")
    # the new run's folder must be new: one holding a log would be reused, not re-run
    code, out = _reproduce(log, tmp_path / "r2")
    assert code == 2 and "not empty" in out


@pytest.mark.long
def test_local_tiny_arith_reproduces_its_outputs_hash_exactly(tmp_path: Path):
    log = _eval(["--suite", "arith", "--model", "local/tiny-arith", "--limit", "8",
                 "--log-dir", str(tmp_path / "l")])  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r")
    assert code == 0, out
    assert "exact on 8 sample-epochs" in _line(out, "outputs")
    from harness.eval.manifest import manifest_of
    from harness.logs import log_files, read_log

    [new] = log_files([str(tmp_path / "r")])
    old_m, new_m = manifest_of(read_log(str(log))), manifest_of(read_log(new))
    assert old_m is not None and new_m is not None and old_m.outputs == new_m.outputs
