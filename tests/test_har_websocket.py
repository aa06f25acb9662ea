"""A HAR file's ``_webSocketMessages`` (Chrome DevTools, Playwright) ingested as a realtime
session, built from a real corpus session (fixtures/wild-ws/PROVENANCE.md) with the times
a browser would have stamped on its messages."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.errors import InputError
from tracestore.events import TaskRule
from tracestore.ingest.har import har_session, is_har
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.ingest.session import read_session
from tracestore.projections import reasons as R
from tracestore.projections.release import decide_with_view
from tracestore.store.log import EventStore

ROOT = Path(__file__).resolve().parents[1]
SESSION = (ROOT / "fixtures" / "wild-ws" / "openai"
           / "pydantic-ai__test_openai_ws_sideband__test_webrtc_sideband_text_turn.jsonl")
ACCEPT_ANY = TaskRule(answer_patterns=("",))
START = 1780000000.25


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()]


def har(messages: list[dict[str, Any]], *, binary: bool = False) -> bytes:
    """A HAR with one page request and the WebSocket entry holding ``messages``."""
    ws = []
    for i, r in enumerate(messages):
        text = json.dumps(r["data"])
        data = base64.b64encode(text.encode()).decode() if binary else text
        ws.append({"type": "send" if r["dir"] == "client" else "receive",
                   "time": START + i * 0.125, "opcode": 2 if binary else 1, "data": data})
    ws.insert(2, {"type": "receive", "time": START + 0.2, "opcode": 9, "data": ""})
    entry = {"request": {"method": "GET", "url": "wss://api.openai.com/v1/realtime"},
             "response": {"status": 101}, "_resourceType": "websocket",
             "_webSocketMessages": ws}
    page = {"request": {"method": "GET", "url": "https://example.test/"},
            "response": {"status": 200}}
    return json.dumps({"log": {"version": "1.2", "entries": [page, entry]}}).encode()


def iso(i: int) -> str:
    return dt.datetime.fromtimestamp(START + i * 0.125, tz=dt.timezone.utc).isoformat()


@pytest.mark.parametrize("binary", [False, True])
def test_the_har_is_the_session_with_its_times(binary: bool) -> None:
    data = har(records(), binary=binary)
    assert is_har(data) and not is_har(SESSION.read_bytes())
    messages = read_session(har_session(data))
    assert [(m.direction, m.data) for m in messages] == [(r["dir"], r["data"])
                                                         for r in records()]
    assert [m.t for m in messages] == [iso(i) for i in range(len(records()))]


def test_a_har_ingests_as_a_session_and_keeps_the_times(tmp_path: Path) -> None:
    store = EventStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        done = ingest_input(store, har(records()), IngestOptions(
            filename="turn.har", trace_id="t", task=ACCEPT_ANY))
        assert done.format == "realtime-session" and len(done.attempts) == 1
        events = store.read(trace_id="t")
        decision, view = decide_with_view(events, done.attempts[0])
        assert decision.status == R.RELEASED and view.text
        frames = [e.event for e in events if e.type == "frame.received"]
        server = [i for i, r in enumerate(records()) if r["dir"] == "server"]
        assert [f.observed_at for f in frames] == [iso(i) for i in server]
    finally:
        store.close()


def test_the_cli_reads_a_har(tmp_path: Path) -> None:
    from clihelp import run

    path = tmp_path / "turn.har"
    path.write_bytes(har(records()))
    code, out, err = run("ingest", str(path), "--json", db=tmp_path / "c.db")
    assert code == 0, err
    assert json.loads(out)["format"] == "realtime-session"


@pytest.mark.parametrize("change, words", [
    (lambda h: h["log"]["entries"].pop(), "0 WebSocket entries"),
    (lambda h: h["log"]["entries"].append(h["log"]["entries"][1]), "2 WebSocket entries"),
    (lambda h: h["log"]["entries"][1]["_webSocketMessages"][0].update(data="{nope"),
     "not JSON"),
    (lambda h: h["log"]["entries"][1]["_webSocketMessages"][0].update(time="noon"),
     "epoch seconds"),
])
def test_a_har_that_is_not_one_readable_socket_is_refused(change: Any, words: str) -> None:
    doc = json.loads(har(records()))
    change(doc)
    with pytest.raises(InputError) as refused:
        har_session(json.dumps(doc).encode())
    assert refused.value.code == "invalid_har" and words in refused.value.message
