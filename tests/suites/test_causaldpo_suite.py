"""Suite `causaldpo`: bad arguments, a micro run end to end, the report's checks on built runs."""

import math
import subprocess
import sys

import numpy as np
import pytest

from harness.errors import HarnessUsageError
from harness.suites.causaldpo.results import build_report, load_runs, plot_iid_ood
from harness.suites.causaldpo.section import tables, view
from harness.suites.causaldpo.task import causaldpo

MICRO = {"seeds": 2, "arms": "sft,dpo,causaldpo-code,causaldpo-w0.1", "train": 192, "test": 64,
         "epochs": 1, "sft_epochs": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"envs": 0}, r"-T envs=0 is out of range; envs takes an integer in \[1, 1,000\]"),
        ({"lams": "0.1,-0.01"}, "lams must be >= 0"),
        ({"lams": "big"}, "lams must be numbers"),
        ({"beta": 0}, r"beta takes a number in \(0, "),
        ({"negatives": 0}, "negatives=0 is out of range"),
        ({"negatives": 120}, "negatives must be between 1 and 119"),
        ({"arms": "dpo,causaldpo-w-1"}, "unknown arm 'causaldpo-w-1'"),
        ({"preset": "huge"}, "unknown preset 'huge'"),
        ({"seeds": 0}, "seeds=0 is out of range"),
        ({"epochs": 0}, "epochs=0 is out of range"),
        ({"envs": 100}, "batch \\(64\\) must hold at least envs"),
    ],
)
def test_bad_task_arguments_are_usage_errors(args, message):
    with pytest.raises(HarnessUsageError, match=message):
        causaldpo(**args)


@pytest.mark.long  # a subprocess or a training run: seconds of CPU the default run cannot spare
def test_cli_bad_argument_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--suite", "causaldpo", "-T", "envs=0",
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "envs=0 is out of range" in lines[0]
    assert "Traceback" not in proc.stderr


def test_default_arms_follow_the_lams():
    task = causaldpo(preset="quick")
    arms = task.metadata["arms"]
    assert arms == ["sft", "dpo", "sdpo", "causaldpo-code", "causaldpo-w0.01", "causaldpo-w0.1",
                    "causaldpo-oracle", "irm-oracle"]  # fmt: skip
    assert len(task.dataset) == 3 * len(arms)  # the quick preset's 3 seeds
    assert "reconstructed" in task.metadata["reconstructed"]


