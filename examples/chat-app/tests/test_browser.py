"""The page in Debian's Chromium (Playwright): Ask, then Stop mid-answer.  The page keeps
the partial answer marked stopped, that is the text the app recorded as its cut-off UI
write, and the mock saw the app's upstream request end.  Skipped where Chromium is not
installed, except under CI, which installs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from chat_harness import ANSWER, Running
from test_review_evidence import receipt_fills_the_record

from tracestore.mock.pytest_plugin import assert_clean

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, timeout=60_000,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            yield launched
        finally:
            launched.close()


def test_ask_then_stop_in_the_page(browser: Any, chat: Any, tracestore_recorder: Any,
                                   tmp_path: Any) -> None:
    app: Running = chat("stop.json")
    page = browser.new_page()
    try:
        page.goto(app.url)
        page.click("#ask")
        page.wait_for_function("document.getElementById('answer').textContent.length >= 5")
        page.click("#stop")
        page.wait_for_function("document.getElementById('status').textContent === 'stopped'")
        shown = page.text_content("#answer")
        assert page.get_attribute("#answer", "class") == "cut-off"
    finally:
        page.close()
    (turn,) = app.app.turns
    assert shown == app.state(turn)["attempts"][0]["shown"]
    assert shown and ANSWER.startswith(shown) and shown != ANSWER
    assert app.state(turn)["history"] == []
    assert_clean(tracestore_recorder, turn)
    app.wait(lambda: app.mock.log[0]["client_left_at"] is not None)
    # The Stop pressed in the page reached the provider: its receipt fills the record.
    receipt_fills_the_record(app, turn, tracestore_recorder, tmp_path)
