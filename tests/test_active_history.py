"""An active run's history is someone else's logs (issue 42, class 9): it must be over this
run's questions, and the added model must be new."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from inspect_ai.dataset import Sample

from harness.cli import main

ARITH = ["--suite", "arith", "-T", "n=12", "--display", "none"]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two scripted models' logs over arith's 12 problems from seed 1 (ids arith-1..12)."""
    folder = tmp_path_factory.mktemp("history") / "logs"
    result = CliRunner().invoke(main, ["eval", *ARITH, "-T", "seed=1", "--model", "scripted/a",
                                       "--model", "scripted/b", "-M", "answer=1",
                                       "--log-dir", str(folder)])  # fmt: skip
    assert result.exit_code == 0, result.output
    return folder


def _active(history: Path, out: Path, model: str, *extra: str) -> tuple[int, str]:
    args = ["eval", *ARITH, "--model", model, "--until", "decided", "--active", "--history",
            str(history), "--log-dir", str(out), *extra]  # fmt: skip
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def test_a_history_over_other_questions_under_the_same_ids_is_refused(history, tmp_path):
    # seed 0 makes other problems under the same ids arith-1..12
    code, out = _active(history, tmp_path / "l", "scripted/c", "-M", "answer=1")
    assert code == 2, out
    [line] = out.strip().splitlines()
    assert "asked another question under item" in line and "this run's data" in line
    assert not (tmp_path / "l").exists() or not any((tmp_path / "l").rglob("*.eval"))


@pytest.mark.long  # a whole active run (~1.5 s); the refusals run nothing
def test_a_history_over_the_same_questions_is_accepted(history, tmp_path):
    # the same seed and one problem more: the twelve shared are the history's, accepted
    code, out = _active(history, tmp_path / "ok", "scripted/c", "-M", "answer=1", "-T",
                        "seed=1", "-T", "n=13")  # fmt: skip
    assert code == 0, out


def test_the_added_model_already_in_the_history_is_refused(history, tmp_path):
    # the history names it "scripted/a (answer="1")": the spec alone never matched that label
    code, out = _active(history, tmp_path / "l", "scripted/a", "-M", "answer=1", "-T", "seed=1")
    assert code == 2 and "is already in the history" in out and "with itself" in out, out
    # a different spelling of its name (case) is the same model
    code, out = _active(history, tmp_path / "l", "scripted/B", "-M", "answer=1", "-T", "seed=1")
    assert code == 2 and "is already in the history" in out, out


def test_a_history_log_without_digests_is_refused(history, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    from harness.eval._manifest import MANIFEST_KEY

    bare = tmp_path / "bare"
    bare.mkdir()
    for log in sorted(history.glob("*.eval")):
        whole = read_eval_log(str(log))
        whole.eval.metadata = {k: v for k, v in (whole.eval.metadata or {}).items()
                               if k != MANIFEST_KEY}  # fmt: skip
        write_eval_log(whole, str(bare / log.name))
    code, out = _active(bare, tmp_path / "l", "scripted/c", "-M", "answer=1", "-T", "seed=1")
    assert code == 2 and "has no full-content digests of its data" in out, out


def test_a_decided_runs_data_hash_reads_the_files_it_names(tmp_path):
    """The identity's hash of a decided run covers an image's bytes, as a full run's does."""
    from harness.board._live_run import _content_hash
    from harness.eval._data_content import IDENTITY_DIGITS, sample_digests, whole_hash

    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG one")
    samples = [Sample(id="s1", input=[{"role": "user", "content": [
        {"type": "image", "image": str(picture)}, {"type": "text", "text": "what is it?"}]}],
        target="a")]  # fmt: skip
    before = _content_hash(samples)
    assert before == whole_hash(sample_digests(samples))[:IDENTITY_DIGITS]
    picture.write_bytes(b"\x89PNG two")
    assert _content_hash(samples) != before


def test_add_model_replay_refuses_the_same_model_under_another_spelling():
    from harness.board._add_model import add_model
    from harness.board._table import Board
    from harness.errors import HarnessUsageError

    rng = np.random.default_rng(0)
    scores = (rng.random((4, 30)) < 0.5).astype(float)
    names = tuple(sorted(("gpt-4o", "GPT-4o\u200b", "m2", "m3")))  # the same model, twice
    board = Board(names, tuple(f"i{j}" for j in range(30)), scores)
    with pytest.raises(HarnessUsageError, match="compared with itself"):
        add_model(board, "gpt-4o", active=False)
    add_model(board, "m2", active=False)  # names that differ are two models
