"""harness.bounded_json: depth counted outside strings, limits checked before parsing."""

from __future__ import annotations

import os

import pytest

from harness.bounded_json import JsonInputError, depth, iter_lines, load_file, loads


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]", "\\"[["]', 1),  # brackets inside strings, an escaped quote
        ('{"a": "\\\\"}', 1),  # an escaped backslash closes the string
    ],
)
def test_depth_counts_brackets_outside_strings(text, expected):
    assert depth(text.encode()) == expected


def test_a_nesting_bomb_is_refused_before_parsing():
    with pytest.raises(JsonInputError, match="nested 100000 deep"):
        loads(b"[" * 100_000, "bomb.json")
    assert loads(b"[" * 200 + b"]" * 200, "ok.json") is not None


def test_jsonl_names_the_line_that_is_not_utf8_too_long_or_not_json(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": "caf\xe9"}\n')
    with pytest.raises(JsonInputError, match=r"line 3: not UTF-8"):
        list(iter_lines(path))
    path.write_bytes(b'{"a": 1}\n' + b'"' + b"x" * 100 + b'"\n')
    with pytest.raises(JsonInputError, match="line 2: longer than 50 bytes"):
        list(iter_lines(path, max_line=50))
    path.write_bytes(b'{"a": 1}\n{nope\n')
    assert next(iter_lines(path)) == (1, {"a": 1})
    with pytest.raises(JsonInputError, match="line 2: not valid JSON"):
        list(iter_lines(path))


def test_size_is_checked_before_reading_and_a_fifo_never_blocks(tmp_path):
    big = tmp_path / "big.json"
    big.write_text("[" + "1," * 1000 + "1]")
    with pytest.raises(JsonInputError, match="over the limit of 100"):
        load_file(big, max_bytes=100)
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    with pytest.raises(JsonInputError, match="not a regular file"):
        load_file(fifo)
