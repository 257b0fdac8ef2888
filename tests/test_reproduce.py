"""`harness reproduce`: exact for deterministic models, and the drifted field named."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from inspect_ai.dataset import Sample

from harness.cli import main
from harness.eval._manifest import Manifest
from harness.eval._reproduce import compare_manifests


def _manifest(**change: object) -> Manifest:
    base = Manifest(
        task="t", model="m/x",
        data={"scheme": 2, "sha256": "d" * 64, "n": 2, "per_sample": {"a": "1", "b": "2"},
              "dataset": {"sha256": "d" * 64, "n": 2}},
        code={"scorer": "s", "solver": "v", "task": "t", "model": "m",
              "files": {"harness/scorers/x.py": "f1", "harness/suites/t.py": "f2"}},
        prompt="p" * 64,
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
        "code": _manifest(
            code={**old.code, "files": {**old.code["files"], "harness/scorers/x.py": "f9"}}
        ),
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
    assert "drifted" not in _status(compare_manifests(old, fewer, limited=True)).values()
    # without --limit, a sample fewer is a deleted sample
    assert _status(compare_manifests(old, fewer))["data"] == "drifted"


def _data(rows: dict[str, str]) -> dict:
    from harness.eval._data_content import data_manifest

    samples = [Sample(id=k, input=v, target="1") for k, v in rows.items()]
    return data_manifest(samples)


def test_appended_deleted_and_edited_samples_are_named_and_counted():
    from harness.eval._drift import compare_data

    base = {f"p{i}": f"problem {i}" for i in range(30)}
    old = _data(base)
    appended = compare_data(old, _data({**base, **{f"q{i}": "new" for i in range(10)}}))
    assert appended.status == "drifted" and "30 -> 40 samples" in appended.detail
    assert "10 added (q0, q1, q2, ...)" in appended.detail
    deleted = compare_data(old, _data({k: v for k, v in list(base.items())[:20]}))
    assert deleted.status == "drifted" and "30 -> 20 samples" in deleted.detail
    assert "10 deleted (p20, p21, p22, ...)" in deleted.detail
    edited = compare_data(old, _data({**base, "p7": "problem 7 (edited)"}))
    assert edited.status == "drifted" and "1 of 30 samples differ (first: p7)" in edited.detail
    assert compare_data(old, _data(base)).status == "same"


def test_a_package_version_change_is_named():
    old = _manifest(packages={"python": "3.11.7", "math_verify": "0.9.0", "sympy": "1.14.0"})
    new = dataclasses.replace(old, packages={**old.packages, "math_verify": "0.9.1"})
    [packages] = [f for f in compare_manifests(old, new) if f.field == "packages"]
    assert packages.status == "drifted" and packages.detail == "math_verify 0.9.0 -> 0.9.1"
    gone = dataclasses.replace(old, packages={"python": "3.11.7", "sympy": "1.14.0"})
    [packages] = [f for f in compare_manifests(old, gone) if f.field == "packages"]
    assert packages.detail == "math_verify 0.9.0 removed"


def test_an_older_manifest_is_compared_on_what_it_has_and_names_the_rest():
    from harness.eval._reproduce import Reproduction

    old = _manifest(data={"sha256": "d" * 64, "n": 2, "per_sample": {"a": "1", "b": "2"}},
                    code={"scorer": "s", "solver": "v", "task": "t", "model": "m"},
                    packages={"inspect_ai": "0.3.285", "torch": "2.9"}, version=1)  # fmt: skip
    new = _manifest(packages={"inspect_ai": "0.3.285", "math_verify": "0.9.0"})
    fields = compare_manifests(old, new)
    status = _status(fields)
    assert status["data"] == status["code"] == status["packages"] == "partly compared"
    details = {f.field: f.detail for f in fields}
    assert "content not checked" in details["data"]
    assert "not checked" in details["code"] and "math_verify, torch" in details["packages"]
    result = Reproduction("old", "new", fields, "accuracy", (0.5, 0.1, 0.9), 0.5, True)
    assert result.exit_code == 3 and "nothing drifted" not in "\n".join(result.lines())
    assert "not checked: data, code, packages" in "\n".join(result.lines())
    # an id missing from the new run is a drift even against the older manifest
    fewer = _manifest(data={**new.data, "per_sample": {"a": "1"}})
    assert _status(compare_manifests(old, fewer))["data"] == "drifted"


def test_only_the_outputs_drifting_says_so_with_the_interval():
    from harness.eval._reproduce import Reproduction

    old = _manifest()
    fields = compare_manifests(old, _manifest(output_samples={"a#1": "x", "b#1": "z"}))
    inside = Reproduction("o", "n", fields, "accuracy", (0.5, 0.1, 0.9), 0.6, True)
    assert inside.exit_code == 1 and "outputs only" in inside.lines()[-1]
    assert "inside the old 95% interval" in inside.lines()[-1]
    same = Reproduction("o", "n", compare_manifests(old, old), "accuracy", (0.5, 0.1, 0.9), 0.5,
                        True)  # fmt: skip
    assert same.exit_code == 0 and same.lines()[-1] == "nothing drifted"


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


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow
def test_scripted_reproduces_and_every_drift_is_named(tmp_path: Path, data_dir, monkeypatch):
    """The issue's three cases, each once said "nothing drifted" with exit 0: 10 problems
    appended, 10 deleted, a module the scorer calls changed; and an edited problem."""
    data = tmp_path / "data"
    shutil.copytree(data_dir / "aime", data / "aime")
    log = _eval(["--suite", "aime", "--model", "scripted/x", "-M", "answer=\\boxed{204}",
                 "--data-dir", str(data), "--log-dir", str(tmp_path / "l")])  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r1")
    assert code == 0, out
    assert "same" in _line(out, "outputs") and "exact on 30 sample-epochs" in out
    assert "inside the old 95% interval" in out and out.rstrip().endswith("nothing drifted")
    path = data / "aime" / "aime2024.jsonl"
    rows = _rows(path)
    # 10 problems appended
    _write(path, rows + [{**r, "id": 1000 + i} for i, r in enumerate(rows[:10])])
    code, out = _reproduce(log, tmp_path / "r2")
    assert code == 1, out
    assert "30 -> 40 samples" in _line(out, "data") and "10 added" in _line(out, "data")
    assert "nothing drifted" not in out
    # 10 problems deleted
    _write(path, rows[:20])
    code, out = _reproduce(log, tmp_path / "r3")
    assert code == 1, out
    assert "30 -> 20 samples" in _line(out, "data") and "10 deleted" in _line(out, "data")
    # a module the aime scorer calls (not the scorer's own file) changed: the new run's code
    # is read from a copy of the package where extract_answer differs
    _write(path, rows)
    import harness
    from harness.eval import _code_closure as code_closure

    copy = tmp_path / "src" / "harness"
    shutil.copytree(Path(harness.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    called = copy / "answer_extraction.py"
    called.write_text(called.read_text() + "\n# extract_answer changed\n")
    monkeypatch.setattr(code_closure, "ROOT", copy, raising=False)
    code, out = _reproduce(log, tmp_path / "r4")
    monkeypatch.undo()
    assert code == 1, out
    assert "harness/answer_extraction.py" in _line(out, "code"), out
    assert out.rstrip().endswith("drifted: code")
    # the first problem's text changes, and --limit 2 runs fewer: compared on those two, and
    # the whole dataset's hash still compared
    rows[0]["problem"] += " (edited)"
    _write(path, rows)
    code, out = _reproduce(log, tmp_path / "r5", "--limit", "2")
    assert code == 1, out
    assert "drifted" in _line(out, "data") and "1 of 2 samples differ" in _line(out, "data")
    assert "same" in _line(out, "outputs")  # the script answers the same whatever it is asked
    assert out.rstrip().endswith("drifted: data")
    # the new run's folder must be new: one holding a log would be reused, not re-run
    code, out = _reproduce(log, tmp_path / "r5")
    assert code == 2 and "not empty" in out


@pytest.mark.long
def test_local_tiny_arith_reproduces_its_outputs_hash_exactly(tmp_path: Path):
    log = _eval(["--suite", "arith", "--model", "local/tiny-arith", "--limit", "8",
                 "--log-dir", str(tmp_path / "l")])  # fmt: skip
    code, out = _reproduce(log, tmp_path / "r")
    assert code == 0, out
    assert "exact on 8 sample-epochs" in _line(out, "outputs")
    assert out.rstrip().endswith("nothing drifted")
    from harness.eval._manifest import manifest_of
    from harness.logs import log_files, read_log

    [new] = log_files([str(tmp_path / "r")])
    old_m, new_m = manifest_of(read_log(str(log))), manifest_of(read_log(new))
    assert old_m is not None and new_m is not None and old_m.outputs == new_m.outputs
