"""The pure helpers of `harness.validation.imgcot_smollm2` (no model is loaded here)."""

from __future__ import annotations

import random

from harness.suites.imgcot.problems import Problem, apply
from harness.validation.imgcot_smollm2 import corrupt, step_pairs

FWD = Problem(("3", "+", "4", "×", "2", "−", "5"),
              (("3", "+", "4", "=", "7"), ("4", "=", "7", "×", "2"), ("4", "−", "5", "=", "9")),
              9)  # fmt: skip


def test_corrupt_changes_only_the_result_digit_in_both_forms() -> None:
    rng = random.Random(0)
    for j, at in ((0, 4), (1, 0), (2, 4)):
        for _ in range(20):
            bad = corrupt(FWD, j, rng)
            step, orig = bad.steps[j], FWD.steps[j]
            diff = [i for i in range(5) if step[i] != orig[i]]
            assert diff == [at]  # the result: last in "x op b = y", first in "y = x op b"
            assert bad.steps[:j] == FWD.steps[:j] and bad.steps[j + 1 :] == FWD.steps[j + 1 :]
    assert apply(3, "+", 4) == 7 and apply(7, "×", 2) == 4  # the fixture is a true chain


def test_step_pairs_put_the_previous_steps_in_the_context() -> None:
    pairs = step_pairs("P:", FWD)
    assert pairs == [("P:", "3+4=7"), ("P:3+4=7\n", "4=7×2"), ("P:3+4=7\n4=7×2\n", "4−5=9")]
