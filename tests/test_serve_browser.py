"""The desk in a real browser: Debian's Chromium driven by Playwright (as the report's
browser tests), against two desks served by uvicorn on free 127.0.0.1 ports over one temp
store (alice's and bob's).  A reviewer clicks from the queue through a filter to a trace,
sets a field with evidence, a second reviewer approves, and the record says so; hostile
model text stays inert; the pages fit 390 px; not one request leaves the desk.

``TRACESTORE_UPDATE_DOCS=1`` refreshes docs/serve-index.png and docs/serve-trace-25.png.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from clihelp import count_events, run
from serve_scenarios import many_attempts, write
from test_report_browser import ARTIFACTS, HOSTILE, REPO, SEED, browser  # noqa: F401

pytest.importorskip("starlette")


class Served:
    def __init__(self, db: Path, reviewer: str) -> None:
        from tracestore.serve.app import DeskConfig, desk_app
        from tracestore.serve.server import RunningDesk, bind
        from tracestore.store.log import EventStore

        self.store = EventStore(f"sqlite:///{db}", create=False)
        sock = bind("127.0.0.1", 0)
        config = DeskConfig(db=str(db), reviewer=reviewer, port=sock.getsockname()[1])
        self.running = RunningDesk(desk_app(config, self.store), sock).__enter__()
        self.url = self.running.url

    def close(self) -> None:
        self.running.__exit__()
        self.store.close()


@pytest.fixture(scope="module")
def desks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served, Path]]:
    folder = tmp_path_factory.mktemp("desk")
    db = folder / "desk.db"
    t25 = write(folder / "t25.json", many_attempts())
    for scenario in (SEED / "t8.json", SEED / "t8-buggy-app.json", SEED / "t7.json",
                     HOSTILE, t25):
        code, _, err = run("replay", str(scenario), "--json", db=db)
        assert code == 0, err
    alice, bob = Served(db, "alice"), Served(db, "bob")
    yield alice, bob, db
    alice.close()
    bob.close()


@pytest.fixture(scope="module")
def page(browser: object, desks: tuple[Served, Served, Path]) -> Iterator[object]:  # noqa: F811
    alice, bob = desks[0], desks[1]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.requests, opened.dialogs = [], []
    opened.on("request", lambda request: opened.requests.append(request.url))
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message),
                                        dialog.dismiss()))
    own = (alice.url + "/", bob.url + "/")
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(own)
                  else route.abort())
    yield opened
    assert all(url.startswith(own) for url in opened.requests), opened.requests
    context.close()


def test_filter_to_a_trace_amend_and_approve_as_a_second_reviewer(
        page: object, desks: tuple[Served, Served, Path]) -> None:
    alice, bob, db = desks
    page.goto(alice.url + "/", wait_until="load")
    assert "tracestore desk" in page.locator("nav.desk").inner_text()
    total = int(page.locator("h1 small").inner_text().split()[0])
    assert total >= 30 and page.locator("table.queue tbody tr").count() == min(total, 50)
    page.select_option("select[name=status]", "stopped")
    page.fill("input[name=trace]", "t8")
    page.click("form.filters button")
    assert "status=stopped" in page.url
    assert page.locator("table.queue tbody tr").all_inner_texts()[0].startswith("t8-old")
    assert page.locator("table.queue tbody tr").count() == 1
    page.click("table.queue a:text-is('t8-old')")
    assert "/trace/t8" in page.url and page.locator("article.card").count() == 1
    record = page.locator("section.record")
    assert "remote_cancellation" not in record.inner_text()  # labels, not names
    before = count_events(db)
    form = record.locator("form.set")
    form.locator("select[name=field]").select_option("remote_cancellation")
    form.locator("input[name=value]").fill("not observed: the Stop at #6 is local")
    form.locator("input[name=evidence]").fill("6")
    form.locator("button").click()
    page.wait_for_load_state("load")
    assert count_events(db) == before + 1
    assert "recorded 1 review event(s)" in page.locator(".notice").inner_text()
    row = page.locator("section.record tr[data-field=remote_cancellation]")
    assert "not observed: the Stop at #6 is local" in row.inner_text()
    assert "reviewer alice" in row.inner_text()
    assert page.locator("section.record .state").inner_text() == "in-review"
    # Bob's desk, same store: he approves what alice amended.
    page.goto(bob.url + "/trace/t8?attempt=t8-old", wait_until="load")
    assert "bob" in page.locator("nav.desk").inner_text()
    page.locator("section.record form.approve button").click()
    page.wait_for_load_state("load")
    assert count_events(db) == before + 2
    assert page.locator("section.record .state").inner_text() == "approved"
    assert page.locator("section.record .approval").all_inner_texts() == ["bob"]
    assert page.dialogs == []


def test_hostile_text_stays_inert_on_every_page(page: object,
                                                desks: tuple[Served, Served, Path]) -> None:
    alice = desks[0]
    for path in ("/events/hostile-1", "/?trace=hostile-html", "/attempt/hostile-1"):
        page.goto(alice.url + path, wait_until="load")
        page.wait_for_timeout(100)
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.locator("script").count() == 0, path
        assert page.locator("body img, body iframe, body b:has-text('bold?')").count() == 0
    text = page.locator("#timeline").inner_text()
    assert "<script>document.title='pwned';window.__pwned=1</script>" in text
    assert page.title().startswith("tracestore report: trace hostile-html")
    assert page.dialogs == []


def test_pages_fit_390px_and_25_attempts_read(page: object,
                                              desks: tuple[Served, Served, Path]) -> None:
    alice = desks[0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(alice.url + "/", wait_until="load")
    _shot(page, "serve-index.png")
    page.goto(alice.url + "/trace/t25", wait_until="load")
    assert page.locator("table.lanes.stacked").count() == 1
    assert page.locator("article.card").count() == 25
    colours = page.evaluate("""[...document.querySelectorAll('article.card')].map(
        c => getComputedStyle(c.querySelector('.swatch')).backgroundColor)""")
    assert len(set(colours)) == 25
    labels = page.locator("article.card .label-human").all_inner_texts()
    assert labels[0] == "attempt 1" and labels[2] == "attempt 3 (retry of 2)"
    folded = page.locator("tr.k-delta[data-count]")
    assert folded.count() >= 1 and "text delta ×" in folded.first.inner_text()
    timeline = page.locator("#timeline").bounding_box()
    _shot(page, "serve-trace-25.png", clip={"x": 0, "y": 0, "width": 1280,
                                            "height": timeline["y"] + 640})
    page.set_viewport_size({"width": 390, "height": 800})
    for path in ("/trace/t25", "/", "/events/t8-new", "/nope", "/trace/t8-buggy-app", "/trace/t8"):
        page.goto(alice.url + path, wait_until="load")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width)
    # Lanes stack: the Stop of t8's old attempt is named by its attempt at 390 px.
    assert "attempt 1" in page.locator("#e6 td.ev").inner_text()
    page.set_viewport_size({"width": 1280, "height": 900})


def _shot(page: object, name: str, clip: dict[str, float] | None = None) -> None:
    path = ARTIFACTS / name
    options = {"full_page": True, "clip": clip} if clip else {}
    page.screenshot(path=str(path), **options)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("TRACESTORE_UPDATE_DOCS"):
        page.screenshot(path=str(REPO / "docs" / name), **options)


def test_the_docs_screenshots_exist() -> None:
    for name in ("serve-index.png", "serve-trace-25.png"):
        png = REPO / "docs" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
