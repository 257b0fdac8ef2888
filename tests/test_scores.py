"""A log's score rows: n and errors in one unit, an unreadable score is an error with its reason."""

import math

import numpy as np
import pytest

from harness.compare._scores import error_reasons, judge_scores, score_rows
from harness.logs import HUMAN_LABEL_KEY, LogIdentity, LogRecord, SampleScore, parse_score


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


def test_an_errored_labelled_sample_is_calibration_and_an_errored_test_item_is_wrong():
    verdicts = [({"judge": 1, "human": -1}, False)] * 6 + [
        (None, True),  # a test item that errored: judged wrong
        ({"judge": 1, "human": 1}, True),  # labelled, answer errored, judge still ran
        (None, True),  # labelled (named below), judge raised: in neither set
    ]
    verdicts += [({"judge": 1, "human": 1}, False)] * 5 + [({"judge": 0, "human": 0}, False)] * 5
    scores = judge_scores({f"u{i}": [v] for i, v in enumerate(verdicts)}, labelled={"u8"})
    assert (scores.n_test, scores.n_calibration, scores.errors, scores.unjudged) == (7, 11, 1, 1)
    assert scores.naive.estimate == 6 / 7 and scores.corrected.n == 7


def _judged(rng, e: float, n: int, m: int, theta=0.6, q0=0.7, q1=0.9) -> list[tuple]:
    """A calibrated judge's samples: n test, m labelled, each errored with probability e.

    Each is (id, verdict or None, errored, human label or -1). An errored sample was still
    judged (score_on_error) half the time; otherwise its judge raised and it has no verdict.
    """
    truth = rng.random(n + m) < theta
    said = np.where(truth, rng.random(n + m) < q1, rng.random(n + m) < 1 - q0)
    errored = rng.random(n + m) < e
    raised = errored & (rng.random(n + m) < 0.5)
    out = []
    for i in range(n + m):
        human = -1 if i < n else int(truth[i])
        verdict = None if raised[i] else {"judge": int(said[i]), "human": human}
        out.append((f"s{i}", verdict, bool(errored[i]), human))
    return out


def _judged_log(samples: list[tuple]) -> LogRecord:
    """The log the calibrated judge writes: the label also in the metadata, as the scorer does."""
    rows = tuple(
        SampleScore(
            sid,
            1,
            () if verdict is None else (("judge", verdict),),
            "boom" if errored else "",
            {} if human == -1 else {HUMAN_LABEL_KEY: human},
            {},
        )  # fmt: skip
        for sid, verdict, errored, human in samples
    )
    identity = LogIdentity("toy", "t", (), "h", len(rows), "m/x", ())
    return LogRecord("x.eval", identity, "2026-01-01", {}, rows)


def test_errored_labelled_samples_stay_out_of_the_test_set_of_a_log():
    """3,000 test items, 3,000 labelled, 10% errors (the issue's log): truth 0.6 x 0.9 = 0.54.

    The old rule took the ~300 errored labelled samples for test items judged wrong: n 3,3xx
    and the share pulled down by about a tenth.
    """
    log = _judged_log(_judged(np.random.default_rng(40), 0.1, 3000, 3000))
    rows = {r.metric: r for r in score_rows(log)}
    corrected = rows["judge (corrected)"]
    assert corrected.n == 3000 and rows["judge (naive)"].n == 3000
    se = (corrected.ci_high - corrected.ci_low) / (2 * 1.96)
    assert abs(corrected.value - 0.54) <= 4 * se
    assert corrected.ci_low <= 0.54 <= corrected.ci_high


def _coverage(e: float, n: int, m: int, reps: int) -> float:
    rng = np.random.default_rng(400 + round(100 * e) + n)
    truth = 0.6 * (1 - e)  # the share of test items answered and correct
    hits = 0
    for _ in range(reps):
        samples = _judged(rng, e, n, m)
        units = {sid: [(verdict, errored)] for sid, verdict, errored, _ in samples}
        scores = judge_scores(units, {sid for sid, *_, human in samples if human != -1})
        assert scores.corrected.n == n  # the n printed counts test items only
        hits += scores.corrected.low <= truth <= scores.corrected.high
    return hits / reps


@pytest.mark.parametrize("errors", [0.1, 0.3])
def test_corrected_judge_interval_covers_with_errored_labelled_samples(errors):
    """500 reps (Monte-Carlo SE about 0.01): 0.92-0.98; the old rule covered 0.83 at 10%
    errors and 0.30 at 30% (n = m = 300)."""
    assert 0.92 <= _coverage(errors, 300, 300, reps=500) <= 0.98


@pytest.mark.long
@pytest.mark.parametrize(("errors", "n", "m", "top"),
                         [(0.1, 300, 300, 0.96), (0.3, 300, 300, 0.96),
                          (0.1, 80, 40, 0.975), (0.3, 80, 40, 0.975)])  # fmt: skip
def test_corrected_judge_interval_covers_with_errored_labelled_samples_long(errors, n, m, top):
    """4,000 reps (SE about 0.0035). At m = 40 the adjusted-Wald interval is conservative
    (about 0.966, with no errors as well), hence the higher top there."""
    assert 0.94 <= _coverage(errors, n, m, reps=4000) <= top


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
