"""`harness.paths.cached_build`: a cached folder is built once, however many processes ask."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from harness.errors import HarnessUsageError
from harness.paths import cached_build


def _slow_build(log: str):
    def build(tmp: Path) -> None:
        with open(log, "a") as f:
            f.write("built\n")
        time.sleep(1.0)  # long enough that the other process asks while this one builds
        tmp.mkdir()
        (tmp / "done.json").write_text("{}")

    return build


def _ask(target: str, log: str) -> None:
    cached_build(Path(target), "done.json", _slow_build(log))


def test_two_processes_asking_together_build_once(tmp_path):
    target, log = tmp_path / "model", tmp_path / "log.txt"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_ask, args=(str(target), str(log))) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text() == "built\n"  # the second waited on the lock, then found it built
    assert (target / "done.json").is_file()
    assert not list(tmp_path.glob("model.partial-*"))


def test_a_failed_or_unmarked_build_leaves_nothing_and_the_next_ask_builds(tmp_path):
    target = tmp_path / "model"

    def broken(tmp: Path) -> None:
        tmp.mkdir()
        (tmp / "half").write_text("x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cached_build(target, "done.json", broken)
    with pytest.raises(RuntimeError, match="wrote no done.json"):
        cached_build(target, "done.json", lambda tmp: tmp.mkdir())
    assert not target.exists() and not list(tmp_path.glob("model.partial-*"))
    calls: list[Path] = []

    def good(tmp: Path) -> None:
        calls.append(tmp)
        tmp.mkdir()
        (tmp / "done.json").write_text("{}")

    assert cached_build(target, "done.json", good) == target
    assert cached_build(target, "done.json", good) == target
    assert len(calls) == 1


def test_a_folder_without_its_marker_is_left_alone_and_named(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "mine.txt").write_text("a user's file")
    with pytest.raises(HarnessUsageError, match="without its done.json"):
        cached_build(target, "done.json", lambda tmp: None)
    assert (target / "mine.txt").read_text() == "a user's file"


def test_a_link_where_the_build_folder_goes_is_refused_and_its_target_kept(tmp_path):
    import os

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the harness's")
    target = tmp_path / "cache" / "model"
    target.parent.mkdir()
    (target.parent / f"model.partial-{os.getpid()}").symlink_to(elsewhere)
    with pytest.raises(HarnessUsageError, match="a link or a file"):
        cached_build(target, "done.json", lambda tmp: None)
    assert (elsewhere / "keep.txt").read_text() == "not the harness's"
