"""k-parity: data, determinism, the suite end to end, and its report section."""

import pytest
import torch
from inspect_ai.log import read_eval_log

from harness.cli.run import EvalRequest, run_eval
from harness.report.data import build_report
from harness.report.render import write_report
from harness.suites.k_parity.data import make_parity_data
from harness.suites.k_parity.task import PRESETS, arm_config
from harness.suites.k_parity.train import train_run


def test_data_is_seeded_disjoint_and_labelled_by_xor():
    a = make_parity_data(12, 3, 1000, 2000, seed=0)
    b = make_parity_data(12, 3, 1000, 2000, seed=0)
    assert a.secret == b.secret and torch.equal(a.train, b.train)
    assert make_parity_data(12, 3, 1000, 2000, seed=1).secret != a.secret or not torch.equal(
        make_parity_data(12, 3, 1000, 2000, seed=1).train, a.train
    )
    train = {tuple(r) for r in a.train[:, :12].tolist()}
    test = {tuple(r) for r in a.test[:, :12].tolist()}
    assert len(train) == 1000 and len(test) == 2000 and not train & test
    assert torch.equal(a.train[:, 12], a.train[:, list(a.secret)].sum(1) % 2)


def small(**overrides):
    settings = dict(PRESETS["quick"], max_steps=60, eval_every=20)
    settings.update(overrides)
    return settings


def test_runs_are_deterministic_for_a_seed_and_thread_count():
    torch.set_num_threads(1)
    for arm in ("ar", "md-optimal", "md-uniform-inv-t"):
        first = train_run(arm_config(arm, 5, small()))
        again = train_run(arm_config(arm, 5, small()))
        assert (first.steps, first.train_acc, first.test_acc) == (
            again.steps, again.train_acc, again.test_acc,
        )  # fmt: skip
    other = train_run(arm_config("md-optimal", 6, small()))
    assert other.test_acc != first.test_acc or other.secret != first.secret


