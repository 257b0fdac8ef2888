"""Suite `lokra`: closed-form optima, the runs, the suite end to end and its report section."""

import math
import subprocess
import sys

import pytest
import torch
from inspect_ai.log import read_eval_log

from harness.cli.run import EvalRequest, run_eval
from harness.errors import HarnessUsageError
from harness.report.data import build_report
from harness.report.render import write_report
from harness.suites.lokra.report import build_lokra_report
from harness.suites.lokra.runs import RunSpec, fit_run, kr_optimum, lora_optimum, make_target
from harness.suites.lokra.task import FIT_PRESETS, lokra_fit, lokra_transfer


def _rel(approx, target):
    return float(torch.linalg.norm(approx - target) / torch.linalg.norm(target))


@pytest.mark.parametrize("kind", ["lowrank", "flat", "duplicated"])
def test_lora_optimum_is_the_truncated_svd(kind):
    t = make_target(kind, 32, seed=0).double()
    u, s, vh = torch.linalg.svd(t)
    r = 8
    assert lora_optimum(t, r) == pytest.approx(_rel(u[:, :r] * s[:r] @ vh[:r], t), abs=1e-10)
    if kind == "lowrank":
        assert lora_optimum(t, r) < 1e-6  # rank 4 fits exactly in rank 8


def test_kr_optimum_is_reached_by_per_column_rank_one_factors():
    # Column c of D ⊙ C is d_c ⊗ c_c, i.e. the J×I matrix d_c c_cᵀ reshaped: its best fit is
    # the column's top singular pair, and no perturbation of those factors does better.
    n_i = n_j = 6
    t = make_target("flat", n_i * n_j, seed=3).double()
    cols = t.T.reshape(-1, n_j, n_i)  # (d_in, J, I)
    u, s, vh = torch.linalg.svd(cols)
    D = (u[:, :, 0] * s[:, :1]).T  # (J, d_in)
    C = vh[:, 0, :].T  # (I, d_in)
    fit = (D[:, None, :] * C[None, :, :]).reshape(n_j * n_i, -1)
    best = kr_optimum(t, n_i, n_j)
    assert _rel(fit, t) == pytest.approx(best, abs=1e-10)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        Cp = C + 1e-2 * torch.randn(C.shape, generator=g, dtype=C.dtype)
        Dp = D + 1e-2 * torch.randn(D.shape, generator=g, dtype=D.dtype)
        assert _rel((Dp[:, None, :] * Cp[None, :, :]).reshape(n_j * n_i, -1), t) >= best
    with pytest.raises(ValueError, match="I\\*J == d_out"):
        kr_optimum(t, 5, 6)


def _spec(method, lam=0.0, target="flat", seed=0, **over):
    settings = dict(FIT_PRESETS["quick"], **over)
    return RunSpec("fit", method, lam, seed, target, tuple(sorted(settings.items())))


def test_fit_runs_are_deterministic_and_count_equal_parameters():
    torch.set_num_threads(1)
    a = fit_run(_spec("lokra", 1e-2, steps=40))
    b = fit_run(_spec("lokra", 1e-2, steps=40))
    assert a == b
    lora, plus = fit_run(_spec("lora", steps=40)), fit_run(_spec("lokra_plus", steps=40))
    assert lora.params == plus.params == 1024  # r = 8 on 64×64 against I = J = 8
    assert lora.final_penalty == plus.final_penalty == 0.0 and a.final_penalty != 0.0
    assert 0 <= a.krank <= 8 and len(a.curve) == 1  # evaluated at step 0 of 40 (every 100)


def test_lokra_plus_reaches_its_closed_form_optimum():
    # specs/lokra.md §5.2 at the quick preset's size and steps, one seed; the suite runs three
    run = fit_run(_spec("lokra_plus", target="flat", seed=1))
    assert run.score <= 1.01 * run.optimum
    assert run.optimum == pytest.approx(kr_optimum(make_target("flat", 64, 1), 8, 8))


