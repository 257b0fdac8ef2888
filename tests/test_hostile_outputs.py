"""Issue 42, classes 7 and 8: user files and injection.

- One rule for output files: the harness's mark counts only on a file's first line (or as a
  JSON file's first key); `--force` never writes through a link; a report's plots beside it
  obey the same rule.
- Names from other people's logs are inert wherever they are shown: the terminal (no escape
  sequence, newline or Rich markup), a CSV (no formula), a Markdown report (no raw HTML, no
  link), and the site's manifest links (two logs that share a file name link their own).
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from harness.board._table import Board, read_board, write_board
from harness.cli.summary_table import print_rows
from harness.compare._scores import SummaryRow
from harness.errors import HarnessUsageError
from harness.eval._manifest import MANIFEST_KEY
from harness.leaderboard.site_costs import write_manifests
from harness.logs import LogIdentity, LogRecord, SampleScore
from harness.output_paths import REPORT_MARK, data_file, report_file
from harness.report._sections import markdown_table

# --- class 7: user files ---------------------------------------------------------------------


def test_a_mark_quoted_in_the_middle_of_a_users_notes_does_not_make_them_ours(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text(f"# my notes\n\nthe report starts with `{REPORT_MARK} -->`\n")
    with pytest.raises(HarnessUsageError, match="not written by harness report"):
        report_file(str(notes), "-o", force=False, fmt="md")


def test_a_report_marked_on_its_first_line_is_ours(tmp_path):
    report = tmp_path / "r.md"
    report.write_text(f"{REPORT_MARK} -->\n# harness report\n")
    assert report_file(str(report), "-o", force=False, fmt="md").replaced == ()


def test_force_never_writes_through_a_link_beside_the_report(tmp_path):
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG my photo")
    (tmp_path / "r.forest.png").symlink_to(photo)
    with pytest.raises(HarnessUsageError, match="is a link"):
        report_file(str(tmp_path / "r.md"), "-o", force=True, fmt="md")
    assert photo.read_bytes() == b"\x89PNG my photo"


def test_force_never_writes_through_a_linked_report(tmp_path):
    mine = tmp_path / "mine.md"
    mine.write_text("mine")
    (tmp_path / "r.md").symlink_to(mine)
    with pytest.raises(HarnessUsageError, match="is a link"):
        report_file(str(tmp_path / "r.md"), "-o", force=True, fmt="md")


def test_a_json_output_is_ours_only_when_the_mark_is_its_first_key(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text('my notes: the file holds {"written_by": "harness board replay", ...}\n')
    with pytest.raises(HarnessUsageError, match="not written by"):
        data_file(str(notes), "--json", force=False, mark="harness board replay")
    ours = tmp_path / "r.json"
    ours.write_text(json.dumps({"written_by": "harness board replay", "x": 1}, indent=2))
    assert data_file(str(ours), "--json", force=False, mark="harness board replay") == ours


def test_a_json_output_link_is_refused_even_with_force(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("{}")
    (tmp_path / "out.json").symlink_to(target)
    with pytest.raises(HarnessUsageError, match="is a link"):
        data_file(str(tmp_path / "out.json"), "--json", force=True, mark="harness board replay")


# --- class 8: injection ----------------------------------------------------------------------

HOSTILE = [
    "evil\x1b[2J\x1b]8;;http://x\x07click\x1b]8;;\x07",
    "two\nlines",
    "[bold red]loud[/bold red]",
    "rtl\u202eexe.txt",
]


def _row(model: str) -> SummaryRow:
    return SummaryRow("arith", "arith", model, "accuracy", 10, 0, 0.5, 0.2, 0.8, "wilson", "x")


def test_the_terminal_never_gets_a_control_character_or_markup_from_a_name():
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False, color_system=None)
    print_rows([_row(m) for m in HOSTILE], console=console)
    out = buffer.getvalue()
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b" in out and "\\u202e" in out  # shown, escaped
    assert "[bold red]loud" in out  # markup shown as text, not applied
    table_lines = [line for line in out.splitlines() if "lines" in line]
    assert any("two\\nlines" in line for line in table_lines)


def test_a_board_csv_never_holds_a_formula_and_reads_back_the_names(tmp_path):
    import numpy as np

    names = ['=HYPERLINK("http://x","y")', "+cmd", "@sum", "-1+1", "plain"]
    board = Board(tuple(names), ("=1+1", "item"), np.array([[1.0, 0.0]] * len(names)))
    out = tmp_path / "board.csv"
    write_board(board, out)
    for line in out.read_text().splitlines()[1:]:
        assert line[:1] not in ("=", "+", "@", "-"), line
    back = read_board(str(out))
    assert set(back.models) == set(names) and set(back.items) == {"=1+1", "item"}


def test_the_markdown_report_holds_no_raw_html_or_link_from_a_name():
    text = markdown_table(
        ["model"], [["<img src=x onerror=alert(1)>"], ["[x](javascript:alert(1))"], ["a\nb"]]
    )
    assert "<img" not in text and "](javascript" not in text
    assert "&lt;img" in text and "a b" in text


def _record(path: str, model: str) -> LogRecord:
    identity = LogIdentity("arith", "arith", (), "h", 1, model, ())
    manifest = {"tasks": {"arith": {"data": {"sha256": path}}}, "models": {}}
    sample = SampleScore("1", 1, (("match", 1.0),), "", {}, {})
    return LogRecord(path, identity, "2026-01-01", {MANIFEST_KEY: manifest}, (sample,))


def test_two_logs_that_share_a_file_name_link_their_own_manifests(tmp_path):
    a, b = _record("runs/a/log.eval", "m/a"), _record("runs/b/log.eval", "m/b")
    links = write_manifests([a, b], tmp_path)
    assert links[a.path] != links[b.path]
    got = {json.loads((tmp_path / links[r.path]).read_text())["model"] for r in (a, b)}
    assert got == {"m/a", "m/b"}
