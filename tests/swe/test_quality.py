"""The task-quality filter: verdict parsing, majority and ties, agreement, and the ensemble.

Judges are `scripted/NAME` models: `answer=` gives one fixed text, and `outputs=` a JSONL file
keyed by instance id (each judge call is bound to its task's id).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from inspect_ai.model import get_model
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

from harness.stats._agreement import fleiss_kappa
from harness.suites.swe_rebench.quality import (
    ISSUE_CODES,
    QUALITY_PROMPT_VERSION,
    SOUND_CODE,
    EnsembleResult,
    authors_code,
    classify_tasks,
    drop_flagged,
    judge_task,
    majority_code,
    parse_verdict,
    render_prompt,
)
from harness.suites.swe_rebench.task_format import SweTask, load_tasks


@pytest.fixture
def sample(data_dir: Path) -> SweTask:
    (task,) = load_tasks(data_dir / "swe" / "swe-rebench-v2-sample.json")
    return task


def _copies(task: SweTask, n: int) -> list[SweTask]:
    return [dataclasses.replace(task, instance_id=f"t{i}") for i in range(1, n + 1)]


def _answer(code: str) -> str:
    return f"The tests match the statement.\nCODE: {code}"


def _fixed(name: str, text: str):
    return get_model(f"scripted/{name}", answer=text)


def _per_task(tmp_path: Path, name: str, answers: dict[str, str]):
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": k, "output": v}) + "\n" for k, v in answers.items()))
    return get_model(f"scripted/{name}", outputs=str(path), answer="no answer for this task")


def _run(models, tasks, **kwargs) -> EnsembleResult:
    return asyncio.run(classify_tasks(models, tasks, **kwargs))


def test_codes_are_the_specs_a_and_b1_to_b11():
    assert [c.code for c in ISSUE_CODES] == ["A"] + [f"B{i}" for i in range(1, 12)]
    names = {c.code: c.name for c in ISSUE_CODES}
    assert names["B1"] == "test-suite coupling" and names["B11"] == "multi-issue PR"
    assert all(c.description for c in ISSUE_CODES)
    assert SOUND_CODE == "A"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("reasoning\nCODE: B3", "B3"),
        ("**CODE: b10**", "B10"),
        ("  code :  A.  ", "A"),
        ("`CODE: B11`", "B11"),
        ("CODE: A\nOn reflection...\nCODE: B4", "B4"),  # the last line wins
        ("CODE: A\nCODE: B12", None),  # an invalid final answer is not replaced by an earlier one
        ("CODE: B0", None),
        ("The task is sound.", None),
        ("", None),
        ("CODE: A or B2", None),
    ],
)
def test_parse_verdict(text, code):
    assert parse_verdict(text) == code


def test_prompt_shows_the_task_and_hides_the_pr_text(sample):
    task = dataclasses.replace(sample, pr_description="SECRET-PR-TEXT")
    prompt = render_prompt(task)
    assert task.repo in prompt and task.problem_statement[:200] in prompt
    assert task.test_patch[:500] in prompt and task.patch[:300] in prompt
    assert all(name in prompt for name in task.fail_to_pass)
    assert f"FAIL_TO_PASS tests ({len(task.fail_to_pass)})" in prompt
    assert "SECRET-PR-TEXT" not in prompt
    assert all(f"- {c.code} ({c.name})" in prompt for c in ISSUE_CODES)
    hidden = render_prompt(task, include_gold_patch=False)
    assert task.patch[:300] not in hidden and "Gold patch" not in hidden
    # the answer-format line of the prompt itself must not parse as a code
    assert parse_verdict(prompt) is None


def test_prompt_clips_long_fields(sample):
    prompt = render_prompt(sample, max_chars=100)
    assert sample.test_patch[:100] in prompt and sample.test_patch[:101] not in prompt
    assert f"[{len(sample.test_patch) - 100} more characters not shown]" in prompt
    with pytest.raises(ValueError, match="max_chars"):
        render_prompt(sample, max_chars=0)


@pytest.mark.parametrize(
    ("votes", "majority", "tied"),
    [
        (["A", "A", "A"], "A", False),
        (["A", "B3", "B3"], "B3", False),
        (["A", "A", "B3"], "A", False),
        (["A", "B3"], "B3", True),  # ties go to a B-code over A
        (["B4", "B2"], "B2", True),  # and between B-codes to the first listed
        (["B10", "B9", "A"], "B9", True),
        (["A", "A", "B1", "B1"], "B1", True),
        (["A", None, "B5"], "B5", True),  # abstentions do not vote
        ([None, None], None, False),
    ],
)
def test_majority_code(votes, majority, tied):
    assert majority_code(votes) == (majority, tied)


def test_majority_code_rejects_unknown_codes():
    with pytest.raises(ValueError, match="B12"):
        majority_code(["A", "B12"])


def test_unanimous_sound_is_not_flagged(sample):
    judges = [_fixed(f"sound{i}", _answer("A")) for i in range(3)]
    result = _run(judges, [sample])
    (votes,) = result.tasks
    assert [v.code for v in votes.verdicts] == ["A", "A", "A"]
    assert votes.majority == "A" and not votes.flagged and not votes.tied
    assert result.flagged.estimate == 0.0 and result.flagged.n == 1
    assert result.pairwise_agreement == 1.0 and result.n_pairs == 3
    # one category only: chance agreement is 1, so kappa is undefined and says why
    assert math.isnan(result.fleiss_kappa) and "chance agreement" in result.kappa_note
    assert drop_flagged([sample], result) == [sample]


def test_two_of_three_b_code_flag_the_task(sample):
    judges = [
        _fixed("x1", _answer("B3")),
        _fixed("x2", _answer("A")),
        _fixed("x3", "Network access is needed.\n**CODE: B3**"),
    ]
    result = _run(judges, [sample])
    (votes,) = result.tasks
    assert votes.majority == "B3" and votes.flagged and not votes.tied
    assert result.judges == ("scripted/x1", "scripted/x2", "scripted/x3")
    assert [v.judge for v in votes.verdicts] == list(result.judges)
    assert result.flagged.estimate == 1.0
    assert drop_flagged([sample], result) == []


def test_a_tie_between_sound_and_an_issue_flags(sample):
    result = _run([_fixed("t1", _answer("A")), _fixed("t2", _answer("B4"))], [sample])
    (votes,) = result.tasks
    assert votes.majority == "B4" and votes.tied and votes.flagged


def test_unparseable_answers_abstain_and_are_counted(sample):
    tasks = _copies(sample, 2)
    judges = [
        _fixed("p1", _answer("A")),
        _fixed("p2", "I am not sure."),
        _per_task(Path.cwd(), "p3", {"t1": _answer("B2"), "t2": "CODE: maybe"}),
    ]
    result = _run(judges, tasks)
    first, second = result.tasks
    assert [v.code for v in first.verdicts] == ["A", None, "B2"]
    assert first.majority == "B2" and first.tied  # 1 vs 1 after the abstention
    assert [v.code for v in second.verdicts] == ["A", None, None]
    assert second.majority == "A" and not second.flagged
    assert first.verdicts[1].completion == "I am not sure."
    assert result.abstentions == 3 and result.errors == 0
    # no task was answered by all three judges, so kappa has nothing to work on
    assert result.kappa_tasks == 0 and math.isnan(result.fleiss_kappa)
    assert result.kappa_note == "no task was answered by every judge"
    assert result.n_pairs == 1 and result.pairwise_agreement == 0.0


def test_all_abstaining_leaves_a_task_unjudged(sample):
    tasks = _copies(sample, 2)
    judges = [_per_task(Path.cwd(), f"u{i}", {"t1": _answer("A")}) for i in range(2)]
    result = _run(judges, tasks)
    assert result.tasks[1].majority is None and not result.tasks[1].flagged
    assert result.n_unjudged == 1 and result.flagged.n == 1  # t2 is not in the denominator
    assert drop_flagged(tasks, result) == tasks[:1]
    assert drop_flagged(tasks, result, keep_unjudged=True) == tasks


def test_failed_calls_abstain_and_are_counted_as_errors(sample):
    tasks = _copies(sample, 2)
    failing = get_model("scripted/f1", answer=_answer("A"), fail="t2")
    result = _run([failing, _fixed("f2", _answer("A"))], tasks)
    bad = result.tasks[1].verdicts[0]
    assert bad.code is None and "scripted failure" in bad.error
    assert result.errors == 1 and result.abstentions == 0
    assert result.tasks[1].majority == "A"
    assert "failed calls: 1" in result.summary()


def test_fleiss_kappa_hand_computed():
    # subjects x (A, B1); 3 raters. P_i = 1, 1/3, 1 -> P = 7/9; shares 5/9, 4/9 -> Pe = 41/81;
    # kappa = (7/9 - 41/81) / (1 - 41/81) = 22/40 = 0.55
    table = [[3, 0], [2, 1], [0, 3]]
    assert fleiss_kappa(table) == pytest.approx(0.55, abs=1e-12)
    assert sm_fleiss_kappa(np.array(table), method="fleiss") == pytest.approx(0.55, abs=1e-12)


def test_fleiss_kappa_matches_statsmodels():
    rng = np.random.default_rng(7)
    for raters, categories in [(2, 3), (3, 12), (5, 4)]:
        table = np.stack(
            [
                np.bincount(rng.integers(0, categories, raters), minlength=categories)
                for _ in range(30)
            ]
        )
        # statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")
        expected = sm_fleiss_kappa(table, method="fleiss")
        assert fleiss_kappa(table.tolist()) == pytest.approx(expected, abs=1e-12)


def test_fleiss_kappa_rejects_bad_tables():
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [1, 2]])
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[1, 0]])
    with pytest.raises(ValueError, match="at least one"):
        fleiss_kappa([])
    assert math.isnan(fleiss_kappa([[3, 0], [3, 0]]))


def test_ensemble_agreement_and_flagged_share(sample, tmp_path):
    # the hand-computed table above, made by three judges on three tasks
    tasks = _copies(sample, 3)
    plans = [
        {"t1": "A", "t2": "A", "t3": "B1"},
        {"t1": "A", "t2": "A", "t3": "B1"},
        {"t1": "A", "t2": "B1", "t3": "B1"},
    ]
    judges = [
        _per_task(tmp_path, f"k{j}", {k: _answer(v) for k, v in plan.items()})
        for j, plan in enumerate(plans)
    ]
    result = _run(judges, tasks, max_concurrency=2)
    assert [t.majority for t in result.tasks] == ["A", "A", "B1"]
    assert [t.flagged for t in result.tasks] == [False, False, True]
    assert result.fleiss_kappa == pytest.approx(0.55, abs=1e-12) and result.kappa_tasks == 3
    assert result.kappa_note is None
    assert result.pairwise_agreement == pytest.approx(7 / 9) and result.n_pairs == 9
    low, high = proportion_confint(1, 3, alpha=0.05, method="wilson")
    assert result.flagged.estimate == pytest.approx(1 / 3)
    assert (result.flagged.low, result.flagged.high) == pytest.approx((low, high), abs=1e-12)
    assert result.flagged.method == "wilson"
    assert drop_flagged(tasks, result) == tasks[:2]
    assert result.prompt_version == QUALITY_PROMPT_VERSION


def test_classify_rejects_bad_input(sample):
    with pytest.raises(ValueError, match="at least one judge"):
        _run([], [sample])
    with pytest.raises(ValueError, match="distinct"):
        _run([_fixed("d", _answer("A")), _fixed("d", _answer("A"))], [sample])
    with pytest.raises(ValueError, match="instance ids"):
        _run([_fixed("d", _answer("A"))], [sample, sample])


def test_drop_flagged_rejects_unclassified_tasks(sample):
    result = _run([_fixed("o", _answer("A"))], [sample])
    other = dataclasses.replace(sample, instance_id="other")
    with pytest.raises(ValueError, match="other"):
        drop_flagged([other], result)


def test_judge_task_sends_the_prompt(sample):
    echo = get_model("scripted/echo", echo=True)
    verdict = asyncio.run(judge_task(echo, sample, include_gold_patch=False))
    assert verdict.completion == render_prompt(sample, include_gold_patch=False)
    assert verdict.code is None and verdict.error is None
    assert verdict.instance_id == sample.instance_id and verdict.judge == "scripted/echo"


def test_shipped_sample_end_to_end(data_dir):
    tasks = load_tasks(data_dir / "swe" / "swe-rebench-v2-sample.json")
    assert authors_code(tasks[0]) == "A"  # the authors' own annotation of the fixture
    specs = ["scripted/e1", "scripted/e2", "scripted/e3"]
    answers = [_answer("A"), _answer("A"), _answer("B4")]
    judges = [get_model(s, answer=a) for s, a in zip(specs, answers, strict=True)]
    result = _run(judges, tasks)
    (votes,) = result.tasks
    assert votes.instance_id == "unidata__netcdf-c-1925"
    assert votes.majority == "A" and not votes.flagged
    assert result.pairwise_agreement == pytest.approx(1 / 3)
    assert drop_flagged(tasks, result) == tasks
    text = result.summary()
    assert "flagged: 0.000" in text and "scripted/e3" in text
    assert result.summary("html").startswith("<ul>")
    with pytest.raises(ValueError, match="fmt"):
        result.summary("md")  # type: ignore[arg-type]
