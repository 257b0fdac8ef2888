"""inspect's bundled viewer, served by the site server, shows one log's samples in chromium."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.leaderboard.viewer import bundle_viewer
from tests.leaderboard.browser import chromium_page, page_errors, served
from tests.leaderboard.test_viewer import PROMPTS, small_logs

if TYPE_CHECKING:  # imported lazily so that a missing playwright fails with the install hint
    from playwright.sync_api import Response


def test_viewer_opens_one_log(tmp_path: Path) -> None:
    alpha, beta = small_logs(tmp_path / "logs")
    site = tmp_path / "site"
    urls = bundle_viewer([alpha, beta], site)
    shot = tmp_path / "viewer.png"

    with served(site) as base, chromium_page() as page:
        errors = page_errors(page)
        ranges: list[int] = []

        def on_response(response: Response) -> None:
            if response.url.endswith(".eval") and response.request.headers.get("range"):
                ranges.append(response.status)

        page.on("response", on_response)
        page.goto(base + urls[alpha])

        # the samples grid: one row per sample of this log, and none of the other log
        prompt = PROMPTS["alpha"][1]
        page.get_by_text(prompt, exact=True).wait_for()
        for other in PROMPTS["alpha"]:
            assert page.get_by_text(other, exact=True).count() == 1
        assert page.get_by_text("probe_alpha", exact=True).first.is_visible()
        for other in PROMPTS["beta"]:
            assert page.get_by_text(other, exact=True).count() == 0

        # one sample's transcript, read from the .eval zip with range requests
        page.get_by_text(prompt, exact=True).click()
        page.get_by_text(f"Reply to: {prompt}").first.wait_for()
        assert "/samples/sample/2/1" in page.url
        page.screenshot(path=str(shot))

    assert ranges and set(ranges) == {206}, ranges
    assert errors == []
    assert shot.is_file() and shot.stat().st_size > 1000
