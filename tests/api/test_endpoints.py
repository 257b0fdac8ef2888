"""One `harness eval` against two OpenAI-compatible servers, as against vLLM on two GPU nodes.

Two fault servers stand for the nodes, reached as two services of inspect's `openai-api`
provider (`NODEA_BASE_URL`, `NODEB_BASE_URL`, each with its own key), and each fails some
requests in a way that is retried. inspect gives a model one base URL, so one model spread over
both nodes needs a load balancer in front of them; `harness.testing.round_robin` is one.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections import Counter

import pytest
from inspect_ai.log import read_eval_log

from harness.suites.arith.task import arith
from harness.testing.fault_server import FaultRates, exact_answer, fault_server
from harness.testing.round_robin import round_robin
from tests.api.helpers import harness_eval

N = 30
# faults that inspect retries (no malformed JSON, which it does not), at 5% each, so with three
# retries every sample gets its answer and the scores are the fault-free ones
RATES = FaultRates(rate_limit_retry_after=0.05, http_503=0.05, reset=0.05)
# with these, on the 30 samples (their messages as inspect sends them), each server draws every
# one of the three kinds and no sample fails twice, which would wait 6-9 s more to be retried
SEEDS = (15, 34)
TASK = ["--suite", "arith", "-T", f"n={N}", "-T", "difficulty=3"]
# -M max_retries=0: the OpenAI SDK's own retries off, so each request a server sees is an attempt
FLAGS = ["-M", "max_retries=0", "--max-retries", "3", "--attempt-timeout", "5"]
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, always direct


def fault_free_score() -> float:
    """The score of the fault server's exact answers on the task's samples."""
    samples = arith(difficulty=3, n=N).dataset
    return sum(exact_answer(str(s.input)) == s.target for s in samples) / N


def assert_fault_free(row: dict) -> None:
    """The row and each sample of its log score as the exact answers would with no fault."""
    assert (row["n"], row["errors"]) == (N, 0), row
    assert row["value"] == pytest.approx(fault_free_score())
    for sample in read_eval_log(row["log"]).samples or []:
        right = exact_answer(str(sample.input)) == sample.target
        assert sample.scores["first_integer_match"].value == ("C" if right else "I"), sample.id


def test_two_servers_two_model_specs_in_one_run(tmp_path, monkeypatch):
    with (
        fault_server(RATES, seed=SEEDS[0], api_key="key-a") as a,
        fault_server(RATES, seed=SEEDS[1], api_key="key-b") as b,
    ):
        monkeypatch.setenv("NODEA_BASE_URL", a.base_url)
        monkeypatch.setenv("NODEA_API_KEY", "key-a")
        monkeypatch.setenv("NODEB_BASE_URL", b.base_url)
        monkeypatch.setenv("NODEB_API_KEY", "key-b")
        # the port in the model name: inspect memoizes a model by name within a process
        specs = {
            a: f"openai-api/nodea/tiny-arith-{a.port}",
            b: f"openai-api/nodeb/tiny-arith-{b.port}",
        }
        rows = harness_eval(tmp_path, *TASK, "--model", specs[a], "--model", specs[b], *FLAGS)
    assert sorted(r["model"].split(" ")[0] for r in rows) == sorted(specs.values())
    for row in rows:
        assert_fault_free(row)
    for server, spec in specs.items():
        stats = server.stats()
        # each server saw its own model's requests only (the key it checks is that service's),
        # every sample of it, and each retry of a fault on it
        assert stats.models == {spec.rsplit("/", 1)[1]: stats.requests}
        assert len(stats.outcomes) == N
        assert {k for k, v in stats.faults.items() if v} == {
            k for k, v in RATES.as_dict().items() if v
        }
        assert stats.requests == N + sum(stats.faults.values())
        print(  # the figures for docs/validation/api-faults.md (pytest -s)
            f"{spec}: samples={len(stats.outcomes)} requests={stats.requests} "
            f"faults={ {k: v for k, v in stats.faults.items() if v} } "
            f"attempts={dict(Counter(len(v) for v in stats.outcomes.values()))}"
        )


def test_a_round_robin_proxy_spreads_one_model_over_two_servers(tmp_path, monkeypatch):
    with (
        fault_server(api_key="k") as a,
        fault_server(api_key="k") as b,
        round_robin([a.base_url, b.base_url]) as proxy,
    ):
        monkeypatch.setenv("POOL_BASE_URL", proxy.base_url)
        monkeypatch.setenv("POOL_API_KEY", "k")
        spec = f"openai-api/pool/tiny-arith-{proxy.port}"
        [row] = harness_eval(tmp_path, *TASK, "--model", spec, *FLAGS)
    assert_fault_free(row)
    one, other = a.stats(), b.stats()
    # turn about: half the samples each, no sample on both
    assert list(proxy.counts().values()) == [one.requests, other.requests] == [N // 2, N // 2]
    prompts = [set(s.prompts.values()) for s in (one, other)]
    assert prompts[0] | prompts[1] == {str(s.input) for s in arith(difficulty=3, n=N).dataset}
    assert not prompts[0] & prompts[1]


def _post(url: str, body: dict) -> tuple[int, dict[str, str], bytes]:
    """POST a chat completion with urllib: status, headers and body, whatever the status."""
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
    )
    try:
        with NO_PROXY.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as ex:
        return ex.code, dict(ex.headers), ex.read()


@pytest.mark.parametrize(
    ("kind", "stream", "expected"),
    [
        ("ok", False, 200),
        ("ok", True, 200),  # server-sent chunks pass through, to the end
        ("http_503", False, 503),  # an upstream's error status passes through
        ("rate_limit_retry_after", False, 429),  # with its Retry-After
        ("reset", False, 502),  # an upstream that resets the connection: a 502
        ("truncated", False, None),  # an upstream that breaks off: the client's answer breaks off
    ],
)
def test_the_proxy_passes_on_each_answer_and_failure(kind, stream, expected):
    rates = FaultRates() if kind == "ok" else FaultRates(**{kind: 1.0})
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "2+3="}]}
    with fault_server(rates, api_key="k") as server, round_robin([server.base_url]) as proxy:
        if expected is None:
            with pytest.raises(http.client.IncompleteRead):
                _post(proxy.base_url, body)
        else:
            status, headers, data = _post(proxy.base_url, body)
            assert status == expected, data
        counts = proxy.counts()
    assert counts == {server.base_url: 1}
    if kind == "ok" and stream:
        assert data.endswith(b"data: [DONE]\n\n") and b'"content": "5"' in data
    elif kind == "ok":
        assert json.loads(data)["choices"][0]["message"]["content"] == "5"
    elif kind == "rate_limit_retry_after":
        assert headers.get("Retry-After") == "1"
