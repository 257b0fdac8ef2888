"""MFT rows: MSC-truncated CoT, and an empty CoT below L_min."""

import pytest

from harness.suco.mft import mft_row, msc_text
from harness.suco.trajectories import Trajectory

COT = "S1. S2. S3. S4. S5. S6. S7."


def traj(cot=COT):
    return Trajectory("q1", 1, "What?", "", cot, "The answer is \\boxed{7}.", True, "7", True)


def test_empty_cot_below_l_min():
    row = mft_row(traj(), t_star=4)  # spec: t* = 4 < 5 gives an empty CoT
    assert row["completion"] == "<think></think>The answer is \\boxed{7}."
    assert row["empty_cot"] is True and row["repaired"] is False


def test_truncated_cot_at_l_min_and_above():
    row = mft_row(traj(), t_star=5)
    assert row["completion"] == "<think>S1. S2. S3. S4. S5. </think>The answer is \\boxed{7}."
    assert (row["id"], row["prompt"], row["empty_cot"]) == ("q1", "What?", False)
    assert (
        mft_row(traj(), t_star=7)["completion"]
        == f"<think>{COT}</think>The answer is \\boxed{{7}}."
    )
    assert mft_row(traj(), t_star=2, l_min=2)["completion"].startswith("<think>S1. S2. </think>")


def test_msc_text_bounds():
    assert msc_text(COT, 0) == ""
    with pytest.raises(ValueError):
        msc_text(COT, 8)
