"""Recording calls on a closed attempt or through a closed recorder (issue 18, bad input):
a typed error with a stable code, nothing written, the application's own stream never
broken by recording.  A destination write after the drain is not such a call: an answer
is written to its destinations after it is released."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx2 as httpx
import pytest

from tracestore import Recorder
from tracestore.errors import AttemptClosedError, InputError
from tracestore.projections.destinations import audit
from tracestore.recording.httpx_capture import RecordingTransport
from tracestore.recording.turn import attempt_of
from tracestore.store.log import EventStore

from capture_server import CaptureServer, route_for
from conftest import FIXTURES

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

REAL = FIXTURES / "real"
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
CHAT = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"
TASK = {"answer_patterns": ["."]}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'closed.db'}"


@pytest.fixture
def server():
    with CaptureServer() as running:
        yield running
    gc.collect()


def events_in(db: str) -> list:
    with EventStore(db) as store:
        return store.read()


def test_a_drained_attempt_refuses_bytes_a_stop_and_a_second_drain_and_writes_nothing(
        db) -> None:
    with Recorder(db) as rec:
        attempt = rec.trace("t", task=TASK).attempt("a", api="openai-responses")
        attempt.feed(RESPONSES.read_bytes())
        assert attempt.drain() == "clean"
        released = attempt.decision()
        assert released.status == "released"
        before = len(rec.store.read())
        calls = {"feed": lambda: attempt.feed(b"data: {}\n\n"),
                 "stop": lambda: attempt.stop(),
                 "drain": lambda: attempt.drain(),
                 "drain reset": lambda: attempt.drain("reset", "late")}
        for name, call in calls.items():
            with pytest.raises(AttemptClosedError) as caught:
                call()
            assert (name, caught.value.code) == (name, "attempt_closed")
            assert isinstance(caught.value, InputError)  # exit code 2 at the CLI
            assert caught.value.context == {"attempt_id": "a"}
        assert len(rec.store.read()) == before
        assert attempt.decision() == released  # the refused calls changed nothing
        # What the application wrote after the release is not a call on a closed attempt.
        attempt.destination("history", released.answer)
        attempt.readback("history", released.answer)
        assert [e.type for e in rec.store.read()[before:]] == ["destination.written",
                                                              "destination.read_back"]
        assert audit(rec.store.read(trace_id="t"), trace_id="t").violations == ()
        assert rec.store.verify().ok


def test_a_closed_recorder_refuses_every_recording_call_and_writes_nothing(db) -> None:
    rec = Recorder(db)
    trace = rec.trace("t", task=TASK)
    attempt = trace.attempt("a", api="openai-responses")
    data = RESPONSES.read_bytes()
    attempt.feed(data[: len(data) // 2])
    rec.close()
    before = len(events_in(db))
    calls = {"trace": lambda: rec.trace("t2"),
             "attempt": lambda: trace.attempt("b", api="openai-responses"),
             "feed": lambda: attempt.feed(data[len(data) // 2:]),
             "stop": lambda: attempt.stop(),
             "drain": lambda: attempt.drain(),
             "destination": lambda: attempt.destination("ui", "x"),
             "readback": lambda: attempt.readback("ui", "x"),
             "decision": lambda: attempt.decision()}
    for name, call in calls.items():
        with pytest.raises(AttemptClosedError) as caught:
            call()
        assert (name, caught.value.code) == (name, "recorder_closed")
    assert len(events_in(db)) == before


def _chat(server: CaptureServer, transport):
    import openai

    return openai.OpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                         http_client=httpx.Client(transport=transport))


def _ask(client):
    return client.chat.completions.create(model="gpt-5", stream=True,
                                          messages=[{"role": "user", "content": "x"}])


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_a_handle_of_a_closed_recorder_raises_and_its_stream_reads_on_unchanged(
        db, server, writer: str) -> None:
    """The recorder is closed while the application is half-way through its stream: the
    application reads every remaining chunk unchanged, the recording of the rest fails with
    ``recorder_closed`` on ``transport.failures`` (warned, never raised into the stream),
    the handle's destination write raises ``recorder_closed`` at the call, and nothing is
    written after the close."""
    data = CHAT.read_bytes()
    route = route_for(CHAT, chunk=64, hold_at=len(data) // 2)
    server.routes["/v1/chat/completions"] = route
    rec = Recorder(db)
    transport = RecordingTransport(writer=writer)
    client = _chat(server, transport)
    with rec.turn("t", task=TASK):
        stream = _ask(client)
        handle = attempt_of(stream)
        chunks = iter(stream)
        got = [next(chunks)]
        assert route.reached.wait(20)
        transport.flush()
        rec.close()
        before = len(events_in(db))
        route.release.set()
        with pytest.warns(RuntimeWarning, match="recorder_closed"):
            got += list(chunks)
            transport.flush()
    with Recorder("sqlite://") as fresh:  # the same chunks read without recording
        plain = RecordingTransport(fresh.trace("p"))
        route.release.set()
        server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
        expected = list(_ask(_chat(server, plain)))
    assert [c.model_dump() for c in got] == [c.model_dump() for c in expected]
    assert [f.code for f in transport.failures] == ["recorder_closed"]
    with pytest.raises(AttemptClosedError) as caught:
        handle.destination("history", "anything")
    assert caught.value.code == "recorder_closed"
    transport.flush()
    assert len(events_in(db)) == before
    assert [e.type for e in events_in(db)].count("transport.drained") == 0
    transport.close()
