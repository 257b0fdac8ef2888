"""`harness judge estimate` and `harness judge plan`: spec numbers and one-line bad-input errors."""

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.validation.llmbar_data import load_llmbar


def invoke(args):
    return CliRunner().invoke(main, args)


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def mt_bench_split(tmp_path, data_dir):
    # specs/calibrated-judge.md §3.4: calibrate on even rows of MT-Bench (GPT-4), test on odd
    v = load_llmbar("Processed_MT-Bench", "GPT-4", str(data_dir))
    test = write(
        tmp_path / "T.jsonl",
        [{"id": i, "judge": int(v.judge_verdict[i])} for i in range(1, 200, 2)],
    )
    calib = write(
        tmp_path / "C.jsonl",
        [
            {"id": i, "human": int(v.human[i]), "judge": int(v.judge_verdict[i])}
            for i in range(0, 200, 2)
        ],
    )
    return test, calib


def test_estimate_reproduces_even_odd_split(mt_bench_split):
    test, calib = mt_bench_split
    result = invoke(["judge", "estimate", "--test", test, "--calibration", calib, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"estimate", "ci_low", "ci_high", "naive", "q0", "q1", "n", "m0", "m1",
                        "method"}  # fmt: skip
    assert (out["m0"], out["m1"], out["n"]) == (43, 57, 100)
    assert out["q0"] == pytest.approx(0.7674, abs=1e-4)
    assert out["q1"] == pytest.approx(0.8421, abs=1e-4)
    assert out["naive"] == pytest.approx(0.44)
    assert out["estimate"] == pytest.approx(0.3403, abs=1e-4)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((0.0997, 0.5458), abs=1e-4)


def test_plan_json_keys_and_authors_numbers():
    result = invoke(
        ["judge", "plan", "--p", "0.4", "--q0", "0.7", "--q1", "0.9", "--budget", "200",
         "--pilot", "10", "--json"]
    )  # fmt: skip
    out = json.loads(result.stdout)
    assert set(out) == {"authors_m0", "authors_m1", "optimal_m0", "optimal_m1", "R",
                        "recommendation"}  # fmt: skip
    assert (out["authors_m0"], out["authors_m1"]) == (136, 64)
    assert (out["optimal_m0"], out["optimal_m1"]) == (177, 23)
    assert out["recommendation"] == "label by hand" and out["R"] > 1
    good = invoke(
        ["judge", "plan", "--p", "0.5", "--q0", "0.95", "--q1", "0.95", "--budget", "100",
         "--json"]
    )  # fmt: skip
    assert json.loads(good.stdout)["recommendation"] == "use the judge"  # R = 0.23 (spec §3)


BAD = {
    "malformed": ['{"id": 1, "human": 1, "judge": 1}', "{oops"],
    "missing id": ['{"human": 1, "judge": 0}'],
    "label 2": ['{"id": 1, "human": 2, "judge": 0}'],
    "repeated id": ['{"id": 1, "human": 1, "judge": 0}', '{"id": 1, "human": 0, "judge": 0}'],
}
MESSAGES = {
    "malformed": "line 2: not valid JSON",
    "missing id": "line 1: missing 'id'",
    "label 2": "'human' must be 0 or 1, got 2",
    "repeated id": "repeats line 1",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_calibration_file_is_one_line_exit_2(tmp_path, case):
    test = write(tmp_path / "T.jsonl", [{"id": 10, "judge": 1}])
    calib = tmp_path / "C.jsonl"
    calib.write_text("\n".join(BAD[case]) + "\n")
    result = invoke(["judge", "estimate", "--test", test, "--calibration", str(calib)])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert MESSAGES[case] in line


def test_overlapping_ids_and_useless_judge_are_usage_errors(tmp_path):
    test = write(tmp_path / "T.jsonl", [{"id": i, "judge": i % 2} for i in range(20)])
    overlap = write(tmp_path / "C1.jsonl", [{"id": 3, "human": 1, "judge": 1}])
    result = invoke(["judge", "estimate", "--test", test, "--calibration", overlap])
    assert result.exit_code == 2 and "appear in both" in result.stderr
    # a judge that always disagrees with the humans: worse than chance, so no number
    rows = [{"id": 100 + i, "human": i % 2, "judge": 1 - i % 2} for i in range(40)]
    useless = write(tmp_path / "C2.jsonl", rows)
    result = invoke(["judge", "estimate", "--test", test, "--calibration", useless])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "chance" in line
    # no truly-incorrect items in calibration: m0 = 0
    only_ones = write(
        tmp_path / "C3.jsonl", [{"id": 200 + i, "human": 1, "judge": 1} for i in range(5)]
    )
    result = invoke(["judge", "estimate", "--test", test, "--calibration", only_ones])
    assert result.exit_code == 2 and "m0" in result.stderr
