"""`pdr/` and `sr/` through inspect with the scripted provider: calls, budgets, errors."""

from __future__ import annotations

import pytest
from inspect_ai.log import read_eval_log

from harness.errors import HarnessUsageError
from harness.eval import EvalRequest, build_models, run
from harness.models.methods.prompts import PROMPT_VERSION


def _eval(tmp_path, model: str, limit: int = 4, **model_args):
    ok, rows, _ = run(
        EvalRequest(
            suite="arith",
            models=(model,),
            limit=limit,
            log_dir=str(tmp_path / model.replace("/", "_")),
            model_args=model_args,
            display="none",
        )
    )
    (row,) = rows
    return ok, row, read_eval_log(row.log)


def _inner_events(sample, inner="scripted/x"):
    return [e for e in sample.events if e.event == "model" and e.model == inner]


def test_pdr_calls_budgets_and_workspaces(tmp_path):
    ok, row, log = _eval(tmp_path, "pdr/scripted/x", rounds="4,2,1", workspace_tokens=15,
                         inner_echo=True)  # fmt: skip
    assert ok and row.n == 4 and row.errors == 0
    assert (
        log.eval.metadata["harness_methods"]["pdr/scripted/x"]["prompt_version"] == PROMPT_VERSION
    )
    for sample in log.samples:
        assert len(_inner_events(sample)) == 4 + 1 + 2 + 1 + 1
        md = sample.metadata
        assert md["method"] == "pdr" and md["method_prompts"] == PROMPT_VERSION
        usage = sample.model_usage["scripted/x"]
        # B_total is every inner call: exactly what the inner model reported
        assert md["budget_total_io"] == usage.input_tokens + usage.output_tokens
        assert md["budget_total_out"] == usage.output_tokens
        assert md["budget_calls"] == 9
        rounds = sample.output.metadata["harness_method"]["rounds"]
        assert md["method_detail"]["rounds"] == rounds  # per-round drafts in sample metadata
        seq = sum(
            max(d["input_tokens"] + d["output_tokens"] for d in r["drafts"])
            + max((d["input_tokens"] + d["output_tokens"] for d in r["distill"]), default=0)
            for r in rounds
        )
        assert md["budget_seq_io"] == seq < md["budget_total_io"]
        # echo makes long summaries; every workspace is cut at kappa = 15 words
        for r in rounds[1:]:
            assert all(0 < len(ws.split()) <= 15 for ws in r["workspaces"])
        # the answer is the single last-round draft
        assert sample.output.completion == rounds[-1]["drafts"][0]["text"]


def test_sr_is_pdr_with_one_draft_per_round(tmp_path):
    _, _, sr = _eval(tmp_path, "sr/scripted/x", rounds=3, inner_echo=True)
    _, _, pdr = _eval(tmp_path, "pdr/scripted/x", rounds="1,1,1", inner_echo=True)
    for a, b in zip(sr.samples, pdr.samples, strict=True):
        assert a.output.completion == b.output.completion
        keys = [k for k in a.metadata if k.startswith("budget_")]
        assert [a.metadata[k] for k in keys] == [b.metadata[k] for k in keys]
        assert len(_inner_events(a)) == 5


def test_one_failed_draft_is_recorded_and_the_sample_goes_on(tmp_path):
    # seed 1001 is round 1's second draft in every sample
    ok, row, log = _eval(tmp_path, "pdr/scripted/x", rounds="3,1", inner_answer="7",
                         inner_fail_seeds=1001)  # fmt: skip
    assert ok and row.errors == 0
    for sample in log.samples:
        drafts = sample.output.metadata["harness_method"]["rounds"][0]["drafts"]
        assert [d["error"] is not None for d in drafts] == [False, True, False]
        assert "seed 1001" in drafts[1]["error"]
        assert sample.metadata["budget_failed"] == 1 and sample.metadata["budget_calls"] == 5


