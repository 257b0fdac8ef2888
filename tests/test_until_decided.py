"""`harness eval --until decided`, live: three models of different skill stop early, and their
decisions agree with a full run's fixed-n engine on the same items."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.report._data import build_report
from harness.stats._compare import compare
from harness.stats._design import Design
from harness.suites.arith.task import arith
from harness.suites.catalog import catalog_design

SKILL = {"good": 0.95, "mid": 0.5, "bad": 0.05}


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    root = tmp_path_factory.mktemp("replays")
    rng = np.random.default_rng(0)
    truth = {}
    for name, p in SKILL.items():
        lines = []
        for s in arith(n=200).dataset:
            right = bool(rng.random() < p)
            truth.setdefault(name, {})[str(s.id)] = float(right)
            lines.append(json.dumps({"id": s.id, "output": str(s.target) if right else "-1"}))
        (root / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return root, truth


def _eval(*args: str):
    return CliRunner().invoke(main, ["eval", "--suite", "arith", "--display", "none", *args])


def test_decided_run_stops_early_and_agrees_with_the_full_data(replays, tmp_path):
    root, truth = replays
    models = [f"replay/{root / name}.jsonl" for name in SKILL]
    args = [a for m in models for a in ("--model", m)]
    result = _eval(*args, "--until", "decided", "--log-dir", str(tmp_path / "logs"), "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    rows = printed["scores"]
    assert len(rows) == 3 and min(r["n"] for r in rows) < 200  # stopped early
    assert all("anytime-valid" in r["ci_method"] for r in rows)  # no fixed-n interval
    decided = {(p["model_a"], p["model_b"]): p for p in printed["pairs"]}
    assert len(decided) == 3 and all("after" in p["test"]["method"] for p in decided.values())
    for p in decided.values():  # each pair's CS is at 1 - alpha / 3, the family at 95%
        assert abs(p["test"]["confidence"] - (1 - 0.05 / 3)) < 1e-12, p["test"]
        assert "1 - 0.05/3 each (98.33%), 95% jointly" in p["test"]["method"]
    full = compare(Design(), {f"replay/{root / n}.jsonl": truth[n] for n in SKILL})
    for p in full.pairs:
        mine = decided.get((p.arm_a, p.arm_b))
        flipped = mine is None
        mine = mine or decided[(p.arm_b, p.arm_a)]
        resolution = mine["note"]
        if resolution in ("a > b", "b > a") and p.significant(0.05):
            sign = 1 if (resolution == "a > b") != flipped else -1
            assert sign * p.test.estimate > 0, (p, mine)  # the same direction as the full data
    report = build_report([str(tmp_path / "logs")], catalog_design)
    assert len(report.pairs) == 3 and not report.not_comparable


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--until", "decided", "--margin", "-0.1"], "--margin"),
        (["--until", "decided", "--budget", "0"], "--budget"),
        (["--until", "decided"], "give --width W"),
        (["--until", "decided", "--width", "0"], "--width must be in"),
        (["--budget", "5"], "go with --until decided"),
    ],
)
def test_bad_settings_are_one_line(replays, tmp_path, extra, says):
    root, _ = replays
    result = _eval("--model", f"replay/{root}/good.jsonl", "--log-dir", str(tmp_path), *extra)
    if says not in ("give --width W", "go with --until decided", "--width must be in"):
        result = _eval("--model", f"replay/{root}/good.jsonl", "--model",
                       f"replay/{root}/bad.jsonl", "--log-dir", str(tmp_path), *extra)  # fmt: skip
    assert result.exit_code == 2 and says in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_anytime_interval_follows_the_recorded_order(replays, tmp_path):
    """The score row is the CS over the items in the order they were asked."""
    from harness.compare._scores import anytime_interval, score_rows
    from harness.logs import read_logs

    root, truth = replays
    args = ["--model", f"replay/{root}/good.jsonl", "--model", f"replay/{root}/bad.jsonl"]
    assert _eval(*args, "--until", "decided", "--log-dir", str(tmp_path)).exit_code == 0
    for record in read_logs([str(tmp_path)]).used:
        order = record.sequential["orders"][record.task]
        name = "good" if "good" in record.model else "bad"
        asked = [u for u in order if u in {s.id for s in record.samples}]
        [row] = score_rows(record)
        ci = anytime_interval([truth[name][u] for u in asked], 0.05)
        assert (row.value, row.ci_low, row.ci_high, row.n) == (
            ci.estimate,
            ci.low,
            ci.high,
            len(asked),
        )
        assert asked == order[: len(asked)]  # a prefix of the shared order


def test_the_site_ranks_by_the_resolved_directions(replays, tmp_path):
    from pathlib import Path

    from harness.leaderboard.build import build_site
    from harness.suites.catalog import catalog_design

    root, _ = replays
    args = [a for n in SKILL for a in ("--model", f"replay/{root}/{n}.jsonl")]
    assert _eval(*args, "--until", "decided", "--log-dir", str(tmp_path / "l")).exit_code == 0
    site = build_site([str(tmp_path / "l")], catalog_design, str(tmp_path / "site"), viewer=False)
    board = json.loads((Path(site.site) / "leaderboard.json").read_text())
    [table] = board["tasks"]
    ranks = {row["model"].split("/")[-1].split("~")[0]: row["rank"] for row in table["rows"]}
    assert ranks == {"good.jsonl": 1, "mid.jsonl": 2, "bad.jsonl": 3}
    assert all("anytime-valid" in p["method"] for p in table["pairs"])


def test_one_model_stops_when_its_interval_is_narrower_than_the_width(replays, tmp_path):
    from harness.logs import read_logs

    root, _ = replays
    result = _eval("--model", f"replay/{root}/good.jsonl", "--until", "decided",
                   "--width", "0.3", "--log-dir", str(tmp_path), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout[result.stdout.index("{") :])["scores"]
    assert row["n"] < 200 and row["ci_high"] - row["ci_low"] < 0.3 + 2e-3  # the grid's step
    assert "anytime-valid" in row["ci_method"]
    [record] = read_logs([str(tmp_path)]).used
    # the family stopped at its width; up to LAG items already in flight were answered too, and
    # the row's sequence, over every item asked in order, holds at that later time as well
    observed = record.stopping["items_per_model"][f"replay/{root}/good.jsonl"]
    assert observed <= row["n"] <= observed + 4


def test_a_decided_log_with_malformed_settings_is_reported_not_a_traceback(replays, tmp_path):
    """Another's log is hostile: forged sequential settings or decisions cost no traceback."""
    import dataclasses

    from harness.compare._pairs import comparable_groups, group_pairs
    from harness.compare._scores import score_rows
    from harness.logs import read_logs

    root, _ = replays
    args = ["--model", f"replay/{root}/good.jsonl", "--model", f"replay/{root}/bad.jsonl"]
    assert _eval(*args, "--until", "decided", "--log-dir", str(tmp_path)).exit_code == 0
    records = list(read_logs([str(tmp_path)]).used)
    forged = [
        dataclasses.replace(
            r,
            metadata={**r.metadata, "harness_sequential": {"alpha": "x", "orders": [1]}},
            stopping={"pairs": [{"a": 1}, "=HYPERLINK(1)", None]},
        )
        for r in records
    ]
    for r in forged:
        assert r.sequential == {} and score_rows(r)[0].ci_method == "wilson"
    bad_decisions = [
        dataclasses.replace(r, stopping={"pairs": [{"a": "x", "b": "y", "items": "9"}]})
        for r in records
    ]
    [group], _ = comparable_groups(bad_decisions)
    assert group_pairs(group) == []


