"""`harness eval` against an OpenAI-compatible server that fails one request in five.

The run goes through inspect's `openai-api/` provider with `--max-retries`, `--attempt-timeout` and
`--max-connections` passed through, and the OpenAI SDK's own retries off (`-M max_retries=0`), so
that every attempt is one of inspect's and the server's count of attempts is the whole story.
"""

from __future__ import annotations

from collections import Counter

import pytest
from click.testing import CliRunner
from inspect_ai.log import read_eval_log

from harness.cli import main
from harness.suites.arith.task import arith
from harness.testing.fault_server import KINDS, FaultRates, fault_server
from tests.api.helpers import harness_eval, model_spec, point_at

MAX_RETRIES = 2  # three attempts in all
DOOMED = ("arith-7", "arith-31")  # samples whose every attempt fails
FLAGS = ["--max-retries", str(MAX_RETRIES), "--attempt-timeout", "2", "--max-connections", "60"]


def _samples(location: str) -> dict[str, object]:
    return {str(s.id): s for s in read_eval_log(location).samples or []}


# slow (25-80 s on 2 cores), which `make test` and CI run; a 60-sample copy in the quick run
# only repeated it there
@pytest.mark.slow
@pytest.mark.parametrize("n", [pytest.param(300, id="300-samples")])
def test_faults_lose_no_sample_and_change_no_score_but_the_errored(tmp_path, monkeypatch, n):
    task = ["--suite", "arith", "-T", f"n={n}", "-T", "difficulty=3"]
    prompts = {str(s.id): str(s.input) for s in arith(difficulty=3, n=n).dataset}
    assert len(set(prompts.values())) == n  # one server-side sample key per sample
    doomed = frozenset(prompts[sid] for sid in DOOMED)

    with fault_server(api_key="k") as clean:
        point_at(monkeypatch, clean.base_url, "k")
        model = ["--model", model_spec(clean.port), "--max-retries", str(MAX_RETRIES)]
        [baseline] = harness_eval(tmp_path / "clean", *task, *model)
    with fault_server(FaultRates.uniform(0.2), seed=0, api_key="k", always_fail=doomed) as server:
        point_at(monkeypatch, server.base_url, "k")
        [row] = harness_eval(
            tmp_path / "faulty",
            *task,
            "--model",
            model_spec(server.port),
            "-M",
            "max_retries=0",
            *FLAGS,
        )
    stats = server.stats()

    before, after = _samples(baseline["log"]), _samples(row["log"])
    # no sample lost or duplicated
    assert sorted(after) == sorted(prompts) and len(after) == n
    # faults happened: every kind in the long run
    assert sum(stats.faults.values()) > n // 10, stats.faults
    if n >= 300:
        assert all(stats.faults[k] > 0 for k in KINDS), stats.faults
    # retries bounded: at most 1 + MAX_RETRIES attempts, and exactly that for the doomed
    attempts = stats.attempts()
    assert max(attempts.values()) == 1 + MAX_RETRIES
    assert all(attempts[p] == 1 + MAX_RETRIES for p in doomed)
    assert sum(attempts.values()) == stats.requests > n
    # the log records each attempt as a model event of its sample
    for sid, sample in after.items():
        events = [e for e in sample.events if e.event == "model"]
        assert len(events) == attempts[prompts[sid]], sid
    # errored: exactly the samples whose last attempt failed (retries exhausted, or malformed
    # JSON, which inspect does not retry); each counted in `errors` and scored wrong
    errored = {sid for sid, s in after.items() if s.error is not None}
    assert errored == {sid for sid, p in prompts.items() if p in stats.unanswered()}
    assert set(DOOMED) <= errored
    assert row["errors"] == len(errored) and baseline["errors"] == 0
    assert all(after[sid].scores["first_integer_match"].value == "I" for sid in errored)
    # every other sample scored as in the fault-free run, so the summary differs by the errored
    for sid in set(prompts) - errored:
        ours, theirs = after[sid].scores["first_integer_match"], before[sid].scores
        assert ours.value == theirs["first_integer_match"].value, sid
    correct_lost = sum(before[s].scores["first_integer_match"].value == "C" for s in errored)
    assert row["value"] == pytest.approx(baseline["value"] - correct_lost / n)
    # inspect's settings arrived under inspect's names
    config = read_eval_log(row["log"], header_only=True).plan.config
    assert (config.max_retries, config.attempt_timeout, config.max_connections) == (2, 2, 60)
    print(  # the figures for docs/validation/api-faults.md (pytest -s)
        f"samples={n} requests={stats.requests} faults={dict(stats.faults)} "
        f"attempts={dict(Counter(attempts.values()))} errors={row['errors']} "
        f"lost={n - len(after)} score={row['value']:.4f} fault_free={baseline['value']:.4f}"
    )


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-retries", "-1"), ("--timeout", "0"), ("--attempt-timeout", "0"),
     ("--max-connections", "0")],
)  # fmt: skip
def test_a_bad_retry_setting_is_a_usage_error(tmp_path, flag, value):
    result = CliRunner().invoke(
        main, ["eval", "--suite", "arith", "--model", "scripted/x", "--log-dir", str(tmp_path),
               flag, value],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert flag in result.output
