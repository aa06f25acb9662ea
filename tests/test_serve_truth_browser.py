"""The desk's truthful header, violations-first trace page and narrow layout in a real
browser: Debian's Chromium driven by Playwright (as test_serve_browser.py), against desks
served by uvicorn on free 127.0.0.1 ports over one temp store whose reviewer alice has a
registered key.  One desk signs with alice's key, one was started ``--reviewer carol``
without a key (the store refuses unsigned reviews).

The leak page's screenshots at 1280 and 390 px are kept under build/test-artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clihelp import run
from test_report_browser import ARTIFACTS, SEED, browser  # noqa: F401
from test_serve_truth import LEAKY, contrast, keyed

pytest.importorskip("starlette")


class Served:
    def __init__(self, db: Path, reviewer: str | None, key: Path | None) -> None:
        from tracestore.review.signing import load_key
        from tracestore.serve.app import DeskConfig, desk_app
        from tracestore.serve.server import RunningDesk, bind
        from tracestore.store.log import EventStore

        self.store = EventStore(f"sqlite:///{db}", create=False)
        sock = bind("127.0.0.1", 0)
        config = DeskConfig(db=str(db), reviewer=reviewer, port=sock.getsockname()[1],
                            key=load_key(key.read_bytes()) if key else None)
        self.running = RunningDesk(desk_app(config, self.store), sock).__enter__()
        self.url = self.running.url

    def close(self) -> None:
        self.running.__exit__()
        self.store.close()


@pytest.fixture(scope="module")
def desks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served]]:
    folder = tmp_path_factory.mktemp("truth")
    db = folder / "desk.db"
    for scenario in (LEAKY, SEED / "t8-buggy-app.json", SEED / "t8.json"):
        code, _, err = run("replay", str(scenario), "--json", db=db)
        assert code == 0, err
    key = keyed(folder, "alice", db)
    signed, unsigned = Served(db, None, key), Served(db, "carol", None)
    yield signed, unsigned
    signed.close()
    unsigned.close()


@pytest.fixture
def page(browser: object, desks: tuple[Served, Served]) -> Iterator[object]:  # noqa: F811
    own = tuple(d.url + "/" for d in desks)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.requests = []
    opened.on("request", lambda request: opened.requests.append(request.url))
    yield opened
    assert all(url.startswith(own) for url in opened.requests), opened.requests
    context.close()


def _rgb(css_colour: str) -> str:
    """``rgb(29, 35, 48)`` → ``#1d2330``."""
    import re

    r, g, b = (int(x) for x in re.findall(r"\d+", css_colour)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def test_the_header_names_the_keys_reviewer_in_a_legible_chip(
        page: object, desks: tuple[Served, Served]) -> None:
    signed = desks[0]
    page.goto(signed.url + "/trace/t8?attempt=t8-old", wait_until="load")
    who = page.locator("nav.desk .who").inner_text()
    chip = page.locator("nav.desk code.key")
    assert who == f"reviewing as alice · signed with key {chip.inner_text()}"
    buttons = page.locator("form.review button").all_inner_texts()
    assert buttons == ["Set field as alice", "Approve this record as alice"]
    colours = chip.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e)"
                            ".backgroundColor]")
    assert contrast(_rgb(colours[0]), _rgb(colours[1])) >= 4.5, colours
    assert page.locator("#signing-banner").count() == 0


def test_an_unsigned_desk_on_a_keyed_store_shows_a_banner_and_no_form(
        page: object, desks: tuple[Served, Served]) -> None:
    unsigned = desks[1]
    for path in ("/", "/trace/t8"):
        page.goto(unsigned.url + path, wait_until="load")
        banner = page.locator("#signing-banner")
        assert banner.is_visible(), path
        assert banner.inner_text().startswith("this desk cannot record reviews as carol")
        assert page.locator("nav.desk .who").inner_text() == (
            "read only: this store requires signed reviews [signature_required]")
        assert page.locator("form.review").count() == 0, path


def test_a_leaky_trace_leads_with_its_violation(page: object,
                                                desks: tuple[Served, Served]) -> None:
    signed = desks[0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(signed.url + "/trace/t7-leaky-app", wait_until="load")
        lead = page.locator("section#violations")
        decisions = page.locator("section#decisions").bounding_box()
        box = lead.bounding_box()
        assert lead.is_visible() and box["y"] + box["height"] <= decisions["y"], width
        assert box["y"] < 900, width  # in the first screenful, before any decision card
        assert lead.locator("li").all_inner_texts() == [
            "#13 ineligible_text_in_destination attempt 1 t7-leak → history: attempt is "
            "stopped, yet history received its text"]
        card = page.locator("article.card[data-attempt=t7-leak]")
        assert card.locator(".vcount").inner_text() == "⚠ 1 violation"
        assert card.locator("ul.card-violations li").all_inner_texts() == [
            "#13 ineligible_text_in_destination → history: attempt is stopped, yet history "
            "received its text"]
        mark = card.locator("ul.card-violations").bounding_box()
        facts = card.locator("dl.facts").bounding_box()
        assert mark["y"] < facts["y"], width  # under the status, before the facts
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(ARTIFACTS / f"desk-leak-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(signed.url + "/trace/t8-buggy-app", wait_until="load")
    assert page.locator("article.card[data-attempt=t8b-old] ul.card-violations").count() == 0
    assert page.locator("article.card[data-attempt=t8b-new] ul.card-violations li").count() == 3


def test_queue_labels_stay_with_their_numbers_at_390px(
        page: object, desks: tuple[Served, Served]) -> None:
    signed = desks[0]
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(signed.url + "/", wait_until="load")
    cells = page.locator("table.queue td.num")
    assert cells.count() == 2 * page.locator("table.queue tbody tr").count() >= 8
    for i in range(cells.count()):
        cell = cells.nth(i)
        label, number = cell.locator(".cell-label"), cell.locator(".n")
        assert label.is_visible() and label.inner_text() in ("violations", "events")
        lb, nb = label.bounding_box(), number.bounding_box()
        # One line: the boxes overlap vertically; the number follows its label closely.
        assert lb["y"] < nb["y"] + nb["height"] and nb["y"] < lb["y"] + lb["height"], i
        assert 0 <= nb["x"] - (lb["x"] + lb["width"]) <= 12, (i, lb, nb)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(signed.url + "/", wait_until="load")  # wide: the header row names them
    assert not page.locator("table.queue .cell-label").first.is_visible()
    assert page.locator("table.queue thead th").all_inner_texts()[5] == "violations"
