"""SIGKILL a `harness eval` against a faulty server half-way, run the same command again.

The run reaches the fault server as a user's reaches a vLLM server: a separate `harness eval`
process, `openai-api/faulty/...` with `FAULTY_BASE_URL` and `FAULTY_API_KEY` in its environment.
The server stays up across both runs, so its counts say which samples each run asked for; each
request waits `delay_s` there, so that the run lasts long enough to be killed half-way.

inspect leaves the killed run's `started` log in the folder (it cannot tell that its writer is
gone) and writes the resumed run as a new log that reuses the kept samples. A sample that had
errored before the kill is run again, so across the folder it has two rows, the errored one in
the unfinished log; `harness report` leaves that log out as unfinished.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from inspect_ai.analysis import samples_df
from inspect_ai.log import read_eval_log

from harness.logs import read_logs
from harness.suites.arith.task import arith
from harness.testing.fault_server import FAILING, KINDS, FaultRates, FaultStats, fault_server
from tests.deadline import deadline

N = 48
# one retry: each retry waits inspect's backoff (3-6 s, then 6-9 s), and the test has to stay
# short on 2 shared cores, where each `harness eval` process takes about 11 s to start
MAX_RETRIES = 1
# 2% per kind as in FaultRates.uniform(0.2), less the hang, which only adds --attempt-timeout
RATES = FaultRates(**{k: 0.02 for k in KINDS if k != "hang"})


def answered(stats: FaultStats) -> int:
    """Samples whose last attempt got an answer."""
    return sum(v[-1] not in FAILING for v in stats.outcomes.values())


def test_sigkill_mid_run_against_a_faulty_server_then_rerun(tmp_path):
    logs = tmp_path / "logs"
    cmd = [
        sys.executable, "-m", "harness.cli", "eval", "--suite", "arith",
        "-T", f"n={N}", "-T", "difficulty=3", "--model", "openai-api/faulty/tiny-arith",
        "-M", "max_retries=0",  # the OpenAI SDK's own retries off: each attempt is inspect's
        "--max-retries", str(MAX_RETRIES), "--attempt-timeout", "2", "--max-connections", "4",
        "--log-dir", str(logs), "--display", "none", "--json",
    ]  # fmt: skip
    prompts = {str(s.id): str(s.input) for s in arith(difficulty=3, n=N).dataset}
    assert len(set(prompts.values())) == N  # one server-side sample key per sample

    with deadline(150), fault_server(RATES, seed=0, api_key="k", delay_s=0.15) as server:
        env = os.environ | {"FAULTY_BASE_URL": server.base_url, "FAULTY_API_KEY": "k"}
        err = tmp_path / "first.stderr"
        with err.open("w") as stderr:  # a file, not a pipe, which a chatty child could fill
            first = subprocess.Popen(
                cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=stderr
            )
        try:
            while answered(server.stats()) < N // 2:
                assert first.poll() is None, err.read_text()
                time.sleep(0.02)
        finally:
            with contextlib.suppress(ProcessLookupError):  # gone already: the assert says why
                os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        killed = server.stats()
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        stats = server.stats()

    # the resumed run's log has every sample exactly once, and the summary is read from it
    [row] = json.loads(second.stdout[second.stdout.index("{") :])["scores"]
    finished = read_eval_log(row["log"])
    assert finished.status == "success"
    assert sorted(str(s.id) for s in finished.samples or []) == sorted(prompts)
    assert row["n"] == N
    # the folder holds it and the killed run's unfinished log, which harness report leaves out
    paths = sorted(str(p) for p in Path(logs).glob("*.eval"))
    [interrupted] = set(paths) - {row["log"]}
    assert read_eval_log(interrupted, header_only=True).status == "started"
    selection = read_logs([str(logs)])
    assert [r.path for r in selection.used] == [row["log"]]
    assert [(b.path, b.reason.split(" ")[0]) for b in selection.left_out] == [
        (interrupted, "unfinished")
    ]
    assert sorted(s.id for s in selection.used[0].samples) == sorted(prompts)
    # across the folder (inspect's samples_df, which merges reused samples): every sample, and
    # twice only one that errored before the kill, its errored row in the unfinished log
    df = samples_df(paths, quiet=True)
    assert set(df["id"]) == set(prompts)
    twice = {sid for sid, count in Counter(df["id"]).items() if count > 1}
    old = {str(s.id): s for s in read_eval_log(interrupted).samples or []}
    assert twice == {sid for sid, s in old.items() if s.error is not None}
    assert all(count == 2 for count in Counter(df["id"]).values() if count > 1)
    # the re-run asked only for what the first run had not kept
    rerun = {k for k, v in stats.outcomes.items() if len(v) > len(killed.outcomes.get(k, ()))}
    assert 0 < len(rerun) < N
    assert len(old) - len(twice) + len(rerun) == N  # kept + re-run: each sample once
    # retries bounded: at most 1 + MAX_RETRIES attempts of a sample in each run
    run2 = {k: v[len(killed.outcomes.get(k, ())) :] for k, v in stats.outcomes.items()}
    assert max(len(v) for v in run2.values()) <= 1 + MAX_RETRIES
    # errors: exactly the samples whose last attempt failed, and each either ran out of
    # retries or got malformed JSON (which inspect does not retry), as the summary counts them
    after = {str(s.id): s for s in finished.samples or []}
    errored = {sid for sid, s in after.items() if s.error is not None}
    assert errored == {sid for sid, p in prompts.items() if p in stats.unanswered()}
    by_prompt = {stats.prompts[k]: v for k, v in run2.items()}
    for sid in errored:
        tries = by_prompt[prompts[sid]]
        assert len(tries) == 1 + MAX_RETRIES or tries[-1] == "malformed_json", (sid, tries)
    assert row["errors"] == len(errored)
    attempts = Counter(len(v) for v in stats.outcomes.values())
    print(  # the figures for docs/validation/api-faults.md (pytest -s)
        f"samples={N} answered_at_kill={answered(killed)} requests_run1={killed.requests} "
        f"kept={len(old) - len(twice)} rerun={len(rerun)} requests={stats.requests} "
        f"faults={dict(stats.faults)} attempts={dict(attempts)} errors={row['errors']} "
        f"twice_in_folder={len(twice)} score={row['value']:.4f} "
        f"errored={sorted(by_prompt[prompts[sid]] for sid in errored)}"
    )
