"""A real browser reads a page from the site server, follows a link and takes a screenshot."""

from __future__ import annotations

from pathlib import Path

from tests.leaderboard.browser import chromium_page, page_errors, served

INDEX = """<!doctype html>
<html><head><meta charset="utf-8"><title>Board</title><link rel="icon" href="data:,"></head>
<body>
<table id="board">
  <tr><th>model</th><th>accuracy</th></tr>
  <tr><td>alpha-7b</td><td>0.81</td></tr>
  <tr><td>beta-3b</td><td>0.64</td></tr>
</table>
<a id="details" href="details/alpha.html">alpha-7b details</a>
</body></html>
"""

DETAILS = """<!doctype html>
<html><head><meta charset="utf-8"><title>alpha-7b</title><link rel="icon" href="data:,"></head>
<body>
<h1>alpha-7b details</h1></body></html>
"""


def test_browser_smoke(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "details").mkdir(parents=True)
    (site / "index.html").write_text(INDEX)
    (site / "details" / "alpha.html").write_text(DETAILS)
    shot = tmp_path / "smoke.png"

    with served(site) as base, chromium_page() as page:
        errors = page_errors(page)
        page.goto(base)
        rows = page.locator("#board tr")
        assert rows.count() == 3
        assert rows.nth(1).inner_text().split() == ["alpha-7b", "0.81"]
        assert "beta-3b" in page.locator("#board").inner_text()

        page.click("#details")
        page.wait_for_url(f"{base}details/alpha.html")
        assert page.locator("h1").inner_text() == "alpha-7b details"
        page.screenshot(path=str(shot), full_page=True)
        assert errors == []

    assert shot.is_file()
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert shot.stat().st_size > 1000
