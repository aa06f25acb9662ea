"""The desk tells the truth: who a post is recorded as (or that it cannot be), a trace's
violations before its decisions, time to first token of a live recording, a legible key
chip, and a post's size judged before its body is read.  HTTP through Starlette's
TestClient or the ASGI app itself; ``test_serve_browser.py`` looks at the same pages in
Chromium."""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from clihelp import count_events, run
from test_serve import BASE, SEED, Desk, seeded, testclient

from tracestore.serve.pages import MAX_FORM_BYTES

REPO = Path(__file__).resolve().parents[1]
LEAKY = REPO / "fixtures" / "review" / "t7-leaky-app.json"


# -- a post's size is judged before its body is read ----------------------------------------
def _post_raw(app: object, headers: dict[str, str], chunks: Iterable[bytes]) -> tuple[int, int]:
    """POST /review/t8-old to the ASGI app with a body of ``chunks`` (read lazily);
    returns (status, bytes the app took from the body)."""
    taken = 0
    body = iter(chunks)
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal taken
        chunk = next(body, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        taken += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in
           {"host": "127.0.0.1:8765", "origin": BASE,
            "content-type": "application/x-www-form-urlencoded", **headers}.items()]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/review/t8-old",
             "raw_path": b"/review/t8-old", "query_string": b"", "root_path": "",
             "headers": raw, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8765)}
    asyncio.run(app(scope, receive, send))  # type: ignore[operator]
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], taken


@pytest.fixture
def t8(tmp_path: Path) -> Iterator[tuple[Desk, Path]]:
    db = seeded(tmp_path, SEED / "t8.json")
    desk = Desk(db)
    yield desk, db
    desk.close()


def test_a_declared_length_over_the_cap_is_413_before_one_byte_is_read(
        t8: tuple[Desk, Path]) -> None:
    desk, db = t8
    before = count_events(db)
    huge = itertools.repeat(b"x" * (1 << 20), 400)  # 400 MiB, if anyone asked for it
    status, taken = _post_raw(desk.app, {"content-length": "400000000"}, huge)
    assert (status, taken) == (413, 0)
    status, taken = _post_raw(desk.app, {"content-length": str(MAX_FORM_BYTES + 1)},
                              [b"x" * (MAX_FORM_BYTES + 1)])
    assert (status, taken) == (413, 0)
    assert count_events(db) == before


def test_a_chunked_body_is_read_no_further_than_the_cap(t8: tuple[Desk, Path]) -> None:
    desk, db = t8
    before = count_events(db)
    chunk = 16 * 1024
    endless = itertools.repeat(b"a" * chunk)  # no Content-Length, never ends by itself
    status, taken = _post_raw(desk.app, {}, endless)
    assert status == 413
    assert MAX_FORM_BYTES < taken <= MAX_FORM_BYTES + chunk
    assert count_events(db) == before


def test_a_form_at_the_cap_is_still_read(t8: tuple[Desk, Path]) -> None:
    """The cap refuses only what is over it: a form of small chunks under it gets as far
    as its CSRF check (403: this raw post has no session), read to its end."""
    desk, _ = t8
    parts = [b"csrf=0&pad=", *itertools.repeat(b"p" * 1000, 60)]
    status, taken = _post_raw(desk.app, {}, parts)
    assert status == 403 and taken == sum(map(len, parts)) <= MAX_FORM_BYTES


