"""`harness provenance detect`: p-values of texts and token lists, and one line for bad input."""

import json
import os
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from harness.suites.provenance import cli
from harness.suites.provenance.generate import generate
from harness.suites.provenance.greenlist import GreenList
from harness.suites.provenance.source import MarkovTeacher, make_source
from harness.suites.provenance.watermark import KGWProcessor


def _run(*args: str):
    return CliRunner().invoke(cli.provenance, ["detect", *args])


def _one_line_error(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    text = result.stderr if hasattr(result, "stderr") else result.output
    lines = [x for x in text.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("harness: error:"), text
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.output


def test_watermarked_tokens_are_detected_with_their_key_only(tmp_path):
    source = make_source(0)
    rule = GreenList(0.25, 256, 2)  # as the CLI's (no special tokens); the hash ignores the size
    keys = np.full(4, 1234, dtype=np.uint64)
    prompts = source.sample(4, 1, np.random.default_rng(0))
    gen = generate(MarkovTeacher(source), prompts, 150, rule, keys,
                   KGWProcessor(rule, keys, 4.0), seed=1)  # fmt: skip
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps({"tokens": row.tolist()}) + "\n" for row in gen.tokens))
    result = _run("--key", "1234", str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 4 and all("scored=" in x and "(watermarked" in x for x in lines)
    other = _run("--key", "0x4d3", str(path))  # 1235
    assert other.exit_code == 0 and "(watermarked" not in other.output


def test_plain_text_prints_p_and_scored_tokens(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("The quick brown fox jumps over the lazy dog. " * 3)
    result = _run("--key", "42", "--gamma", "0.5", str(path))
    assert result.exit_code == 0 and "p=" in result.output and "scored=" in result.output


@pytest.mark.parametrize("key", ["abc", "-5", str(2**64), "1e3", ""])
def test_a_key_of_the_wrong_form_is_one_line(tmp_path, key):
    path = tmp_path / "a.txt"
    path.write_text("some text here")
    _one_line_error(_run("--key", key, str(path)), "--key")


def test_empty_and_non_utf8_texts_are_one_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    _one_line_error(_run("--key", "1", str(empty)), "empty text")
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"text": "abc def ghi"}\n{"text": "  "}\n')
    _one_line_error(_run("--key", "1", str(lines)), "line 2: empty text")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff\xfe not utf-8")
    _one_line_error(_run("--key", "1", str(bad)), "not UTF-8")
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_bytes(b'{"text": "fine"}\n{"text": \xff}\n')
    _one_line_error(_run("--key", "1", str(bad_line)), "line 2")
    shape = tmp_path / "shape.jsonl"
    shape.write_text('{"tokens": [1, "a"]}\n')
    _one_line_error(_run("--key", "1", str(shape)), "token ids")


def _finishes(fn, seconds: float = 60.0):
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("result", fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the command blocked"
    return out["result"]


def test_fifo_symlink_to_a_device_and_huge_files_are_refused(tmp_path, monkeypatch):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _one_line_error(_finishes(lambda: _run("--key", "1", str(fifo))), "not a regular file")
    link = tmp_path / "zero.txt"
    link.symlink_to("/dev/zero")
    _one_line_error(_finishes(lambda: _run("--key", "1", str(link))), "not a regular file")
    monkeypatch.setattr(cli, "MAX_TEXT_BYTES", 100)
    big = tmp_path / "big.txt"
    big.write_text("x" * 1000)
    _one_line_error(_run("--key", "1", str(big)), "over the limit")
    _one_line_error(_run("--key", "1", str(tmp_path / "missing.txt")), "cannot be read")