def test_bad_task_arguments_name_the_parameter():
    with pytest.raises(HarnessUsageError, match="lams must be >= 0"):
        lokra_fit(lams="-0.1")
    with pytest.raises(HarnessUsageError, match="unknown target"):
        lokra_fit(targets="lowrank,spiky")
    with pytest.raises(HarnessUsageError, match="unknown preset"):
        lokra_transfer(preset="huge")
    with pytest.raises(HarnessUsageError, match="steps must be at least 1"):
        lokra_transfer(steps=0)


def test_cli_bad_argument_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "eval", "--suite", "lokra", "-T", "lams=-1",
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "lams must be >= 0" in proc.stderr


def test_suite_end_to_end_with_report(tmp_path):
    ok, rows = run_eval(
        EvalRequest(
            suite="lokra",
            models=(),
            task_args={
                "seeds": 2,
                "lams": "1e-2",
                "targets": "lowrank",
                "steps": 30,
                "pretrain_steps": 30,
            },
            log_dir=str(tmp_path / "logs"),
            display="none",
        )  # fmt: skip
    )
    assert ok and [r.n for r in rows] == [8, 8] and all(r.errors == 0 for r in rows)
    log = read_eval_log(rows[0].log)
    assert "reconstructed" in log.eval.task_args or "reconstructed" in str(log.eval.metadata)
    report = build_report([str(tmp_path / "logs")])
    assert len(report.lokra) == 2
    for section in report.lokra:
        arms = ["lora", "lokra lam=0.01", "lokra_plus", "lokra_plus lam=0.01"]
        assert [a.arm for a in section.arms] == arms
        assert [p.arm for p in section.pairs] == arms[1:]
        assert all(a.seeds == 2 for a in section.arms)
    fit = next(s for s in report.lokra if s.arms[0].experiment == "fit")
    assert any("closed-form optimum" in c for c in fit.checks)
    written = write_report(report, str(tmp_path / "out" / "report.md"), "md")
    assert sum(p.endswith(".png") and "lokra" in p for p in written) == 2
    text = (tmp_path / "out" / "report.md").read_text()
    assert "LoKRA (reconstructed)" in text and "arm - LoRA" in text


def _runs(scores, method, lam=0.0, optimum=1.0, krank=4):
    return [
        {"experiment": "fit", "method": method, "lam": lam, "seed": i, "target": "flat",
         "score": s, "optimum": optimum, "krank": krank, "sigma": 0.1, "params": 1024}
        for i, s in enumerate(scores)
    ]  # fmt: skip


def test_report_pairs_and_checks_on_constructed_runs():
    runs = (
        _runs([0.50, 0.52, 0.51], "lora", krank=3)
        + _runs([0.505, 0.515, 0.512], "lokra", 1e-2, krank=5)
        + _runs([0.60, 0.61, 0.62], "lokra", 1e-1, krank=8)
        + _runs([0.40, 0.40, 0.406], "lokra_plus", optimum=0.40)
    )
    rep = build_lokra_report("t", runs)
    pairs = {p.arm: p for p in rep.pairs}
    assert pairs["lokra lam=0.1"].diff.estimate == pytest.approx(0.10)
    assert pairs["lokra lam=0.1"].p_value < 0.01 and pairs["lokra_plus"].diff.estimate < 0
    assert all(p.p_holm >= p.p_value for p in rep.pairs)
    text = "\n".join(rep.checks)
    assert "LoKRA+ error within 1%" in text and "FAIL (largest gap +1.50%)" in text
    assert "lokra lam=0.01 k-rank(A) 5.00 vs LoRA 3.00 at equal error: pass" in text
    assert "lam=0.1 k-rank" not in text  # 0.1 away from LoRA's error: not "equal task loss"
    assert not math.isnan(rep.arms[0].optimum)
