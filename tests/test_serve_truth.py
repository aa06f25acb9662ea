"""The desk tells the truth: who a post is recorded as (or that it cannot be), a trace's
violations before its decisions, time to first token of a live recording, a legible key
chip, and a post's size judged before its body is read.  HTTP through Starlette's
TestClient or the ASGI app itself; ``test_serve_browser.py`` looks at the same pages in
Chromium."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from clihelp import count_events
from test_serve import BASE, SEED, Desk, seeded

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
                        for _ in range(MAX_FORM_BYTES // len(piece) + 2):
                            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    answer = conn.recv(4096).decode("latin-1")
                assert answer.startswith("HTTP/1.1 413 "), (head, answer[:200])
