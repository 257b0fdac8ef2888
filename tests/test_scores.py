"""A log's score rows: n and errors in one unit, an unreadable score is an error with its reason."""

import math

from harness.logs import LogIdentity, LogRecord, SampleScore, parse_score
from harness.report.scores import error_reasons, judge_scores, score_rows


def _record(raws: list, errors: list[str] | None = None, epochs: int = 1) -> LogRecord:
    errors = errors or [""] * len(raws)
    samples = tuple(
        SampleScore(f"s{i // epochs}", i % epochs + 1, (("match", v),), e, {}, {})
        for i, (v, e) in enumerate(zip(raws, errors, strict=True))
    )
    identity = LogIdentity("toy", "t", (), "h", len(raws) // epochs, "m/x", ())
    return LogRecord("x.eval", identity, "2026-01-01", {}, samples)


def test_unreadable_scores_are_errors_with_their_reason_not_silent_zeros():
    [row] = score_rows(_record(["C", "maybe", None, math.nan, "I"]))
    assert (row.n, row.errors, row.value) == (5, 3, 0.2)
    reasons = error_reasons(_record(["C", "maybe", None, math.nan, "I"]))
    assert sum(reasons.values()) == 3 and any("maybe" in r for r in reasons)


def test_errors_count_problems_like_n_with_epochs():
    # two problems, three epochs each; problem s0 errs on one epoch, s1 on two
    rec = _record(["C", "C", "C", "C", "I", "C"], ["", "boom", "", "boom", "boom", ""], epochs=3)
    rows = {r.metric: r for r in score_rows(rec)}
    assert rows["accuracy"].n == 2 and rows["accuracy"].errors == 2
    assert rows["accuracy"].value == (2 / 3 + 1 / 3) / 2  # errored epochs count as wrong


def test_parse_score_reads_letters_numbers_and_verdicts_and_names_the_rest():
    assert parse_score("C") == (1.0, "") and parse_score("0.25") == (0.25, "")
    assert parse_score(True) == (1.0, "") and parse_score({"judge": 1, "human": -1}) == (1.0, "")
    for bad in (None, "nan", math.inf, "=HYPERLINK(x)", [1]):
        value, reason = parse_score(bad)
        assert value == 0.0 and reason


def test_an_errored_judge_sample_is_a_test_item_judged_wrong():
    verdicts = [({"judge": 1, "human": -1}, False)] * 6 + [
        (None, True),
        ({"judge": 1, "human": 1}, True),
    ]
    verdicts += [({"judge": 1, "human": 1}, False)] * 5 + [({"judge": 0, "human": 0}, False)] * 5
    scores = judge_scores({f"u{i}": [v] for i, v in enumerate(verdicts)})
    assert (scores.n_test, scores.n_calibration, scores.errors) == (8, 10, 2)
    assert scores.naive.estimate == 6 / 8


def test_a_log_with_several_scorers_names_each_ones_accuracy():
    samples = tuple(
        SampleScore(f"s{i}", 1, (("success", a), ("step_sr", b)), "", {}, {})
        for i, (a, b) in enumerate([("C", "I"), ("C", "C"), ("I", "I")])
    )
    identity = LogIdentity("toy", "t", (), "h", 3, "m/x", ())
    rows = score_rows(LogRecord("x.eval", identity, "2026-01-01", {}, samples))
    assert [(r.metric, r.value) for r in rows] == [
        ("accuracy (success)", 2 / 3),
        ("accuracy (step_sr)", 1 / 3),
    ]
    # one scorer keeps the plain name
    assert [r.metric for r in score_rows(_record(["C", "I"]))] == ["accuracy"]
