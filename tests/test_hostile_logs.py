"""Issue 42, classes 2 to 4: a log is someone else's file.

2. A doctored manifest (or any field of the wrong type) leaves its log out with the reason; the
   report, the site's numbers and `harness manifest` never show a traceback.
3. Outputs or scores rewritten after the run, the manifest left as it was: the report and the
   site say so beside the score.
4. A few KB that inflate to GBs: every member is inflated in bounded chunks and refused past its
   bound (memory of the commands: benchmarks/hostile_logs.py).

Logs are written directly (`tests.hostile_log_files.manifest_log`), so no eval runs here.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.logs import BadLog, LogRecord, read_log, read_logs
from tests import hostile_log_files as H

ANSWERS, TARGETS = ["1", "7", "3"], ["1", "2", "3"]  # one wrong: accuracy 2/3


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return H.manifest_log(tmp_path / "good" / "good.eval", ANSWERS, TARGETS)


def _record(path: Path) -> LogRecord:
    record = read_log(str(path))
    assert isinstance(record, LogRecord), record
    return record


def _other_model(header: dict[str, Any]) -> None:  # not superseded by the good log
    header["eval"]["model"] = "scripted/b"
    manifest = header["eval"]["metadata"]["harness_manifest"]
    manifest["models"]["scripted/b"] = manifest["models"].pop("scripted/a")


def _outputs(change: Any) -> H.Edit:
    return H.edit_header(lambda h: change(h["metadata"]["harness_manifest_outputs"]))


# ---- class 2: fields of the wrong type ---------------------------------------------------

DOCTORED = {
    "data a string": (H.set_manifest_field("arith", "data", "x"), "tasks.arith.data"),
    "per-sample data a list": (H.set_manifest_field("arith", "data.per_sample", [1]),
                               "data.per_sample"),
    "code files a list": (H.set_manifest_field("arith", "code.files", ["a"]), "code.files"),
    "a package version a number": (H.set_manifest_field("arith", "packages", {"x": 1}),
                                   "packages.x"),
    "task entry a list": (H.set_manifest_field("arith", "judge", [1, 2]), "judge"),
    "version an object": (H.edit_header(lambda h: h["eval"]["metadata"]["harness_manifest"]
                                        .update(version={"a": 1})), "version"),
    "version a boolean": (H.edit_header(lambda h: h["eval"]["metadata"]["harness_manifest"]
                                        .update(version=True)), "version"),
    "tasks a list": (H.edit_header(lambda h: h["eval"]["metadata"]["harness_manifest"]
                                   .update(tasks=[])), "tasks"),
    "a model a number": (H.edit_header(lambda h: h["eval"]["metadata"]["harness_manifest"]
                                       ["models"].update({"scripted/a": 3})), "models"),
    "manifest a string": (H.edit_header(lambda h: h["eval"]["metadata"]
                                        .update(harness_manifest="x")), "harness_manifest"),
    "outputs' per-sample a string": (_outputs(lambda o: o.update(per_sample="x")),
                                     "per_sample"),
    "an output digest a number": (_outputs(lambda o: o["per_sample"].update({"arith-1#1": 5})),
                                  "per_sample.arith-1#1"),
    "eval metadata a string": (H.edit_header(lambda h: h["eval"].update(metadata="x")),
                               "metadata"),
    "header a list": (lambda c: c.update({"header.json": b"[1, 2]"}), "header"),
    "summaries an object": (lambda c: c.update({"summaries.json": b"{}"}), "summaries"),
    "a sample's usage a list": (lambda c: c.update({"summaries.json": json.dumps(
        [{**s, "model_usage": [1]} for s in json.loads(c["summaries.json"])]).encode()}),
        "model_usage"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DOCTORED))
def test_a_doctored_log_is_left_out_with_its_reason(case: str, good: Path, tmp_path: Path):
    """Each shape is one BadLog naming the field; the good log beside it is used, and the
    report's rows (its cost rows read the manifest) are made without a traceback."""
    from harness.report._data import build_report
    from harness.suites.catalog import catalog_design

    edit, field = DOCTORED[case]
    bad = H.edited(good, good.parent / "bad.eval",
                   lambda c: (H.edit_header(_other_model)(c), edit(c)))  # fmt: skip
    found = read_log(str(bad))
    assert isinstance(found, BadLog) and field in found.reason, found
    selection = read_logs([str(good.parent)])
    assert [r.path for r in selection.used] == [str(good)]
    assert [b.path for b in selection.left_out] == [str(bad)]
    report = build_report([str(good.parent)], catalog_design)
    assert [r.model for r in report.scores] == ["scripted/a"]


def test_harness_manifest_names_the_bad_field_in_one_line(good: Path):
    from harness.cli import main

    bad = H.edited(good, good.parent / "bad.eval", H.set_manifest_field("arith", "data", 3))
    done = CliRunner().invoke(main, ["manifest", str(bad)])
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1
    assert "tasks.arith.data is an integer, not an object" in done.output
    ok = CliRunner().invoke(main, ["manifest", str(good)])
    assert ok.exit_code == 0 and json.loads(ok.output)["task"] == "arith"


def test_the_shape_keys_are_the_manifests():
    from harness import manifest_shape
    from harness.eval import _manifest as manifest

    assert manifest_shape.MANIFEST_KEY == manifest.MANIFEST_KEY
    assert manifest_shape.OUTPUTS_KEY == manifest.OUTPUTS_KEY