def test_a_served_desk_answers_a_huge_declared_post_without_its_body(tmp_path: Path) -> None:
    """Over a real socket (uvicorn): the headers alone get the 413; the body is never sent,
    so a desk waiting for it would never answer."""
    from tracestore.serve.app import DeskConfig, desk_app
    from tracestore.serve.server import RunningDesk, bind
    from tracestore.store.log import EventStore

    db = seeded(tmp_path, SEED / "t8.json")
    with EventStore(f"sqlite:///{db}", create=False) as store:
        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]
        app = desk_app(DeskConfig(db=str(db), reviewer="alice", port=port), store)
        with RunningDesk(app, sock):
            for head in ("Content-Length: 400000000\r\n",
                         "Transfer-Encoding: chunked\r\n"):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                    conn.sendall(
                        (f"POST /review/t8-old HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Origin: http://127.0.0.1:{port}\r\n"
                         "Content-Type: application/x-www-form-urlencoded\r\n"
                         f"{head}\r\n").encode())
                    if "chunked" in head:  # chunks past the cap, then no end chunk
                        piece = b"b" * 8192
                        for _ in range(MAX_FORM_BYTES // len(piece) + 1):  # just past it
                            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    answer = conn.recv(4096).decode("latin-1")
                assert answer.startswith("HTTP/1.1 413 "), (head, answer[:200])


# -- the header names who a post is recorded as, or says the desk only reads ---------------
def keyed(tmp_path: Path, name: str, db: Path, *, register: bool = True) -> Path:
    """A reviewer key made with ``tracestore reviewer keygen`` (registered to ``name``)."""
    from typer.testing import CliRunner

    from tracestore.cli import app

    key = tmp_path / f"{name}.key"
    assert CliRunner().invoke(app, ["reviewer", "keygen", str(key)]).exit_code == 0
    if register:
        code, _, err = run("reviewer", "add", name, "--public-key", f"{key}.pub", db=db)
        assert code == 0, err
    return key


class KeyDesk(Desk):
    """A desk started as ``tracestore serve [--reviewer NAME] --key FILE`` would be."""

    def __init__(self, db: Path, key: Path | None, reviewer: str | None = None) -> None:
        from tracestore.review.signing import load_key
        from tracestore.serve.app import DeskConfig, desk_app
        from tracestore.store.log import EventStore

        self.store = EventStore(f"sqlite:///{db}", create=False)
        signer = load_key(key.read_bytes()) if key is not None else None
        self.app = desk_app(DeskConfig(db=str(db), reviewer=reviewer, key=signer, port=8765),
                            self.store)
        self.client = testclient.TestClient(self.app, base_url=BASE,
                                            raise_server_exceptions=False)


def header(text: str) -> str:
    nav = re.search(r'<nav class="desk".*?</nav>', text, re.S)
    assert nav is not None
    import html

    who = re.sub(r'<a href="/reviewers"[^>]*>reviewers</a>', "", nav.group(0))  # a link
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", who)).strip())


def test_a_desk_with_a_key_names_the_keys_registered_reviewer(tmp_path: Path) -> None:
    import json

    db = seeded(tmp_path, SEED / "t8.json")
    key = keyed(tmp_path, "alice", db)
    desk = KeyDesk(db, key)
    try:
        page = desk.client.get("/trace/t8?attempt=t8-old").text
        kid = re.search(r'<code class="key">([0-9a-f]{16})</code>', page).group(1)
        assert header(page) == (f"tracestore desk reviewing as alice · signed with key {kid} "
                                f"{db}")
        assert "Set field as alice" in page and "Approve this record as alice" in page
        assert "key holder" not in page and "nobody" not in page
        assert 'id="signing-banner"' not in page
        csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page).group(1)
        done = desk.post("t8-old", {"csrf": csrf, "template": "trace-review",
                                    "action": "set", "field": "remote_cancellation",
                                    "value": "not observed", "evidence": "6"})
        assert done.status_code == 303, done.text
    finally:
        desk.close()
    code, out, _ = run("review", "t8-old", "--json", db=db)
    fields = {f["name"]: f for f in json.loads(out)["fields"]}
    assert fields["remote_cancellation"]["set_by"] == "alice"


