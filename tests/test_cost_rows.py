"""Cost rows: their arithmetic on logs with known usage and prices, and unknown prices never 0."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.report.cost import cost_row, sample_dollars, sample_tokens
from harness.stats.design import Design


def _record(samples: list[SampleScore], model: str = "m/x") -> LogRecord:
    identity = LogIdentity("arith", "arith", (), "abc", len({s.id for s in samples}), model, ())
    return LogRecord("log.eval", identity, "2026-01-01", {}, tuple(samples))


def _sample(sid: str, epoch: int, value: str, usage: dict, seconds: float) -> SampleScore:
    return SampleScore(sid, epoch, (("match", value),), "", {}, usage, working_time=seconds)


def test_tokens_sum_models_and_cache_and_report_reasoning_where_given():
    usage = {
        "a/x": {"input_tokens": 10, "input_tokens_cache_read": 5, "input_tokens_cache_write": 2,
                "output_tokens": 7, "reasoning_tokens": 3, "total_cost": 0.5},
        "b/y": {"input_tokens": 1, "output_tokens": 1, "total_cost": 0.25},
    }  # fmt: skip
    tokens = sample_tokens(usage)
    assert tokens == {"input": 18.0, "output": 8.0, "reasoning": 3.0, "total": 26.0}
    assert sample_dollars(usage) == 0.75
    assert math.isnan(sample_tokens({"b/y": usage["b/y"]})["reasoning"])  # not reported
    del usage["b/y"]["total_cost"]
    assert math.isnan(sample_dollars(usage))  # one model unpriced: unknown, not 0.5
    assert sample_dollars({}) == 0.0  # no call: nothing spent


def test_cost_row_is_per_problem_over_epochs():
    # problem p, epoch e: 100 * (p + 1) input tokens, e output tokens, $ = 1e-6 * tokens
    samples = []
    for p in range(40):
        for e in (1, 2):
            tin, tout = 100 * (p + 1), e
            usage = {"m/x": {"input_tokens": tin, "output_tokens": tout,
                             "total_cost": 1e-6 * (tin + tout)}}  # fmt: skip
            samples.append(_sample(f"p{p}", e, "C" if p % 2 == 0 else "I", usage, 0.5 * e))
    row = cost_row([_record(samples)], Design())
    assert row.n == 40 and row.unit == "problem"
    assert row.tokens["input"].estimate == pytest.approx(100 * 41 / 2)  # mean of 100..4000
    assert row.tokens["output"].estimate == pytest.approx(1.5)  # each problem's mean epoch
    assert row.tokens["input"].n == 40  # the interval runs over problems, not sample-epochs
    dollars = 1e-6 * (100 * 41 / 2 + 1.5)
    assert row.dollars.estimate == pytest.approx(dollars, rel=1e-12)
    assert row.dollars.low < dollars < row.dollars.high
    # $ per correct: mean $ over all problems / mean correct (half the problems are correct)
    assert row.per_correct.estimate == pytest.approx(dollars / 0.5, rel=1e-12)
    assert row.per_correct.low < row.per_correct.estimate < row.per_correct.high
    assert row.seconds.estimate == pytest.approx(0.75)
    assert math.isnan(row.ttft.estimate) and "not reported" in row.ttft.method


def test_an_unpriced_model_reads_unknown_never_zero():
    samples = [_sample(f"p{i}", 1, "C", {"m/x": {"input_tokens": 3, "output_tokens": 1}}, 0.1)
               for i in range(40)]  # fmt: skip
    row = cost_row([_record(samples)], Design())
    assert math.isnan(row.dollars.estimate) and row.dollars.method.startswith("unknown")
    assert "m/x" in row.dollars.method and math.isnan(row.per_correct.estimate)
    assert row.tokens["input"].estimate == 3.0


def test_per_correct_is_not_estimable_below_its_thresholds():
    samples = [_sample(f"p{i}", 1, "C" if i < 5 else "I",
                       {"m/x": {"input_tokens": 3, "output_tokens": 1, "total_cost": 0.01}}, 0.1)
               for i in range(40)]  # fmt: skip
    row = cost_row([_record(samples)], Design())
    assert row.per_correct.estimate == pytest.approx(0.01 / (5 / 40))
    assert not row.per_correct.estimable and "not estimable" in row.per_correct.method


@pytest.mark.slow
def test_eval_prices_through_inspect_with_a_cost_config(tmp_path: Path):
    """A real run: inspect prices each call from --model-cost-config; the row's arithmetic."""
    from harness.cli.run import EvalRequest, run_eval_records
    from harness.errors import HarnessUsageError

    prices = tmp_path / "prices.yaml"
    prices.write_text("scripted/priced:\n  input: 3.0\n  output: 15.0\n"
                      "  input_cache_write: 0\n  input_cache_read: 0\n")  # fmt: skip
    request = EvalRequest(suite="arith", models=("scripted/priced", "scripted/free"),
                          model_args={"answer": "7 8"}, limit=6, log_dir=str(tmp_path / "logs"),
                          display="none", model_cost_config=str(prices))  # fmt: skip
    ok, _, records = run_eval_records(request)
    assert ok
    rows = {r.identity.model: cost_row([r]) for r in records}
    priced, free = rows["scripted/priced"], rows["scripted/free"]
    # scripted/ counts words: arith's prompt is one word ("96-91="), the answer two
    assert priced.tokens["input"].estimate == 1.0 and priced.tokens["output"].estimate == 2.0
    assert priced.dollars.estimate == pytest.approx((1 * 3.0 + 2 * 15.0) / 1e6, rel=1e-12)
    assert math.isnan(free.dollars.estimate) and "scripted/free" in free.dollars.method
    assert priced.seconds.estimate > 0 and priced.manifest  # working time and the manifest
    with pytest.raises(HarnessUsageError, match="--cost-limit needs a price"):
        run_eval_records(EvalRequest(suite="arith", models=("scripted/other",), limit=2,
                                     log_dir=str(tmp_path / "l2"), display="none",
                                     cost_limit=0.01))  # fmt: skip
    prices.write_text("scripted/priced: {input: 1}\n")
    with pytest.raises(HarnessUsageError, match="entry 'scripted/priced' is not a ModelCost"):
        run_eval_records(request)
