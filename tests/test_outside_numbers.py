"""Numbers from outside that are not numbers (issue 42, classes 5 and 10).

One validator (`harness.outside_numbers`) serves the price file, `--cost-limit`, a log's usage,
scores and seconds, and `-T`/`-M` values. Each table holds the issue's examples and more; each
case ends in a one-line usage error naming the input, or in "invalid"/"unscored" with the reason
for a field of a log, never in a traceback, an overflow or a published nonsense number.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.errors import HarnessUsageError
from harness.outside_numbers import check_number


@pytest.mark.parametrize(
    ("value", "bounds", "reason"),
    [
        (True, {}, "true is not a number"),
        ("1.5", {}, "'1.5' is not a number"),
        (None, {}, "a NoneType is not a number"),
        ([1], {}, "a list is not a number"),
        (math.nan, {}, "nan is not finite"),
        (math.inf, {}, "inf is not finite"),
        (json.loads("1e400"), {}, "inf is not finite"),
        (-1, {"low": 0.0}, "-1 is below 0"),
        (0, {"low": 0.0, "above_low": True}, "0 is not above 0"),
        (1e308, {"high": 1e6}, "1e+308 is over 1e+06"),
        (2.5, {"integer": True}, "2.5 is not a whole number"),
        (1e300, {"integer": True}, "is over"),
        (10**400, {}, "not finite as a decimal number"),
    ],
)
def test_a_value_that_is_not_a_number_in_range_says_why(value, bounds, reason):
    checked = check_number(value, **bounds)
    assert checked.value is None and reason in checked.reason


def test_numbers_in_range_pass_as_their_type():
    assert check_number(2.0, integer=True).value == 2
    assert isinstance(check_number(2.0, integer=True).value, int)
    assert check_number(3, low=0.0, high=3.0).value == 3.0
    assert check_number(5e-324, low=0.0).ok


# --- class 5: the price file and --cost-limit ---------------------------------------------

PRICES = {"input": 1.0, "output": 2.0, "input_cache_write": 0.0, "input_cache_read": 0.0}


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("nan.json", '{"m/x": {"input": NaN, "output": 1, "input_cache_write": 0, '
         '"input_cache_read": 0}}', "nan is not finite"),
        ("inf.json", '{"m/x": {"input": 1, "output": Infinity, "input_cache_write": 0, '
         '"input_cache_read": 0}}', "inf is not finite"),
        ("big.json", '{"m/x": {"input": 1e400, "output": 1, "input_cache_write": 0, '
         '"input_cache_read": 0}}', "inf is not finite"),
        ("true.yaml", "m/x: {input: true, output: 1, input_cache_write: 0, input_cache_read: 0}",
         "true is not a number"),
        ("str.yaml", "m/x: {input: 'nan', output: 1, input_cache_write: 0, input_cache_read: 0}",
         "nan is not finite"),
        ("word.yaml", "m/x: {input: cheap, output: 1, input_cache_write: 0, input_cache_read: 0}",
         "'cheap' is not a number"),
        ("neg.yaml", "m/x: {input: -1, output: 1, input_cache_write: 0, input_cache_read: 0}",
         "-1 is below 0"),
        ("huge.yaml", "m/x: {input: 1e308, output: 1, input_cache_write: 0, input_cache_read: 0}",
         "1e+308 is over"),
        ("list.yaml", "m/x: {input: [1], output: 1, input_cache_write: 0, input_cache_read: 0}",
         "a list is not a number"),
        ("typo.yaml", "m/x: {input: 1, outptu: 1, input_cache_write: 0, input_cache_read: 0}",
         "outptu"),
        ("deep.yaml", "[" * 500_000, "nested 500000 deep"),
        ("deep.json", "[" * 500_000, "nested 500000 deep"),
        ("block.yaml", "".join("  " * k + "-\n" for k in range(700)) + "  " * 700 + "x\n",
         "nested too deep"),
    ],
)  # fmt: skip
def test_a_price_file_with_a_price_that_is_not_a_number_is_one_line(tmp_path, name, text, needle):
    from harness.eval._pricing import read_cost_config

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(HarnessUsageError) as info:
        read_cost_config(str(path))
    message = str(info.value)
    assert needle in message and name in message and "\n" not in message


def test_a_good_price_file_still_reads(tmp_path):
    from harness.eval._pricing import read_cost_config

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"m/x": PRICES}))
    assert read_cost_config(str(path))["m/x"].output == 2.0
    path = tmp_path / "p.yaml"  # YAML 1.1 reads 3e-6 (no dot) as a string: it is a price
    path.write_text("m/x: {input: 3e-6, output: 1, input_cache_write: 0, input_cache_read: 0}")
    assert read_cost_config(str(path))["m/x"].input == 3e-6


@pytest.mark.parametrize("limit", [math.nan, math.inf, 0.0, -1.0, 1e300])
def test_a_cost_limit_that_cannot_fire_is_refused(limit):
    from harness.eval._pricing import apply_prices

    with pytest.raises(HarnessUsageError, match="--cost-limit"):
        apply_prices(None, limit, [])


# --- class 5 and 10: -T and -M values -----------------------------------------------------


@pytest.mark.parametrize(
    ("pair", "needle"),
    [
        ("n=" + "[" * 500_000, "nested 500000 deep"),
        ("n=" + '{"a":' * 300, "nested 300 deep"),
        ("n=" + "1" * 5000, "an integer too long"),
    ],
)
def test_a_task_argument_nested_or_too_long_to_read_is_one_line(pair, needle):
    from harness.kv_args import parse_kv

    with pytest.raises(HarnessUsageError) as info:
        parse_kv([pair], "-T")
    assert needle in str(info.value) and "-T n=" in str(info.value)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize(
    ("value", "annotation", "needle"),
    [(1e300, int, "is over"), (10**400, float, "not finite"), (2.5, int, "whole number"),
     (True, float, "wants float")],
)  # fmt: skip
def test_a_typed_argument_out_of_its_type_says_why(value, annotation, needle):
    from harness.eval._typed_args import convert

    with pytest.raises(HarnessUsageError) as info:
        convert(value, annotation, "-T", "k")
    assert needle in str(info.value) and len(str(info.value)) < 300


# --- class 5: a log's usage, scores and seconds -------------------------------------------


@pytest.mark.parametrize(
    ("usage", "needle"),
    [
        ({"m": {"total_cost": 1e308}}, "total_cost 1e+308 is over"),
        ({"m": {"total_cost": -1}}, "total_cost -1 is below 0"),
        ({"m": {"total_cost": True}}, "total_cost true is not a number"),
        ({"m": {"total_cost": "1.5"}}, "total_cost '1.5' is not a number"),
        ({"m": {"total_cost": math.nan}}, "total_cost nan is not finite"),
        ({"m": {"input_tokens": 1e308}}, "input_tokens 1e+308 is over"),
        ({"m": {"output_tokens": -5}}, "output_tokens -5 is below 0"),
        ({"m": {"output_tokens": 2.5}}, "not a whole number"),
        ({"m": [1, 2]}, "usage is a list"),
    ],
)
def test_usage_that_is_not_numbers_is_named(usage, needle):
    from harness.report._cost import usage_problems

    problems = usage_problems(usage)
    assert problems and needle in problems[0]


@pytest.mark.parametrize(
    ("value", "reason"),
    [(1e308, "unscored (1e+308 is over 1e+15)"), (-1e308, "unscored (-1e+308 is below"),
     ("1e308", "unscored (1e+308 is over"), (10**400, "not finite"),
     (math.nan, "unscored (nan)"), ("inf", "unscored (inf)")],
)  # fmt: skip
def test_a_score_past_the_float_range_is_unscored_not_summed(value, reason):
    from harness.logs import parse_score

    number, why = parse_score(value)
    assert number == 0.0 and reason in why


def test_scores_and_seconds_within_range_are_read():
    from harness.logs import _seconds, parse_score

    assert parse_score(1e15) == (1e15, "") and parse_score(-0.5) == (-0.5, "")
    assert _seconds(1e308) != _seconds(1e308) and _seconds(2.5) == 2.5  # nan, then 2.5


@pytest.mark.parametrize(
    "values",
    [[1e308] * 8, [1e308, -1e308] * 4, [1e308, 0.0] * 4, [1.7e308, 1.7e308, -1.7e308],
     [5e-324] * 3, [1e308, 1e308]],
)  # fmt: skip
def test_t_interval_near_the_float_limit_does_not_overflow(values):
    from harness.stats._intervals import TOO_LARGE, clustered_t_interval, t_interval

    for ci in (
        t_interval(values),
        clustered_t_interval(values, [i % 2 for i in range(len(values))]),
    ):
        assert math.isfinite(ci.estimate)
        assert min(values) <= ci.estimate <= max(values)
        assert (math.isfinite(ci.low) and math.isfinite(ci.high)) or ci.method == TOO_LARGE


def test_t_interval_keeps_its_values_on_ordinary_data():
    from scipy import stats

    from harness.stats._intervals import t_interval

    values = [0.2, 1.5, 3.25, 0.0, 7.0]
    ci = t_interval(values)
    # scipy.stats.t.interval(0.95, 4, loc=mean, scale=sem): the reference
    mean, sem = sum(values) / 5, stats.sem(values)
    low, high = stats.t.interval(0.95, 4, loc=mean, scale=sem)
    tol = 8 * 5 * 2.2e-16 * max(abs(low), abs(high))  # eps x values x a few operations
    assert ci.method == "t" and abs(ci.low - low) <= tol and abs(ci.high - high) <= tol


@pytest.mark.parametrize("cost", [1e308, -1.0, 1e7, True, math.nan, math.inf, "0.5"])
def test_a_logs_total_cost_that_is_not_dollars_is_invalid_never_published(cost):
    from harness.leaderboard.site_costs import cost_json
    from harness.report._cost import cost_row, cost_table
    from tests.test_cost_rows import _record, _sample

    usage = {"m/x": {"input_tokens": 10, "output_tokens": 5, "total_cost": cost}}
    good = {"m/x": {"input_tokens": 10, "output_tokens": 5, "total_cost": 0.25}}
    samples = [_sample(f"p{i}", 1, "CI"[i % 2], usage if i == 3 else good, 1.0) for i in range(8)]
    row = cost_row([_record(samples)])  # 1e308 summed with fsum raised OverflowError
    assert row.dollars.method.startswith("invalid: sample p3 m/x total_cost")
    assert math.isnan(row.dollars.estimate) and math.isnan(row.per_correct.estimate)
    published = cost_json(row)
    assert published["dollars"] is None and published["per_correct"] is None
    assert published["input_tokens"] is None and "invalid" in published["dollars_method"]
    _, _, body = cost_table([row])
    assert body[0][6].startswith("invalid") and "-1.0" not in " ".join(body[0])


# --- class 10: old cases still open --------------------------------------------------------


def _cli(args: list[str]) -> int:
    from harness.cli import main

    try:
        main(args, prog_name="harness")
    except SystemExit as ex:
        return int(ex.code or 0)
    return 0


@pytest.mark.parametrize(
    ("target", "needle"),
    [("/proc/x.jsonl", "cannot be written"), ("{tmp}", "not a regular file"),
     ("/dev/full", "not a regular file"), ("{tmp}/mine.txt", "--force"),
     ("{tmp}/link.jsonl", "link"), ("{tmp}/nofolder/x.jsonl", "does not exist"), ("", "empty")],
)  # fmt: skip
def test_sage_score_output_is_checked_before_any_work(tmp_path, capsys, target, needle):
    (tmp_path / "mine.txt").write_text("my notes\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "mine.txt")
    data = tmp_path / "d.jsonl"
    data.write_text("not read: the output is checked first\n")
    out = target.replace("{tmp}", str(tmp_path))
    assert _cli(["sage", "score", "--data", str(data), "--embedder", "hashing", "-o", out]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("harness: error: -o") and needle in err[0]
    assert (tmp_path / "mine.txt").read_text() == "my notes\n"


def test_hf_model_offline_and_not_cached_is_one_line_at_once(monkeypatch, capsys):
    import socket

    from harness.eval import build_models

    attempts = []

    def unreachable(*args, **kwargs):
        attempts.append(args)
        raise OSError(-2, "Name or service not known")

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HTTPS_PROXY", "https_proxy",
                 "ALL_PROXY", "all_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(socket, "create_connection", unreachable)
    with pytest.raises(HarnessUsageError) as info:
        build_models(("hf/harness-tests/no-such-model",), {}, None)
    assert len(attempts) == 1  # one probe of the hub, no retries (no wall-clock assertion)
    assert "cannot be reached" in str(info.value) and "not in the local" in str(info.value)
    assert "Retrying" not in capsys.readouterr().err


def test_hf_probe_is_skipped_for_a_local_folder(tmp_path, monkeypatch):
    import socket

    from harness.eval._checks import check_hub_reachable

    def fail(*args, **kwargs):
        raise AssertionError("probed the hub for a folder on disk")

    monkeypatch.setattr(socket, "create_connection", fail)
    check_hub_reachable(f"hf/{tmp_path}")
    assert Path(tmp_path).is_dir()