# ---- class 3: tampering -------------------------------------------------------------------


def _rewrite_summaries(value: Any) -> H.Edit:
    def apply(content: dict[str, bytes]) -> None:
        summaries = json.loads(content["summaries.json"])
        for s in summaries:
            s["scores"]["first_integer_match"]["value"] = value
        content["summaries.json"] = json.dumps(summaries).encode()

    return apply


def _drop_summary(content: dict[str, bytes]) -> None:
    summaries = json.loads(content["summaries.json"])
    content["summaries.json"] = json.dumps(summaries[:2]).encode()
    del content["samples/arith-3_epoch_1.json"]


TAMPERED = {
    "answers and scores to the target and 1.0": (
        H.rewrite_answers(lambda s: s["target"], 1.0),
        ["outputs do not match the log's manifest: 1 of 3 samples differ",
         "scores do not match the log's manifest: 3 of 3 samples differ"]),
    "scores only, in samples and summaries": (
        H.rewrite_answers(lambda s: s["output"]["completion"], "C"),
        ["scores do not match the log's manifest: 1 of 3 samples differ"]),
    "the summaries' scores only": (
        _rewrite_summaries(1),
        ["scores do not match the log's manifest: 3 of 3 samples differ",
         "the summaries' scores differ from the samples' in 3 of 3 samples"]),
    "a sample deleted": (_drop_summary, ["1 of the manifest's 3 samples are missing"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_log_is_marked_beside_its_score(case: str, good: Path):
    from harness.compare._scores import arm_rows
    from harness.report._render import _tables

    assert _record(good).tampered == ""
    edit, expected = TAMPERED[case]
    record = _record(H.edited(good, good.parent / "tampered.eval", edit))
    for text in expected:
        assert text in record.tampered
    [row] = arm_rows([record])
    assert row.tampered == record.tampered
    data = type("Data", (), {"scores": [row], "pairs": [], "not_comparable": [], "errors": [],
                             "left_out": []})()  # fmt: skip
    [scores] = [t for t in _tables(data) if t[0] == "Scores"]
    assert f"(TAMPERED: {record.tampered})" in " ".join(scores[3][0])


def test_the_site_marks_a_tampered_row(good: Path, tmp_path: Path):
    from harness.leaderboard.build import build_site
    from harness.suites.catalog import catalog_design

    H.edited(
        good,
        good.parent / "tampered.eval",
        lambda c: (
            H.edit_header(_other_model)(c),
            H.rewrite_answers(lambda s: s["target"], "C")(c),
        ),
    )
    result = build_site([str(good.parent)], catalog_design, str(tmp_path / "site"), viewer=False)
    assert not result.left_out
    numbers = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    rows = {r["model"]: r for t in numbers["tasks"] for r in t["rows"]}
    assert "outputs do not match" in rows["scripted/b"]["tampered"]
    assert rows["scripted/a"]["tampered"] is None
    assert "TAMPERED: outputs do not match" in (tmp_path / "site" / "index.html").read_text()


# ---- class 4: bombs ---------------------------------------------------------------------

BOMB = 40 << 20  # inflates 40 MB from about 2 KB: over the 16 MB floor


@pytest.mark.parametrize(
    ("member", "declared"),
    [("summaries.json", None), ("summaries.json", 4000), ("header.json", 4000),
     ("samples/arith-1_epoch_1.json", 4000)],
)  # fmt: skip
def test_a_bomb_is_refused_within_a_bounded_memory(good: Path, member: str, declared: Any):
    """Declared honestly it is refused before inflating; lying about its size, it is refused
    after a few chunks: Python's peak stays far below what the member inflates to."""
    out = H.bomb(good, good.parent / "bomb.eval", member, BOMB, declared)
    assert out.stat().st_size < 64 << 10
    tracemalloc.start()
    try:
        found = read_log(str(out))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, f"peak {peak >> 20} MB"
    if member.startswith("samples/"):  # the summaries read; its sample cannot be checked
        assert isinstance(found, LogRecord) and "cannot be checked" in found.tampered
    else:
        assert isinstance(found, BadLog) and "inflates to" in found.reason, found


def test_whole_log_readers_check_every_member_first(good: Path):
    from harness.errors import HarnessUsageError
    from harness.logs import read_full_log

    out = H.bomb(good, good.parent / "bomb.eval", "samples/arith-2_epoch_1.json", BOMB, 4000)
    with pytest.raises(HarnessUsageError, match="inflates to more than the 4000 bytes"):
        read_full_log(str(out))


def test_members_are_handed_over_in_bounded_chunks(good: Path):
    import zipfile

    from harness.bounded_zip import CHUNK, ZipBombError, iter_member

    out = H.bomb(good, good.parent / "bomb.eval", "summaries.json", BOMB)
    with zipfile.ZipFile(out) as z:
        info = z.getinfo("summaries.json")
    sizes = [len(chunk) for chunk in iter_member(str(out), info, 1 << 30)]
    assert max(sizes) <= CHUNK and sum(sizes) == BOMB + 2
    with pytest.raises(ZipBombError, match="over 33554432"):
        next(iter_member(str(out), info, 32 << 20))