def test_a_round_with_every_draft_failed_fails_that_sample_alone(tmp_path):
    ok, row, log = _eval(tmp_path, "pdr/scripted/x", rounds="2,1", inner_answer="7",
                         inner_fail="arith-2")  # fmt: skip
    assert row.n == 4 and row.errors == 1
    errored = [s.id for s in log.samples if s.error]
    assert errored == ["arith-2"] and "all 2 drafts of round 1" in log.samples[1].error.message


@pytest.mark.parametrize(
    ("spec", "args", "message"),
    [
        ("pdr/scripted/x", {"rounds": "4,2"}, "last round must have one draft"),
        ("pdr/scripted/x", {"rounds": "a,b"}, "rounds must be positive integers"),
        ("pdr/scripted/x", {"distill": "best"}, "distill must be one of"),
        ("pdr/scripted/x", {"batch_size": 3}, "inner_NAME"),
        ("sr/scripted/x", {"rounds": "3,1"}, "one positive integer"),
        ("sr/scripted/x", {"workspace": "all"}, "summary or verbatim"),
        ("pdr/x", {}, "pdr/PROVIDER/NAME"),
    ],
)
def test_bad_arguments_are_usage_errors(spec, args, message):
    with pytest.raises(HarnessUsageError, match=message):
        build_models((spec,), args, None)


def test_pdr_and_sr_run_on_tiny_arith(tmp_path):
    # the real local model end to end (trained on first use, then cached); its context is 64
    # characters, so prompts keep their tail (truncate=left)
    for spec, rounds in (("pdr/local/tiny-arith", "2,1"), ("sr/local/tiny-arith", 2)):
        ok, row, log = _eval(tmp_path, spec, limit=6, rounds=rounds, inner_truncate="left")
        assert ok and row.n == 6 and row.errors == 0
        for sample in log.samples:
            assert sample.metadata["budget_total_io"] >= sample.metadata["budget_seq_io"] > 0
            assert sample.metadata["method_detail"]["token_counter"].startswith("tokenizer:")


def test_pdr_aime_plumbing(tmp_path, data_dir):
    # specs/pdr.md §5.3: PDR (2, 1) on the 30 AIME 2025 problems; the record carries the
    # problem id, schedule, both budgets, per-call token logs and correctness
    import json

    from harness.suites.aime import aime2025

    samples = list(aime2025(data_dir=str(data_dir)).dataset)
    outputs = tmp_path / "drafts.jsonl"
    answers = {s.id: (s.target if i % 2 else "1") for i, s in enumerate(samples)}
    outputs.write_text("\n".join(
        json.dumps({"id": sid, "output": f"Work. \\boxed{{{a}}}"}) for sid, a in answers.items()
    ))  # fmt: skip
    ok, rows, _ = run(
        EvalRequest(
            suite="aime",
            models=("pdr/scripted/x",),
            task_args={},
            model_args={"rounds": "2,1", "inner_outputs": str(outputs)},
            log_dir=str(tmp_path / "logs"),
            data_dir=str(data_dir),
            display="none",
        )
    )
    row = next(r for r in rows if r.task == "aime2025")
    assert row.n == 30 and row.errors == 0 and row.value == 0.5
    log = read_eval_log(row.log)
    by_id = {s.id: s for s in samples}
    assert sorted(s.id for s in log.samples) == sorted(by_id)
    for sample in log.samples:
        original = by_id[sample.id]
        md = sample.metadata
        assert md["method_detail"]["schedule"] == [2, 1]
        assert md["budget_total_io"] > md["budget_seq_io"] > 0
        calls = [c for r in md["method_detail"]["rounds"] for c in r["drafts"] + r["distill"]]
        assert len(calls) == 4 and all(c["input_tokens"] > 0 < c["output_tokens"] for c in calls)
        correct = sample.scores["math_answer"].value == "C"
        assert correct == (answers[sample.id] == original.target)
