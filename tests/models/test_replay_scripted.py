"""`replay/` from an inspect log and a JSONL file; `scripted/` token usage."""

import asyncio
import json

import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.model import get_model

from harness.errors import HarnessUsageError
from harness.eval import EvalRequest, run
from harness.models.recorded import load_recorded


def eval_arith(model: str, tmp_path, sub: str, **model_args):
    ok, rows, _ = run(
        EvalRequest(
            suite="arith",
            models=(model,),
            task_args={"n": 20, "difficulty": 1},
            model_args=model_args,
            log_dir=str(tmp_path / sub),
            display="none",
        )
    )
    assert ok
    return rows[0]


def test_replaying_a_log_reproduces_its_scores(tmp_path):
    answers = tmp_path / "a.jsonl"
    # right answers for the first 12 problems of the seeded task, wrong for the rest
    from harness.suites.arith.task import arith

    samples = arith(n=20, difficulty=1).dataset
    answers.write_text(
        "\n".join(
            json.dumps({"id": s.id, "output": s.target if i < 12 else "999"})
            for i, s in enumerate(samples)
        )
    )
    first = eval_arith(f"replay/{answers}", tmp_path, "one")
    assert first.value == pytest.approx(12 / 20)
    again = eval_arith(f"replay/{first.log.removeprefix('file://')}", tmp_path, "two")
    assert (again.value, again.errors) == (first.value, 0)


def test_scripted_reports_token_usage(tmp_path):
    row = eval_arith("scripted/u", tmp_path, "u", answer="forty two")
    log = read_eval_log(row.log)
    usage = log.samples[0].output.usage
    assert usage.input_tokens == 1 and usage.output_tokens == 2 and usage.total_tokens == 3
    assert log.stats.model_usage  # inspect aggregates the usage we report


def test_scripted_without_harness_task_uses_default():
    model = get_model("scripted/plain", answer="hello")
    out = asyncio.run(model.generate("hi"))
    assert out.completion == "hello"


def test_recorded_outputs_validation(tmp_path):
    with pytest.raises(HarnessUsageError, match="not found"):
        load_recorded(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "output": "ok"}\nnot json\n')
    with pytest.raises(HarnessUsageError, match="line 2"):
        load_recorded(str(bad))
