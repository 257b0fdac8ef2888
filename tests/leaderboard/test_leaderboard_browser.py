"""The built leaderboard in Debian's chromium, served by `harness leaderboard serve`'s server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.leaderboard.browser import chromium_page, page_errors, served
from tests.leaderboard.conftest import MODELS, N_SAMPLES, TASKS

CELL = re.compile(r"([\d.]+) \[([\d.]+), ([\d.]+)\] (\d+) err #(\d+)")


def test_site_in_a_real_browser(built_site, tmp_path: Path) -> None:
    site, _ = built_site
    data = json.loads((site / "leaderboard.json").read_text())
    expected = {(t["task"], r["model"]): r for t in data["tasks"] for r in t["rows"]}
    with served(site) as base, chromium_page() as page:
        errors = page_errors(page)
        page.goto(base + "index.html")

        # every row and number against leaderboard.json
        rows = page.locator("#board tbody tr")
        assert rows.count() == len(MODELS)
        headers = [h.strip() for h in page.locator("#board thead th button").all_inner_texts()]
        assert headers == ["Model", "Overall", *TASKS]
        # rows come in the order of the overall column (mean rank, lower first)
        overall = [float(v) for v in page.locator("#board tbody tr td:nth-child(2)")
                   .evaluate_all("cells => cells.map(c => c.dataset.value)")]  # fmt: skip
        assert overall == sorted(overall)
        for i in range(rows.count()):
            model = rows.nth(i).locator("th").inner_text().strip()
            cells = rows.nth(i).locator("td").all_inner_texts()[1:]
            for task, text in zip(TASKS, cells, strict=True):
                m = CELL.search(" ".join(text.split()))
                assert m, text
                ref = expected[(task, model)]
                assert float(m[1]) == round(ref["score"], 3)
                assert (float(m[2]), float(m[3])) == (
                    round(ref["ci_low"], 3),
                    round(ref["ci_high"], 3),
                )
                assert (int(m[4]), int(m[5])) == (ref["errors"], ref["rank"])

        # sorting a column, both ways
        def column(col: int) -> list[float]:
            return [float(v) for v in page.locator(f"#board tbody tr td:nth-child({col + 1})")
                    .evaluate_all("cells => cells.map(c => c.dataset.value)")]  # fmt: skip

        page.get_by_role("button", name=TASKS[1]).click()
        assert column(3) == sorted(column(3), reverse=True)
        page.get_by_role("button", name=TASKS[1]).click()
        assert column(3) == sorted(column(3))
        page.get_by_role("button", name="Model").click()
        names = page.locator("#board tbody th").all_inner_texts()
        assert names == sorted(names, reverse=True)

        # the filter box narrows the rows
        page.locator("#filter").fill("weak")
        assert page.locator("#board tbody tr:visible").count() == 1
        page.locator("#filter").fill("")
        page.screenshot(path=str(tmp_path / "index.png"), full_page=True)

        # on a 375 px screen the page does not overflow; the board scrolls in its own box and
        # the first score column starts on screen
        page.set_viewport_size({"width": 375, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth") <= 375 + 1
        first_score = page.locator("#board tbody tr").first.locator("td").nth(1).bounding_box()
        # (the whole first score cell on screen; at 353 px its start alone was not enough)
        assert first_score is not None
        assert first_score["x"] + first_score["width"] <= 375, first_score
        page.screenshot(path=str(tmp_path / "index-375.png"), full_page=True)
        shutil.copy(tmp_path / "index-375.png", Path("/tmp/index-375.png"))
        page.set_viewport_size({"width": 1280, "height": 800})

        # a suite page, with its plots loaded; its numeric columns sort as numbers
        page.locator("#board thead a").first.click()
        page.wait_for_url("**/suite/arith.html*")
        assert page.locator("h1").inner_text() == "Suite arith"
        ranked = page.locator("section").first.locator("table").first
        ranked.get_by_role("button", name="n", exact=True).click()
        ns = [int(v) for v in ranked.locator("tbody tr td:nth-child(6)").all_inner_texts()]
        assert ns == sorted(ns, reverse=True)
        widths = page.locator("img").evaluate_all("imgs => imgs.map(i => i.naturalWidth)")
        assert len(widths) == 3 * len(TASKS) and all(w > 0 for w in widths)
        # the accuracy-cost frontier: its plot loaded and its table, one row per model
        frontier = page.locator("img.frontier").first
        frontier.scroll_into_view_if_needed()
        assert frontier.evaluate("i => i.complete && i.naturalWidth > 0")
        assert frontier.get_attribute("alt").startswith("Accuracy against")
        table = page.locator("table.frontier-table").first
        assert table.locator("tbody tr").count() == len(MODELS)
        probabilities = [float(v) for v in table.locator("tbody td:nth-child(5)").all_inner_texts()]
        assert all(0 <= p <= 1 for p in probabilities) and max(probabilities) > 0.5
        box = frontier.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280
        page.screenshot(path=str(tmp_path / "suite.png"), full_page=True)
        # on a 375 px screen the suite page does not overflow and the frontier fits the screen
        page.set_viewport_size({"width": 375, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth") <= 375 + 1
        frontier.scroll_into_view_if_needed()
        box = frontier.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375, box
        assert box["height"] > 100  # scaled down, not collapsed
        page.screenshot(path=str(tmp_path / "suite-375.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})

        # one log in the viewer, with its samples
        page.goto(base + "index.html")
        page.locator("#board tbody tr td a").first.click()
        page.wait_for_url("**/viewer/index.html#/logs/*")
        page.get_by_text("q0", exact=True).wait_for()  # the grid shows the first ids (sorted)
        assert page.get_by_text("q1", exact=True).count() == 1
        assert page.get_by_text(f"{N_SAMPLES} Samples").count() >= 1
        page.screenshot(path=str(tmp_path / "viewer.png"))

        # with JavaScript off the table is all there and the filter box stays hidden
        context = page.context.browser.new_context(java_script_enabled=False)
        plain = context.new_page()
        plain.goto(base + "index.html")
        assert plain.locator("#board tbody tr").count() == len(MODELS)
        assert not plain.locator("#filter").is_visible()
        context.close()
    assert errors == []
    for name in ("index.png", "suite.png", "suite-375.png", "viewer.png"):
        assert (tmp_path / name).stat().st_size > 1000
    keep = Path("/tmp/leaderboard-shots")  # for a human to look at; harmless elsewhere
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(tmp_path, keep, ignore=shutil.ignore_patterns("*.eval"))
