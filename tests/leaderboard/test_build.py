"""`harness leaderboard build`: numbers, ranks, bad logs, files and weight of the site."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
import sys
from pathlib import Path

from statsmodels.stats.proportion import proportion_confint

from harness.compare._pairs import Group
from harness.compare._scores import problem_means
from harness.leaderboard.ranking import task_table
from harness.logs import LogIdentity, LogRecord, SampleScore, read_log
from tests.leaderboard.conftest import MODELS, N_SAMPLES, TASKS


def _data(site: Path) -> dict:
    return json.loads((site / "leaderboard.json").read_text())


def test_numbers_match_an_independent_wilson(built_site):
    site, result = built_site
    data = _data(site)
    assert result.tasks == len(TASKS) and result.models == len(MODELS) and result.logs == 6
    from inspect_ai.log import read_eval_log

    for task in data["tasks"]:
        assert {r["model"] for r in task["rows"]} == set(MODELS)
        scores = [r["score"] for r in task["rows"]]
        assert scores == sorted(scores, reverse=True)
        for row in task["rows"]:
            log = read_eval_log(str(site / "viewer" / "logs" / row["log"]))
            correct = sum(s.error is None and s.scores["match"].value == "C" for s in log.samples)
            errors = sum(s.error is not None for s in log.samples)
            assert row["n"] == N_SAMPLES and row["errors"] == errors
            low, high = proportion_confint(correct, N_SAMPLES, method="wilson")
            assert math.isclose(row["score"], correct / N_SAMPLES, abs_tol=1e-6)
            assert math.isclose(row["ci_low"], low, abs_tol=1e-6)
            assert math.isclose(row["ci_high"], high, abs_tol=1e-6)


def test_ranks_follow_the_holm_corrected_tests(built_site):
    site, _ = built_site
    for task in _data(site)["tasks"]:
        rows = {r["model"]: r for r in task["rows"]}
        p = {frozenset((q["model_a"], q["model_b"])): q["p_holm"] for q in task["pairs"]}
        assert len(p) == 3
        for m, row in rows.items():
            better = sum(
                1
                for o in rows
                if o != m and p[frozenset((m, o))] < 0.05 and rows[o]["score"] > row["score"]
            )
            assert row["rank"] == 1 + better
        # 0.95 and 0.9 at n=60 are not separable; 0.2 is far below both
        assert rows["openai/strong"]["rank"] == rows["local/middle"]["rank"] == 1
        assert rows["scripted/weak"]["rank"] == 3
        assert set(rows["openai/strong"]["groups"]) & set(rows["local/middle"]["groups"])
        assert not set(rows["scripted/weak"]["groups"]) & set(rows["local/middle"]["groups"])


def _entry(model: str, values: list[float]) -> LogRecord:
    identity = LogIdentity("s", "t", (), "h", len(values), model, ())
    samples = tuple(
        SampleScore(f"i{i}", 1, (("match", v),), "", {}, {}) for i, v in enumerate(values)
    )
    return LogRecord(f"{model}.eval", identity, "2026-01-01", {}, samples)


def test_shared_ranks_and_letter_groups_on_constructed_scores():
    n = 200
    a = _entry("a", [1.0] * n)
    b = _entry("b", [1.0] * (n - 3) + [0.0] * 3)  # 3 discordant pairs: not separable from a
    c = _entry("c", [1.0] * 100 + [0.0] * 100)  # far below both
    d = _entry("d", [1.0] * 97 + [0.0] * 103)  # next to c
    table = task_table(Group("s", "t", "t", (c, a, d, b)))
    rows = {r.model: r for r in table.rows}
    assert [r.model for r in table.rows] == ["a", "b", "c", "d"]
    assert rows["a"].rank == rows["b"].rank == 1
    assert rows["c"].rank == rows["d"].rank == 3
    assert rows["a"].groups == rows["b"].groups == "a"
    assert rows["c"].groups == rows["d"].groups == "b"
    assert table.p_holm("a", "c") < 0.05 and table.p_holm("a", "b") > 0.05


def test_bad_logs_are_listed_with_their_reason_and_nothing_else_is_lost(built_site):
    site, result = built_site
    reasons = {Path(b["log"]).name: b["reason"] for b in _data(site)["left_out"]}
    assert reasons["errored.eval"].startswith("error: the provider failed")
    assert reasons["cancelled.eval"] == "cancelled"
    assert reasons["half.eval"].startswith("unreadable")
    assert len(result.left_out) == 3
    index = (site / "index.html").read_text()
    for name in reasons:
        assert name in index


def test_csv_has_the_json_numbers(built_site):
    site, _ = built_site
    rows = list(csv.DictReader((site / "leaderboard.csv").open()))
    data = _data(site)
    flat = {(t["task"], r["model"]): r for t in data["tasks"] for r in t["rows"]}
    assert len(rows) == len(flat)
    for row in rows:
        ref = flat[(row["task"], row["model"])]
        assert float(row["score"]) == ref["score"] and int(row["rank"]) == ref["rank"]
        assert float(row["ci_low"]) == ref["ci_low"] and int(row["errors"]) == ref["errors"]


def test_pages_are_self_contained_accessible_and_light(built_site):
    site, _ = built_site
    pages = [p for p in site.rglob("*") if p.is_file() and "viewer" not in p.parts]
    names = {p.relative_to(site).as_posix() for p in pages}
    assert {"index.html", "suite/arith.html", "leaderboard.json", "leaderboard.csv"} <= names
    assert sum(1 for n in names if n.startswith("model/")) == len(MODELS)
    assert sum(1 for n in names if n.endswith("-forest.svg")) == len(TASKS)
    assert sum(1 for n in names if n.endswith("-pvalues.svg")) == len(TASKS)
    assert sum(p.stat().st_size for p in pages) < 500_000
    for p in pages:
        if p.suffix == ".html":
            text = p.read_text()
            # nothing fetched from elsewhere: no remote src/href, no web fonts
            assert not re.search(r'(src|href)="(https?:)?//', text), p
            assert "@font-face" not in text and "<caption>" in text and 'scope="col"' in text
            for img in re.findall(r"<img [^>]*>", text):
                assert re.search(r'alt="[^"]{20,}"', img), img
    suite = (site / "suite" / "arith.html").read_text()
    assert suite.count("<section") == len(TASKS)


def test_cli_build_and_bad_input(built_site, tmp_path):
    site, _ = built_site
    logs = site.parent / "logs"
    run = [sys.executable, "-m", "harness.cli", "leaderboard", "build"]
    ok = subprocess.run(
        [*run, str(logs), "-o", str(tmp_path / "s"), "--no-viewer"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert "3 models, 2 tasks, 6 logs, 3 left out" in ok.stdout
    assert "left out" in ok.stderr and "cancelled" in ok.stderr
    missing = subprocess.run([*run, str(tmp_path / "nope"), "-o", str(tmp_path / "x")],
                             capture_output=True, text=True)  # fmt: skip
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    none = subprocess.run([*run, str(empty), "-o", str(tmp_path / "y")], capture_output=True,
                          text=True)  # fmt: skip
    assert none.returncode == 2 and "no inspect logs" in none.stderr
    serve = subprocess.run(
        [sys.executable, "-m", "harness.cli", "leaderboard", "serve", str(empty)],
        capture_output=True,
        text=True,
    )
    assert serve.returncode == 2 and "not a built site" in serve.stderr


def test_plots_are_well_formed_svg(built_site):
    import xml.etree.ElementTree as ET

    site, _ = built_site
    plots = sorted((site / "plots").glob("*.svg"))
    assert len(plots) == 3 * len(TASKS)  # forest, p-values and the accuracy-cost frontier
    for p in plots:
        root = ET.fromstring(p.read_text())  # raises on malformed XML
        assert root.find("{http://www.w3.org/2000/svg}title") is not None


def test_json_logs_read_like_eval_logs(built_site, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    site, _ = built_site
    source = next((site.parent / "logs").glob("arith_hard-2.eval"))
    as_json = tmp_path / "same.json"
    write_eval_log(read_eval_log(str(source)), str(as_json))
    a, b = read_log(str(source)), read_log(str(as_json))
    assert isinstance(a, LogRecord) and isinstance(b, LogRecord)
    assert (problem_means(a), a.identity) == (problem_means(b), b.identity)
    assert sum(bool(s.error) for s in a.samples) == 2 and len(problem_means(a)) == N_SAMPLES
