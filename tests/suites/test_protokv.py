"""Suite `protokv`: bad arguments, the suite end to end, and its report section."""

import math
import subprocess
import sys

import pytest

from harness.errors import HarnessUsageError
from harness.stats._compare import pair_family
from harness.suites.catalog import get_suite
from harness.suites.protokv.results import (
    BEST,
    build_protokv_report,
    load_protokv_runs,
    plot_protokv,
    protokv_tables,
)
from harness.suites.protokv.runs import ARMS, TOKEN_BASELINES
from harness.suites.protokv.task import protokv


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (dict(frames_budget=3, modes=8), "M = 3 frames cannot hold one prototype of S = 8"),
        (dict(frames_budget=4, modes=8), "give M >= S \\+ 1 = 9"),
        (dict(delays="0,256", stream=100), "delay 256 is longer than the stream"),
        (dict(delays="-4"), "a delay cannot be negative"),
        (dict(delays="soon"), "delays must be whole frames"),
        (dict(seeds=0), r"seeds takes an integer in \[1, "),
        (dict(episodes=0), r"episodes takes an integer in \[1, "),
        (dict(preset="huge"), "unknown preset"),
        (dict(frames_budget=64, modes=2), "holds the whole stream up to the cue"),
        (dict(max_prototypes=-1), r"max_prototypes takes an integer in \[0, "),
    ],
)
def test_bad_task_arguments_are_usage_errors(args, message):
    with pytest.raises(HarnessUsageError, match=message):
        protokv(**args)


@pytest.mark.long  # a subprocess or a training run: seconds of CPU the default run cannot spare
def test_cli_bad_argument_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--suite", "protokv", "-T",
         "frames_budget=3", "-T", "modes=8", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "M >= S + 1 = 9" in lines[0] and "Traceback" not in proc.stderr


def test_suite_end_to_end_with_report(tmp_path):
    from inspect_ai.log import read_eval_log

    from harness.eval import EvalRequest, run  # imported here: the CLI is not under test

    log_dir = tmp_path / "logs"
    ok, _, _ = run(
        EvalRequest(
            suite="protokv",
            models=(),
            task_args={"seeds": 2, "episodes": 2, "delays": "0,4,32"},
            log_dir=str(log_dir),
            display="none",
        )  # fmt: skip
    )
    (log_path,) = log_dir.glob("*.eval")
    assert ok
    log = read_eval_log(str(log_path))
    assert "reconstructed" in log.eval.metadata and log.eval.metadata["preset"] == "quick"
    runs = load_protokv_runs(str(log_path))
    assert sorted(r["seed"] for r in runs) == [0, 1] and not any("error" in r for r in runs)
    assert all(r["exposed"]["protokv"] == [32, 32] and len(r["state_bytes"]) == 1 for r in runs)
    rep = build_protokv_report("t", runs)
    assert rep.delays == (0, 4, 32) and len(rep.arms) == (len(ARMS) + 1) * 3
    assert [g.delay for g in rep.gains] == [0, 4, 32]
    assert all(not g.diff.estimable for g in rep.gains)  # 2 seeds: no 95% interval
    assert any(c.startswith("Spec §5 check 4") for c in rep.checks)
    assert plot_protokv(rep, tmp_path / "p.png").endswith(".png")


def _runs(acc_by_arm, seeds=8):
    """Constructed runs: acc_by_arm[arm] is a function (seed, delay) -> accuracy."""
    out = []
    for seed in range(seeds):
        acc = {a: {str(d): float(acc_by_arm.get(a, lambda s, d: 0.25)(seed, d))
                   for d in (0, 4, 32, 256)} for a in ARMS}  # fmt: skip
        exposed = {a: [32, 32] for a in ARMS if a != "full"} | {"full": [172, 1196]}
        out.append({"seed": seed, "accuracy": acc, "exposed": exposed, "state_bytes": [17011],
                    "prototypes": 3, "window": 2, "episodes": 40})  # fmt: skip
    return out


def _protokv_world():
    return {
        "full": lambda s, d: 1.0,
        "window": lambda s, d: 1.0 if d <= 4 else 0.25,
        "sink+window": lambda s, d: 1.0 if d <= 4 else 0.2 + 0.01 * s,
        "h2o": lambda s, d: 1.0 if d == 0 else 0.3,
        "uniform": lambda s, d: 0.97 if d == 0 else 0.3 - 0.01 * s,
        "protokv": lambda s, d: {0: 1.0, 4: 0.85, 32: 0.7 + 0.01 * s, 256: 0.35}[d],
        "protokv-no-residual": lambda s, d: 0.8,
        "protokv-no-bias": lambda s, d: 0.5 - 0.01 * s,
    }


def example_report():
    """A report on constructed runs with one errored seed (also for tests/test_design.py)."""
    runs = _runs(_protokv_world())
    runs.append({"seed": 8, "error": "RuntimeError('boom')"})
    return build_protokv_report("t", runs)


def test_checks_on_constructed_runs():
    rep = example_report()
    text = "\n".join(rep.checks)
    # Δ = 32: ProtoKV 0.70-0.77 against a best token baseline of 0.30 (h2o, uniform at seed 0)
    assert "check 4 (Δ = 32" in text and "): pass: +0.435" in text
    assert "exact sign-flip p 0.0078" in text  # all 8 seeds positive: 2/256
    assert "check 5" in text and "check 5 (the gain grows" in text
    assert "check 3 (reader sanity): full cache ≥ 0.95 at every Δ: pass" in text
    assert "every arm ≥ 0.95 at Δ = 0: FAIL for protokv-no-residual, protokv-no-bias" in text
    assert "falls again to" in text and "EMA dilutes" in text
    assert "persistent state kept one size" in text and "pass (17011 bytes)" in text
    assert "log-mass bias" in text and "residual modes" in text and "without a gate" in text
    (_, head, rows), (_, _, gains) = protokv_tables(rep)
    assert head[:3] == ["arm", "seeds", "errored"] and rows[0][1:3] == ["9", "1"]
    assert rows[-1][0] == BEST and len(gains) == 4


def test_a_check_that_fails_says_fail():
    world = _protokv_world()
    world["protokv"] = lambda s, d: 0.25  # no better than the token baselines
    text = "\n".join(build_protokv_report("t", _runs(world)).checks)
    assert "check 4 (Δ = 32" in text and "p < 0.01): FAIL" in text


def test_gains_are_the_engines_holm_family_over_delays():
    runs = _runs(_protokv_world())
    rep = build_protokv_report("t", runs)
    design = get_suite("protokv").design

    def scores(arm, d):
        if arm == BEST:
            return {str(r["seed"]): max(r["accuracy"][a][str(d)] for a in TOKEN_BASELINES)
                    for r in runs}  # fmt: skip
        return {str(r["seed"]): r["accuracy"][arm][str(d)] for r in runs}

    want = pair_family(design, [(f"Δ={d}", BEST, scores("protokv", d), scores(BEST, d))
                                for d in (0, 4, 32, 256)])  # fmt: skip
    got = [(g.diff.estimate, g.p_value, g.p_holm) for g in rep.gains]
    assert got == [(w.test.estimate, w.test.p_value, w.p_holm) for w in want]
    assert math.isclose(rep.gains[2].diff.estimate, 0.435, abs_tol=1e-12)
