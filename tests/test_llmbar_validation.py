"""The calibrated judge on LLMBar's real verdicts (a smaller run of docs/validation/llmbar.md)."""

import numpy as np
import pytest

from harness.stats._judge_calibration import CalibrationError, rogan_gladen_from_labels
from harness.validation.llmbar_data import load_llmbar
from harness.validation.llmbar_report import pooled, youden


def test_spec_table_rates(data_dir):
    # specs/calibrated-judge.md §3.4: MT-Bench GPT-4 θ=0.505, p̂=0.510, q0=0.788, q1=0.802
    v = load_llmbar("Processed_MT-Bench", "GPT-4", str(data_dir))
    assert v.human.mean() == pytest.approx(0.505) and v.judge_verdict.mean() == pytest.approx(0.51)
    assert youden(v) == pytest.approx(0.788 + 0.802 - 1, abs=2e-3)
    # in-sample identity: calibrating on the very items gives back the empirical θ
    est = rogan_gladen_from_labels(v.judge_verdict, v.human, v.judge_verdict)
    assert est.estimate == pytest.approx(0.505, abs=1e-12)
    assert load_llmbar("Processed_LLMEval_2", "PaLM2", str(data_dir)).n_null == 18


def test_worse_than_chance_judge_is_refused(data_dir):
    v = load_llmbar("LLMBar_Adversarial_Neighbor", "ChatGPT", str(data_dir))
    with pytest.raises(CalibrationError):
        rogan_gladen_from_labels(v.judge_verdict, v.human, v.judge_verdict)


def test_pooled_replay_covers_and_is_unbiased(data_dir):
    # spec §5 item 5 observed 0.964-0.973 at 4,000 draws; 400 draws have MC SE ~0.009
    for cell in pooled(str(data_dir), draws=400, seed=1):
        assert cell.refused == 0
        assert 0.93 <= cell.rg_coverage <= 0.995, cell
        assert abs(cell.rg_bias) < 0.015, cell
    assert np.isfinite(cell.ppi_width)
