"""The HTML report in a real browser: Debian's Chromium driven by Playwright.

What a reviewer sees is asserted on the rendered page (not on the markup): lanes and
positions, the violation, hostile model text inert, and not one request leaving the page.
T8's screenshot is kept as a test artifact under ``build/test-artifacts/`` (git-ignored);
``TRACESTORE_UPDATE_DOCS=1`` also refreshes ``docs/report-t8.png`` for the README.

Chromium comes from apt (``.ci/run`` installs it when missing), never from
``playwright install``: the browser must be one the distribution maintains.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from clihelp import run

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "fixtures" / "seed003"
HOSTILE = REPO / "fixtures" / "report" / "hostile-html.json"
ARTIFACTS = REPO / "build" / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: a missing browser there is a failure
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


def render(scenario: Path, trace: str, tmp_path: Path) -> Path:
    db = tmp_path / "store.db"
    code, _, err = run("replay", str(scenario), "--json", db=db)
    assert code == 0, err
    out = tmp_path / f"{trace}.html"
    code, _, err = run("report", trace, "--html", str(out), db=db)
    assert code == 0, err
    return out


class Page:
    """A page opened from a file, with every request it made recorded."""

    def __init__(self, browser: object, path: Path, width: int = 1400) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900},
                                           java_script_enabled=True)
        self.page = self.context.new_page()
        self.uri = path.as_uri()
        self.requests: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        # Anything that is not the report file itself is refused (and recorded above).
        self.context.route("**/*", lambda route: route.abort()
                           if route.request.url != path.as_uri() else route.continue_())
        self.page.goto(path.as_uri(), wait_until="load", timeout=30_000)
        self.page.wait_for_timeout(200)  # give any stray handler a chance to fire

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def t8_page(browser: object, tmp_path: Path) -> Iterator[Page]:
    page = Page(browser, render(SEED / "t8.json", "t8", tmp_path))
    yield page
    page.close()


def test_t8_lanes_and_positions_render(t8_page: Page) -> None:
    page = t8_page.page
    headers = page.locator("table.lanes thead th").all_inner_texts()
    assert [h.split()[0] for h in headers] == ["pos", "trace", "t8-old", "t8-new"]
    assert page.locator("table.lanes tbody tr").count() == 24
    positions = page.locator("table.lanes tbody td.poscol").all_inner_texts()
    assert positions == [str(p) for p in range(1, 25)]
    stop = page.locator("#e6")
    assert stop.get_attribute("data-lane") == "1" and stop.get_attribute("data-kind") == "stop"
    assert "STOP" in stop.locator("td.ev").inner_text()
    late = page.locator("#e10 td.ev")
    assert late.is_visible() and "late" in late.inner_text()
    assert page.locator("#e10").get_attribute("data-lane") == "1"
    assert page.locator("#e17").get_attribute("data-kind") == "drain"
    assert "native end: end_turn" in page.locator("#e15 td.ev").inner_text()
    # Decisions with their reasons, readable on the page.
    cards = page.locator("article.card")
    assert cards.nth(0).locator(".status").inner_text().lower() == "stopped"
    assert "local_stop_before_release" in cards.nth(0).inner_text()
    assert cards.nth(1).locator(".status").inner_text().lower() == "released"
    # Evidence links jump to the event rows.
    page.locator("section.record a.pos", has_text="#6").first.click()
    assert page.evaluate("location.hash") == "#e6"
    assert t8_page.requests == [t8_page.uri]


def test_t8_screenshot_is_kept_as_an_artifact(t8_page: Page) -> None:
    page = t8_page.page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    full = ARTIFACTS / "report-t8.png"
    page.screenshot(path=str(full), full_page=True)
    assert full.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and full.stat().st_size > 20_000
    if os.environ.get("TRACESTORE_UPDATE_DOCS"):
        # The README's picture: decisions, timeline and destinations (records below).
        box = page.locator("#audit").bounding_box()
        page.screenshot(path=str(REPO / "docs" / "report-t8.png"),
                        clip={"x": 0, "y": 0, "width": 1400, "height": box["y"] + box["height"]},
                        full_page=True)


def test_buggy_app_violation_is_visible(browser: object, tmp_path: Path) -> None:
    opened = Page(browser, render(SEED / "t8-buggy-app.json", "t8-buggy-app", tmp_path))
    try:
        page = opened.page
        flagged = page.locator("table.lanes tr.violation")
        assert flagged.count() == 2
        assert [flagged.nth(i).get_attribute("data-position") for i in range(2)] == ["20", "22"]
        ui_write = page.locator("#e20 td.ev")
        assert ui_write.is_visible() and "old_attempt_text_in_answer" in ui_write.inner_text()
        # Drawn differently from a correct write: the page's colours say so, not only words.
        bad = page.evaluate("getComputedStyle(document.querySelector('#e20 td.ev'))"
                            ".backgroundColor")
        good = page.evaluate("getComputedStyle(document.querySelector('#e21 td.ev'))"
                             ".backgroundColor")
        assert bad != good
        listed = page.locator("ul.violations li").all_inner_texts()
        assert len(listed) == 3 and "duplicate_history_entry" in listed[2]
        assert page.locator("#audit .dest.bad").count() == 2
        assert opened.requests == [opened.uri]
    finally:
        opened.close()


def test_hostile_model_text_stays_inert(browser: object, tmp_path: Path) -> None:
    opened = Page(browser, render(HOSTILE, "hostile-html", tmp_path))
    try:
        page = opened.page
        assert page.title() == "tracestore report: trace hostile-html"
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("script").count() == 0
        assert page.locator("body img, body link, body b:has-text('bold?')").count() == 0
        assert page.locator("a[href^='http']").count() == 0
        # The hostile text is shown as text, literally.
        text = page.locator("#timeline").inner_text()
        assert "<script>document.title='pwned';window.__pwned=1</script>" in text
        assert '<img src=x onerror="window.__pwned=2">' in text
        assert opened.requests == [opened.uri]
    finally:
        opened.close()


def test_the_docs_screenshot_exists() -> None:
    png = REPO / "docs" / "report-t8.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
