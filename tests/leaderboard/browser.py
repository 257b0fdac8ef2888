"""Browser helpers for tests: serve a site folder, and drive Debian's chromium with Playwright.

Playwright drives `/usr/bin/chromium` (installed by `scripts/install-debian-packages.sh`); it
never downloads browsers of its own. A missing browser or Playwright fails the test, naming the fix.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.leaderboard.serve import make_server

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 30_000  # generous: the viewer's first render takes a few seconds on 2 shared cores


@contextlib.contextmanager
def served(site: Path) -> Iterator[str]:
    """Serve `site` from a background thread; yield its base URL, ending in `/`."""
    server = make_server(site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def chromium_page() -> Iterator[Page]:
    """A Playwright page in headless Debian chromium, closed afterwards."""
    if not CHROMIUM.is_file() or shutil.which(str(CHROMIUM)) is None:
        log = Path(__file__).parents[2] / ".venv" / "debian-install.log"
        why = f"; the install said: {log.read_text()[-600:]}" if log.is_file() else ""
        pytest.fail(
            f"{CHROMIUM} not found; run scripts/install-debian-packages.sh chromium=chromium{why}",
            pytrace=False,
        )
    if importlib.util.find_spec("playwright") is None:
        pytest.fail(
            "playwright is not installed; `make test` installs it (dev extra), and "
            "scripts/install-debian-packages.sh installs the chromium it drives",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # --no-sandbox: chromium refuses to start its sandbox as root, and tests run as root
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def page_errors(page: Page) -> list[str]:
    """A list that fills with the page's uncaught errors and console errors from now on."""
    errors: list[str] = []
    page.on("pageerror", lambda ex: errors.append(f"pageerror: {ex}"))
    page.on(
        "console",
        lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    return errors