def test_suite_end_to_end_with_report(tmp_path):
    ok, rows = run_eval(
        EvalRequest(
            suite="k-parity",
            models=(),
            task_args={"arms": "ar,md-optimal", "seeds": 2, "max_steps": 60},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    assert ok and rows[0].n == 4 and rows[0].errors == 0 and rows[0].ci_method == "t"
    log = read_eval_log(rows[0].log)
    sample = log.samples[0]
    run = sample.metadata["run"]
    assert len(run["steps"]) == len(run["test_acc"]) == len(run["train_acc"]) >= 1
    assert "steps_to_generalize" in sample.scores["final_test_accuracy"].metadata
    report = build_report([str(tmp_path / "logs")])
    (parity,) = report.parity
    assert [a.arm for a in parity.arms] == ["ar", "md-optimal"]
    assert all(a.seeds == 2 for a in parity.arms) and len(parity.pairs) == 1
    written = write_report(report, str(tmp_path / "out" / "report.md"), "md")
    assert any(p.endswith(".svg") for p in written) and any(p.endswith(".png") for p in written)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "median steps to 0.99" in text and "k-parity learning curves" in text
    assert "AR against MD" in text and "this log is preset 'quick'" in text  # the claim, plainly
    html = tmp_path / "out" / "report.html"
    write_report(report, str(html), "html")
    assert "AR against MD" in html.read_text()


def test_parallel_workers(tmp_path):
    ok, rows = run_eval(
        EvalRequest(
            suite="k-parity",
            models=(),
            task_args={"arms": "ar", "seeds": 2, "max_steps": 20, "workers": 2},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    )
    assert ok and rows[0].n == 2 and rows[0].errors == 0


def test_model_uses_nanogpt_initialisation():
    from harness.models.parity_transformer import ParityModelConfig, ParityTransformer

    torch.manual_seed(0)
    model = ParityTransformer(ParityModelConfig(13, d_model=64, n_layer=2, n_head=4))
    assert abs(model.tok.weight.std().item() - 0.02) < 0.005
    assert abs(model.blocks[0].attn.qkv.weight.std().item() - 0.02) < 0.002
    residual_std = 0.02 / (2 * 2) ** 0.5
    assert abs(model.blocks[1].mlp[2].weight.std().item() - residual_std) < 0.001
    assert abs(model.blocks[0].attn.proj.weight.std().item() - residual_std) < 0.002
    assert model.blocks[0].attn.qkv.bias.abs().max().item() == 0.0


@pytest.mark.parametrize("causal", [False, True])
def test_logits_at_one_position_equal_the_full_forward(causal):
    from harness.models.parity_transformer import ParityModelConfig, ParityTransformer

    torch.manual_seed(0)
    model = ParityTransformer(ParityModelConfig(13, d_model=32, n_layer=3, n_head=4, causal=causal))
    for p in model.parameters():  # away from the initialisation's near-zero outputs
        torch.nn.init.normal_(p, std=0.3)
    idx = torch.randint(0, 3, (64, 13))
    full = model(idx)  # (64, 13, 2)
    for position in (0, 5, 12, -1):
        one = model.logits_at(idx, position)
        assert one.shape == (64, 2)
        torch.testing.assert_close(one, full[:, position], atol=1e-5, rtol=1e-5)
    short = idx[:, :7]  # a causal model's prefix: the label is predicted after the bits
    torch.testing.assert_close(model.logits_at(short, 6), model(short)[:, 6], atol=1e-5, rtol=1e-5)
    with pytest.raises(IndexError, match="outside"):
        model.logits_at(idx, 13)


def _synthetic_runs(hits: dict[str, list[int | None]], budget: int = 1500) -> list[dict]:
    runs = []
    for arm, arm_hits in hits.items():
        for seed, hit in enumerate(arm_hits):
            last = hit or budget
            runs.append({"arm": arm, "seed": seed, "steps_to_generalize": hit,
                         "steps": [50, last], "train_acc": [0.5, 1.0],
                         "test_acc": [0.5, 1.0 if hit else 0.5],
                         "final_test_acc": 1.0 if hit else 0.5})  # fmt: skip
    return runs


def test_report_says_which_way_each_claim_came_out():
    from harness.suites.k_parity.report import build_parity_report

    # 10 seeds: AR fastest, the window next, U[0, 1] never; 10 equal signs give p ~ 2/1024,
    # which stays under 0.05 after Holm over the 6 pairs
    runs = _synthetic_runs({
        "ar": [100, 150, 100, 200, 100, 150, 100, 250, 100, 150],
        "md-optimal": [400, 500, 450, 400, 600, 500, 400, 450, 500, 400],
        "md-uniform": [None] * 10,
        "md-uniform-inv-t": [None] * 10,
    })  # fmt: skip
    schedule, inv_t, ar = build_parity_report("quick", runs, preset="quick").claims
    assert "md-optimal − md-uniform" in schedule and "same direction as the paper;" in schedule
    assert "significant in 1 of 1" in schedule
    assert "level in 1 of 2" in inv_t and "same direction as the paper in 1 of 2" in inv_t
    assert "the reverse of the paper's claim" in ar and "preset 'quick'" in ar
    assert "the paper's setting is the 'paper' preset" in ar
    assert "generalised on ar 10/10, md-optimal 10/10, md-uniform 0/10" in ar

    # MD faster than AR, on the paper preset; the window slower than U[0, 1]
    runs = _synthetic_runs({
        "ar": [None, None, 1400],
        "md-optimal": [900, 1000, 800],
        "md-uniform": [300, 500, 400],
    })  # fmt: skip
    schedule, ar = build_parity_report("paper", runs, preset="paper").claims
    assert "reversed; not significant" in schedule  # 3 seeds: no p below 0.25
    assert "ar − md-optimal +" in ar and "same direction as the paper" in ar
    assert "this log is the paper's setting" in ar