@pytest.fixture
def one_thread():
    """One torch thread: on 2 shared cores a second one only spins (measured: 4x the CPU)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.long  # a training run: seconds of CPU the default run cannot spare
def test_micro_run_end_to_end_with_report(tmp_path, one_thread):
    from harness.eval import EvalRequest, run  # the CLI is not under test

    request = EvalRequest(suite="causaldpo", models=(), task_args=MICRO,
                          log_dir=str(tmp_path / "logs"), display="none")  # fmt: skip
    ok, rows, records = run(request)
    assert ok and len(records) == 1
    runs = load_runs(records[0].path)
    assert len(runs) == 8 and not any("error" in r for r in runs)
    assert sorted((r["arm"], r["seed"]) for r in runs) == sorted(
        (a, s) for a in MICRO["arms"].split(",") for s in (0, 1)
    )
    for r in runs:
        assert 0 <= r["ood_ndcg10"] <= 1 and 0 <= r["iid_pop1"] <= 1
        assert math.isnan(r["ari"]) != (r["arm"] == "sft")  # the ARI is the SFT model's
    # arms share the seed's SFT model: with the same model the SFT arm is deterministic
    report = build_report("micro", runs)
    assert [a.arm for a in report.arms] == MICRO["arms"].split(",")
    assert report.selected == "causaldpo-w0.1"
    assert report.claims[0].startswith("Check 1, exact units: pass")
    fourth = next(c for c in report.claims if c.startswith("Check 4"))
    assert "not decided, " in fourth and "(no 95% interval at n = 2)" in fourth
    rendered = tables(report)
    assert len(rendered) == 6 and rendered[0][2][0][0] == "sft"
    assert plot_iid_ood(report, tmp_path / "plot.png").endswith("plot.png")
    assert view(report).notes == report.claims


def _runs(values: dict[str, list[tuple[float, float, float]]]) -> list[dict]:
    """Built runs: per arm, per seed (IID NDCG@10, OOD NDCG@10, OOD Pop@1)."""
    out = []
    for arm, rows in values.items():
        for seed, (iid, ood, pop) in enumerate(rows):
            run = {"arm": arm, "seed": seed, "ari": 0.1 if arm == "sft" else math.nan}
            for split in ("val", "iid", "ood", "ood_h2"):
                for kind in ("ndcg10", "hr10", "pop1", "orr10"):
                    run[f"{split}_{kind}"] = 0.5
            run.update(iid_ndcg10=iid, val_ndcg10=iid, ood_ndcg10=ood, ood_pop1=pop)
            out.append(run)
    return out


def test_checks_read_the_engine_on_built_runs():
    rng = np.random.default_rng(0)
    n = 10
    sft = [(0.15, 0.21 + 0.005 * rng.standard_normal(), 0.3) for _ in range(n)]
    dpo = [(i, o - 0.03, p + 0.3) for i, o, p in sft]  # OOD falls, popularity rises on every seed
    worse = [(i - 0.05, o - 0.02, p) for i, o, p in dpo]  # IID far below DPO's
    close = [(i + 0.001 * (-1) ** s, o + 0.001 * (-1) ** s, p) for s, (i, o, p) in enumerate(dpo)]
    report = build_report("built", _runs({"sft": sft, "dpo": dpo, "causaldpo-w1": worse,
                                          "causaldpo-w0.01": close}))  # fmt: skip
    premise, third, fourth, fifth = (next(c for c in report.claims if c.startswith(f"Check {k}"))
                                     for k in (2, 3, 4, 5))  # fmt: skip
    assert ": met:" in premise and "-0.0300" in premise
    assert "causaldpo-w1 − DPO -0.0200" in third and "not positive" in third
    assert "causaldpo-w1: FAIL" in fourth and "causaldpo-w0.01: pass" in fourth
    assert "NOT met, mean 0.100" in fifth
    assert report.selected == "causaldpo-w0.01"  # higher IID validation NDCG@10, never OOD
    # the premise fails when DPO does not move popularity
    flat = [(i, o, 0.3) for i, o, _ in dpo]
    again = build_report("built", _runs({"sft": sft, "dpo": flat}))
    assert "NOT met" in next(c for c in again.claims if c.startswith("Check 2"))


def test_errored_runs_are_counted_and_left_out():
    runs = _runs({"sft": [(0.1, 0.2, 0.3)] * 3, "dpo": [(0.1, 0.18, 0.5)] * 3})
    runs.append({"arm": "dpo", "seed": 3, "error": "RuntimeError: boom"})
    report = build_report("errored", runs)
    dpo = next(a for a in report.arms if a.arm == "dpo")
    assert (dpo.seeds, dpo.errors) == (4, 1)
    comp = report.comparison("ood_ndcg10")
    assert comp is not None and comp.arm("dpo").interval.n == 3


def example_report():
    """A built report with one errored run, for tests/test_design.py's section checks."""
    runs = _runs({"sft": [(0.15, 0.21, 0.3)] * 2, "dpo": [(0.15, 0.19, 0.6), (0.16, 0.18, 0.7)],
                  "causaldpo-w0.01": [(0.15, 0.19, 0.6), (0.15, 0.2, 0.5)]})  # fmt: skip
    runs.append({"arm": "causaldpo-w0.01", "seed": 2, "error": "RuntimeError: boom"})
    return build_report("example", runs)
