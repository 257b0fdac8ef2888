import pytest

from harness.answer_extraction import extract_answer, last_boxed
from harness.scorers.math_answer import answers_match


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so \boxed{070}", "070"),
        (r"\boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        ("the answer is 12, or maybe 345.", "345"),
        ("no numbers", None),
        (r"\boxed{12", "12"),  # unclosed box: fall back to the last integer
    ],
)
def test_boxed_or_int(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"\boxed{070}", "070"),  # specs/aime.md §5.2
        (r"\boxed{\text{588}}", None),
        (r"\boxed{1{,}000}", None),
        (r"\boxed{5} and \boxed{ 17. }", "17"),
        (r"\boxed{\frac{1}{2}}", None),
        ("answer 42", None),
        (r"\boxed{1000}", None),
    ],
)
def test_strict(text, expected):
    assert extract_answer(text, "strict") == expected


def test_unknown_mode_lists_valid_ones():
    with pytest.raises(ValueError, match="boxed_or_int"):
        extract_answer("x", "loose")  # type: ignore[arg-type]


def test_nested_braces():
    assert last_boxed(r"\boxed{a{b{c}}d}") == "a{b{c}}d"


@pytest.mark.parametrize(
    ("pred", "gold", "ok"),
    [("070", "70", True), ("25", "25", True), ("24", "25", False), (r"\frac{50}{2}", "25", True)],
)
def test_math_verify_comparison(pred, gold, ok):
    assert answers_match(pred, gold) is ok