def _stopping(log_dir):
    from harness.logs import read_logs

    (record,) = read_logs([str(log_dir)]).used
    return record


def test_active_adds_a_model_to_a_board_with_history(replays, tmp_path):
    root, truth = replays
    history = tmp_path / "history"
    result = _eval("--model", f"replay/{root}/good.jsonl", "--model", f"replay/{root}/bad.jsonl",
                   "--log-dir", str(history))  # fmt: skip
    assert result.exit_code == 0, result.output
    logs = tmp_path / "active"
    result = _eval("--model", f"replay/{root}/mid.jsonl", "--until", "decided", "--active",
                   "--history", str(history), "--log-dir", str(logs), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    record = _stopping(logs)
    active = record.stopping["active"]
    assert 0 < active["asked"] < active["visited"] <= 200  # items skipped, and it stopped early
    decided = {p["b"].rsplit("/", 1)[-1]: p["resolution"] for p in record.stopping["pairs"]}
    assert decided == {"good.jsonl": "b > a", "bad.jsonl": "a > b"}
    mid = np.mean(list(truth["mid"].values()))
    assert active["low"] <= mid <= active["high"]
    skipped = (record.stopping.get("order") or [])[: active["visited"]]
    assert skipped  # the order is recorded
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    (row,) = printed["scores"]
    assert "selection-weighted" in row["ci_method"] and row["ci_low"] == active["low"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--until", "decided", "--active"], "give --history LOGDIR"),
        (["--until", "decided", "--history", "x"], "--history goes with --active"),
        (["--active"], "go with --until decided"),
    ],
)
def test_active_bad_input_is_one_line(replays, tmp_path, extra, says):
    root, _ = replays
    result = _eval("--model", f"replay/{root}/good.jsonl", "--log-dir", str(tmp_path), *extra)
    assert result.exit_code == 2 and says in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_active_with_no_past_logs_is_one_line(replays, tmp_path):
    root, _ = replays
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["--until", "decided", "--active", "--history", str(empty), "--log-dir",
            str(tmp_path / "logs")]  # fmt: skip
    result = _eval("--model", f"replay/{root}/good.jsonl", *args)
    assert result.exit_code == 2 and "no usable history" in result.output, result.output
    two = _eval("--model", f"replay/{root}/good.jsonl", "--model", f"replay/{root}/bad.jsonl",
                *args)  # fmt: skip
    assert two.exit_code == 2 and "give one --model" in two.output
