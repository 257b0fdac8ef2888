"""Spec §5.1-5.2: the judge's ranking with its fallbacks; AIME answers in the lenient modes."""

import pytest

from harness.suites.mas_prove.extraction import aime_answer, lenient_answer
from harness.suites.mas_prove.ranking import chance_skill, parse_ranking, toy_step_accuracy


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<ranking>2,1,3</ranking>", (1, 0, 2)),
        ("<ranking> 3, 1 ,2 </ranking>", (2, 0, 1)),
        ("I prefer the second. <ranking>2,3,1</ranking> and <ranking>1,2,3</ranking>", (1, 2, 0)),
    ],
)
def test_ranking_is_parsed_one_based(text, expected):
    parsed = parse_ranking(text, 3)
    assert parsed.order == expected
    assert parsed.fallback == ""


@pytest.mark.parametrize(
    "text",
    [
        "<ranking>2,2,3</ranking>",  # a repeat
        "Candidate 2 is best.",  # no tag
        "<ranking>2,1</ranking>",  # too short
        "<ranking>2,1,3,4</ranking>",  # too long
        "<ranking>0,1,2</ranking>",  # 0-based, so 3 is missing
        "<ranking>b,a,c</ranking>",  # not numbers
        "",
    ],
)
def test_a_bad_ranking_falls_back_to_the_identity(text):
    parsed = parse_ranking(text, 3)
    assert parsed.order == (0, 1, 2)
    assert parsed.fallback


def test_toy_formula_matches_the_spec_numbers():
    # spec §3: p = 0.6, N = 3, a = 0.8 -> 0.792; three steps -> 0.4968
    assert toy_step_accuracy(0.6, 0.8, 3) == pytest.approx(0.792, abs=1e-12)
    assert toy_step_accuracy(0.6, 0.8, 3) ** 3 == pytest.approx(0.4968, abs=5e-5)
    assert toy_step_accuracy(0.6, 1.0, 3) == pytest.approx(1 - 0.4**3)  # the oracle
    # a verifier no better than chance on mixed sets gives exactly p
    for p in (0.1, 0.6, 0.9):
        assert toy_step_accuracy(p, chance_skill(p, 3), 3) == pytest.approx(p)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>\\boxed{070}</answer>", 70),
        ("so the answer is 588.", 588),
        ("\\boxed{16} is what we get; see AIME 2025", 16),
        ("1000", None),  # the authors' code returns -1: no answer, scored wrong
        ("<answer>The result is 25</answer> then 999 later", 25),
        ("We get x = 12.\nTherefore the total is 345", 345),
        ("", None),
    ],
)
def test_lenient_extraction_vectors(text, expected):
    assert lenient_answer(text) == expected
    assert lenient_answer(text, compat=True) == expected


def test_the_answer_is_1000_quirk_only_in_the_compatible_mode():
    # the authors' phrase patterns have no digit boundary: "answer is 1000" reads as 100
    assert lenient_answer("the answer is 1000", compat=True) == 100
    assert aime_answer("the answer is 1000", "lenient_compat") == 100
    assert lenient_answer("the answer is 1000") is None
    assert aime_answer("the answer is 1000", "lenient") is None


def test_other_modes_defer_to_the_shared_extractor():
    assert aime_answer("\\boxed{070}", "strict") == 70
    assert aime_answer("so the answer is 588.", "strict") is None
    assert aime_answer("so the answer is 588.", "boxed_or_int") == 588
    with pytest.raises(ValueError, match="lenient"):
        aime_answer("1", "nope")  # type: ignore[arg-type]
