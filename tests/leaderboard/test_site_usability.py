"""Issue 32's site findings: local folders on the pages, tie order, a log that kills the build."""

from __future__ import annotations

import json
from pathlib import Path

from harness.leaderboard.build import build_site
from harness.leaderboard.pages import board_rows
from harness.leaderboard.ranking import ModelRow, TaskTable
from harness.stats._intervals import Interval
from harness.suites.catalog import catalog_design
from tests.leaderboard.logs import template_log, write_variant


def _row(model: str, score: float, rank: int) -> ModelRow:
    return ModelRow(model, Interval(score, score - 0.1, score + 0.1, 0.95, "wilson", 50), 50, 0,
                    rank, "a", f"{model}.eval")  # fmt: skip


def test_models_tied_on_rank_are_ordered_by_score():
    # all share rank 1 (no test separates them); the names sort the other way round
    table = TaskTable("s", "t", (_row("a/low", 0.2, 1), _row("b/mid", 0.5, 1),
                                 _row("c/high", 0.8, 1)), (), 0.05)  # fmt: skip
    assert [r.model for r in board_rows([table], lambda _: None)] == ["c/high", "b/mid", "a/low"]


def test_no_local_folder_reaches_pages_file_names_csv_or_json(tmp_path):
    template = template_log(tmp_path / "t", 8)
    logs = tmp_path / "logs"
    home = "/home/ann-secret-folder/runs"
    models = [f"replay/{home}/a/answers.jsonl", f"replay/{home}/b/answers.jsonl", "openai/x"]
    for k, model in enumerate(models):
        write_variant(template, logs / f"{k}.eval", task="arith_easy", model=model,
                      accuracy=0.5, seed=k)  # fmt: skip
    (logs / "broken.eval").write_bytes(b"PK not a zip")
    site = tmp_path / "site"
    build_site([str(logs)], catalog_design, str(site), viewer=False)
    published = [p for p in site.rglob("*") if p.is_file()]
    for path in published:
        assert "ann-secret-folder" not in str(path.relative_to(site))
        assert "ann-secret-folder" not in path.read_text(encoding="utf-8"), path
        assert str(tmp_path) not in path.read_text(encoding="utf-8"), path
    board = json.loads((site / "leaderboard.json").read_text())
    names = {r["model"] for t in board["tasks"] for r in t["rows"]}
    assert len(names) == 3  # two answers.jsonl in two folders stay two models
    assert board["left_out"] == [{"log": "broken.eval", "reason": board["left_out"][0]["reason"]}]


def test_hostile_scores_and_a_300_character_model_are_left_out_or_shown_not_fatal(tmp_path):
    template = template_log(tmp_path / "t", 8)
    logs = tmp_path / "logs"
    write_variant(template, logs / "long.eval", task="arith_easy", model="scripted/" + "a" * 300,
                  accuracy=0.5, seed=1)  # fmt: skip
    write_variant(template, logs / "ok.eval", task="arith_easy", model="openai/x",
                  accuracy=0.5, seed=2)  # fmt: skip
    hostile = write_variant(template, logs / "hostile.eval", task="arith_easy", model="x/h",
                            accuracy=0.5, seed=3)  # fmt: skip
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(hostile))
    for sample, value in zip(
        log.samples or [], [{"judge": "x"}, "null", 1e308, -1e308], strict=False
    ):
        for score in sample.scores.values():
            score.value = value  # type: ignore[assignment]
    write_eval_log(log, str(hostile))
    result = build_site([str(logs)], catalog_design, str(tmp_path / "site"), viewer=False)
    assert result.logs >= 2
    assert all(len(p.name) < 255 for p in (tmp_path / "site").rglob("*"))
    assert Path(tmp_path / "site" / "index.html").is_file()