def test_a_read_only_desk_says_so_and_shows_no_form(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")
    desk = Desk(db, reviewer=None)
    try:
        for path in ("/", "/trace/t8"):
            page = desk.client.get(path).text
            assert header(page) == ("tracestore desk read only: start the desk with "
                                    f"--reviewer NAME or --key FILE {db}"), path
            assert 'method="post"' not in page and "reviewing as" not in page
    finally:
        desk.close()


def test_a_key_that_cannot_sign_here_shows_no_form(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")
    keyed(tmp_path, "bob", db)
    stranger = keyed(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path,
                     "carol", db, register=False)
    for key, reviewer, code in ((stranger, None, "reviewer_key_unknown"),
                                (tmp_path / "bob.key", "alice", "reviewer_key_mismatch")):
        desk = KeyDesk(db, key, reviewer)
        try:
            for path in ("/", "/trace/t8", "/nope"):
                page = desk.client.get(path).text
                assert header(page).startswith("tracestore desk read only: this desk's key "
                                               f"cannot sign [{code}] · key "), path
                banner = re.search(r'<div class="banner" role="alert" id="signing-banner">'
                                   r"([^<]*)</div>", page)
                assert banner is not None and banner.group(1).startswith(
                    "this desk cannot record reviews: key "), path
                assert banner.group(1).endswith(f"[{code}]"), path
                assert 'method="post"' not in page
        finally:
            desk.close()


# -- a desk that cannot sign on a store that requires signatures says so --------------------
def test_an_unsigned_desk_on_a_store_with_keys_says_so_and_shows_no_form(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracestore.serve import app as desk_module

    db = seeded(tmp_path, SEED / "t8.json")
    keyed(tmp_path, "bob", db)
    desk = Desk(db, reviewer="alice")
    try:
        for path in ("/", "/trace/t8", "/trace/t8?attempt=t8-old", "/events/t8-old",
                     "/nope"):
            page = desk.client.get(path).text
            banner = re.search(r'id="signing-banner">([^<]*)</div>', page)
            assert banner is not None, path
            assert banner.group(1).startswith(
                "this desk cannot record reviews as alice: the store has registered "
                "reviewer keys, so an unsigned review is refused (signature_required).")
            assert header(page) == ("tracestore desk read only: this store requires signed "
                                    f"reviews [signature_required] {db}"), path
            assert 'method="post"' not in page and "Set field as" not in page, path
        assert "No review can be recorded at this desk" in desk.client.get("/trace/t8").text
        # The store allows unsigned reviews again: the desk records as alice (the head
        # moved; looked at again at once here).
        monkeypatch.setattr(desk_module, "BANNER_EVERY_S", 0.0)
        code, _, err = run("reviewer", "unsigned", "allow", db=db)
        assert code == 0, err
        page = desk.client.get("/trace/t8").text
        assert 'id="signing-banner"' not in page and "Set field as alice" in page
        assert header(page) == f"tracestore desk reviewing as alice · unsigned {db}"
    finally:
        desk.close()


def test_serve_warns_at_start_when_it_cannot_sign(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = seeded(tmp_path, SEED / "t8.json")
    keyed(tmp_path, "bob", db)
    proc = subprocess.Popen([sys.executable, "-m", "tracestore", "serve", "--reviewer",
                             "alice", "--port", "0", "--db", str(db)],
                            stderr=subprocess.PIPE, text=True)
    try:
        started = proc.stderr.readline()
        warning = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(10)
    assert started.startswith("tracestore serve: the desk is at http://127.0.0.1:")
    assert started.endswith("; read only: this store requires signed reviews "
                            "[signature_required])\n")
    assert warning.startswith("warning: this desk cannot record reviews as alice: the store "
                              "has registered reviewer keys")


# -- a trace page leads with its violations -------------------------------------------------
def _text(fragment: str) -> str:
    import html

    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", fragment)).strip())


def _cards(page: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(
        r'<article id="card-\d+" class="[^"]*" data-attempt="([^"]+)">.*?</article>', page,
        re.S)}


def test_a_trace_page_leads_with_its_violations(tmp_path: Path) -> None:
    db = seeded(tmp_path, LEAKY, SEED / "t8-buggy-app.json", SEED / "t8.json")
    desk = Desk(db)
    try:
        page = desk.client.get("/trace/t7-leaky-app").text
        lead = re.search(r'<section id="violations" class="lead-violations" role="alert".*?'
                         r"</section>", page, re.S)
        assert lead is not None and lead.start() < page.index('<section id="decisions"')
        assert [_text(li) for li in re.findall(r"<li>.*?</li>", lead.group(0), re.S)] == [
            "#13 ineligible_text_in_destination attempt 1 t7-leak → history: attempt is "
            "stopped, yet history received its text"]
        card = _cards(page)["t7-leak"]
        assert 'class="card lane-1 ineligible violated"' in card
        assert '<span class="vcount">⚠ 1 violation</span>' in card
        listed = re.search(r'<ul class="card-violations".*?</ul>', card, re.S).group(0)
        assert _text(listed) == ("#13 ineligible_text_in_destination → history: attempt is "
                                 "stopped, yet history received its text")
        # Each card carries its own attempt's violations only.
        buggy = desk.client.get("/trace/t8-buggy-app").text
        lead = re.search(r'<section id="violations".*?</section>', buggy, re.S).group(0)
        assert _text(lead).startswith("3 violations in this trace")
        cards = _cards(buggy)
        assert "card-violations" not in cards["t8b-old"] and "violated" not in cards["t8b-old"]
        mine = re.search(r'<ul class="card-violations".*?</ul>', cards["t8b-new"], re.S)
        assert [_text(li).split(" → ")[0] for li in re.findall(r"<li>.*?</li>", mine.group(0),
                                                              re.S)] == [
            "#33 answer_mismatch", "#33 old_attempt_text_in_answer",
            "#35 duplicate_history_entry"]
        # A clean trace has no such section.
        clean = desk.client.get("/trace/t8").text
        assert 'id="violations"' not in clean and "card-violations" not in clean
    finally:
        desk.close()


def test_the_report_file_leads_with_violations_too(tmp_path: Path) -> None:
    out = tmp_path / "leak.html"
    db = seeded(tmp_path, LEAKY)
    code, _, err = run("report", "t7-leaky-app", "--html", str(out), db=db)
    assert code == 0, err
    page = out.read_text("utf-8")
    assert page.index('<section id="violations"') < page.index('<section id="decisions"')
    assert "card-violations" in _cards(page)["t7-leak"]


# -- a live attempt shows its time to first token -------------------------------------------
def _live(db: Path, api: str) -> list:
    """An attempt recorded live, a 64-byte chunk at a time (as test_report's live test)."""
    from tracestore.recording.recorder import Recorder

    data = (REPO / "fixtures" / "real" / "anthropic" / "stop-sequence.sse").read_bytes()
    with Recorder(f"sqlite:///{db}") as rec:
        attempt = rec.trace("live").attempt("live-a", api=api)
        for i in range(0, len(data), 64):
            attempt.feed(data[i:i + 64])
        attempt.close()
        return rec.store.read(trace_id="live")


def _ms(later: object, earlier: object) -> float:
    return (later - earlier).total_seconds() * 1000  # type: ignore[operator]


def test_a_live_attempt_shows_its_time_to_first_token(tmp_path: Path) -> None:
    from tracestore.report.model import build_report

    db = tmp_path / "live.db"
    events = _live(db, "anthropic-messages")  # the API named: its start recorded at open
    facts = build_report(events, "live").lanes[0].facts
    start = next(e for e in events if e.type == "attempt.started")
    first_text = next(e for e in events if e.type == "frame.received"
                      and "text_delta" in e.event.kinds)
    assert start.recorded_at < next(e for e in events
                                    if e.type == "capture.segment").recorded_at
    assert facts.first_token_ms == _ms(first_text.recorded_at, start.recorded_at) > 0
    assert facts.first_token_after == "open" and facts.duration_ms is not None
    desk = Desk(db)
    try:
        page = desk.client.get("/trace/live").text
        shown = re.search(r"<dt>first token</dt><dd>([^<]*)</dd>", page).group(1)
        assert shown == f"{facts.first_token_ms:.0f} ms"
    finally:
        desk.close()


def test_a_start_recorded_with_the_first_bytes_measures_from_them(tmp_path: Path) -> None:
    from tracestore.report.model import build_report

    db = tmp_path / "auto.db"
    events = _live(db, "auto")  # the API told by the first bytes: start and bytes together
    facts = build_report(events, "live").lanes[0].facts
    start = next(e for e in events if e.type == "attempt.started")
    first_text = next(e for e in events if e.type == "frame.received"
                      and "text_delta" in e.event.kinds)
    assert facts.first_token_after == "first bytes"
    assert facts.first_token_ms == _ms(first_text.recorded_at, start.recorded_at)
    desk = Desk(db)
    try:
        shown = re.search(r"<dt>first token</dt><dd>([^<]*)</dd>",
                          desk.client.get("/trace/live").text).group(1)
        assert shown == (f"{facts.first_token_ms:.0f} ms after the first bytes (the "
                         "attempt's start was recorded with them)")
    finally:
        desk.close()


def test_a_replayed_attempt_without_times_still_says_not_recorded(tmp_path: Path) -> None:
    db = seeded(tmp_path, SEED / "t8.json")  # no observed_at, no live segments
    desk = Desk(db)
    try:
        page = desk.client.get("/trace/t8").text
        assert re.findall(r"<dt>first token</dt><dd>([^<]*)</dd>", page) == [
            "not recorded", "not recorded"]
    finally:
        desk.close()


# -- the header's key chip is legible; labels stay with their numbers -----------------------
def _luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of ``#rgb`` / ``#rrggbb``."""
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rule(css: str, selector: str) -> dict[str, str]:
    """The declarations of every rule whose selector is exactly ``selector``, later ones
    winning (as the cascade has it for one selector)."""
    found = re.findall(r"(?:^|[}\n])\s*" + re.escape(selector) + r"\s*\{([^}]*)\}", css)
    assert found, selector
    return {k.strip(): v.strip() for rule in found for k, _, v in
            (d.partition(":") for d in rule.split(";") if d.strip())}


def test_the_header_colours_meet_wcag_aa() -> None:
    from tracestore.report.html import render_css

    css = render_css()
    assert contrast("#e3e7ee", "#eef1f6") < 4.5  # the pale-on-pale chip this replaces
    bar = _rule(css, "nav.desk")["background"]
    chip = _rule(css, "nav.desk code")
    assert contrast(chip["color"], chip["background"]) >= 4.5
    assert round(contrast(chip["color"], chip["background"]), 2) == 12.68
    assert contrast(_rule(css, "nav.desk")["color"], bar) >= 4.5
    db = re.search(r"nav\.desk \.db \{ color:(#[0-9a-f]{3,6});", css).group(1)
    assert contrast(db, bar) >= 4.5
    # The violation marks: white on the red count, red on the pale red lists.
    roots = dict(re.findall(r"--(bad|bad-bg):(#[0-9a-f]{6})", css))
    assert contrast("#ffffff", roots["bad"]) >= 4.5
    assert contrast(roots["bad"], roots["bad-bg"]) >= 4.5


def test_queue_numbers_carry_their_labels(t8: tuple[Desk, Path]) -> None:
    desk, _ = t8
    page = desk.client.get("/").text
    row = re.search(r'<tr data-attempt="t8-old">.*?</tr>', page, re.S).group(0)
    assert re.search(r'<td class="num" data-col="events"><span class="cell-label">events'
                     r'</span><span class="n">\d+</span></td>', row)
    assert ('<td class="num" data-col="violations"><span class="cell-label">violations</span>'
            '<span class="n">0</span></td>') in row
