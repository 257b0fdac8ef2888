"""Sentence cuts: after .?! plus whitespace or a newline, never inside math or code fences."""

import pytest

from harness.suco.segment import prefixes, sentence_ends, split_sentences


def test_basic_cuts_keep_whitespace_with_the_sentence():
    cot = "First we add. Then carry?  Done!\nNext line\n\nLast one."
    assert split_sentences(cot) == [
        "First we add. ", "Then carry?  ", "Done!\n", "Next line\n\n", "Last one.",
    ]  # fmt: skip
    assert "".join(split_sentences(cot)) == cot


def test_no_cut_without_following_whitespace():
    assert split_sentences("Pi is 3.14159 and e.g.x is fine.") == [
        "Pi is 3.14159 and e.g.x is fine."
    ]


def test_math_spans_are_not_cut():
    cot = "We get $a = 1. b = 2$ here. Also \\[x. y\n z\\] holds. And $$p. q$$ too. End."
    assert split_sentences(cot) == [
        "We get $a = 1. b = 2$ here. ",
        "Also \\[x. y\n z\\] holds. ",
        "And $$p. q$$ too. ",
        "End.",
    ]


def test_inline_paren_math_and_escaped_dollar():
    cot = "Cost is \\$5. Then \\(a. b\\) ok. Done."
    assert split_sentences(cot) == ["Cost is \\$5. ", "Then \\(a. b\\) ok. ", "Done."]


def test_unclosed_dollar_protects_nothing():
    assert split_sentences("It costs $5. Buy it. Now.") == ["It costs $5. ", "Buy it. ", "Now."]


def test_code_fences_are_not_cut():
    cot = "Write code.\n```python\nx = 1. \ny = 2\n```\nIt works. Yes."
    assert split_sentences(cot) == [
        "Write code.\n", "```python\nx = 1. \ny = 2\n```\n", "It works. ", "Yes.",
    ]  # fmt: skip


def test_unclosed_fence_runs_to_the_end():
    cot = "Start. ```\na. b.\nc"
    assert split_sentences(cot) == ["Start. ", "```\na. b.\nc"]


def test_leading_and_trailing_whitespace():
    cot = "\n\nFirst. Second.\n\n"
    assert split_sentences(cot) == ["\n\nFirst. ", "Second.\n\n"]
    assert sentence_ends(cot) == [9, len(cot)]


@pytest.mark.parametrize("blank", ["", "  ", "\n\n"])
def test_blank_cot_has_no_sentences(blank):
    assert split_sentences(blank) == []
    assert prefixes(blank) == [""]


def test_prefixes_start_empty_and_end_with_the_cot():
    cot = "A. B. C."
    assert prefixes(cot) == ["", "A. ", "A. B. ", "A. B. C."]


def test_join_invariant_on_random_texts():
    import random

    rng = random.Random(3)
    alphabet = ["a", " ", ".", "?", "!", "\n", "$", "\\[", "\\]", "```", "x. ", "\\$"]
    for _ in range(500):
        cot = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        parts = split_sentences(cot)
        if cot.strip():
            assert "".join(parts) == cot
            assert all(p.strip() for p in parts)
        ends = sentence_ends(cot)
        assert ends == sorted(set(ends))
