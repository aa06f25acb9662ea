"""Turn scopes and per-response handles with the real SDK clients (issue 18, item 2)."""

from __future__ import annotations

import asyncio
import gc
import threading
from pathlib import Path

import httpx2 as httpx
import pytest

from tracestore import Recorder
from tracestore.errors import RecordingScopeError
from tracestore.projections.destinations import audit
from tracestore.recording.httpx_capture import AsyncRecordingTransport, RecordingTransport
from tracestore.recording.turn import attempt_of, current_turn

from capture_server import CaptureServer, route_for
from conftest import FIXTURES

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

REAL = FIXTURES / "real"
CHAT = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"
ANTHROPIC = REAL / "anthropic" / "text-basic.sse"
TASK = {"answer_patterns": ["."]}


@pytest.fixture
def rec(tmp_path: Path):
    with Recorder(f"sqlite:///{tmp_path / 'turns.db'}") as opened:
        yield opened


@pytest.fixture
def server():
    with CaptureServer() as running:
        yield running
    gc.collect()


def chat(server: CaptureServer, transport) -> object:
    import openai

    return openai.OpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                         http_client=httpx.Client(transport=transport))


def chat_text(stream) -> str:
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def ask(client):
    return client.chat.completions.create(model="gpt-5", stream=True,
                                          messages=[{"role": "user", "content": "x"}])


def test_a_turn_makes_its_calls_attempts_of_its_trace_and_the_handle_is_known_at_once(
        rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport()  # no trace: each response joins the turn it is in
    client = chat(server, transport)
    with rec.turn("turn-42", task=TASK) as turn:
        stream = ask(client)
        handle = attempt_of(stream)  # before the first byte reaches the app's code
        assert handle.trace_id == "turn-42" and turn.attempts == [handle]
        text = chat_text(stream)
        handle.destination("history", text)  # no flush: ordered after its own bytes
    assert current_turn() is None
    assert handle.decision().status == "released"
    assert handle.decision().answer == text
    events = rec.store.read(trace_id="turn-42")
    mine = [e for e in events if getattr(e.event, "attempt_id", None) == handle.attempt_id]
    types = [e.type for e in mine]
    assert types.index("destination.written") > types.index("transport.drained")
    assert audit(events, trace_id="turn-42").violations == ()


def test_a_retry_streamed_at_once_gets_its_own_history_write_never_the_old_attempts(
        rec, server) -> None:
    """The race of issue 18: against a fast server the second stream started before the
    writer had opened it, so ``transport.attempts[-1]`` was still the first attempt."""
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport()
    client = chat(server, transport)
    with rec.turn("t", task=TASK) as turn:
        first = attempt_of(stream := ask(client))
        chat_text(stream)
        with turn.retry():
            second = attempt_of(stream := ask(client))
            text = chat_text(stream)
            second.destination("history", text)
    transport.flush()
    events = rec.store.read(trace_id="t")
    started = {e.event.attempt_id: e.event for e in events if e.type == "attempt.started"}
    assert started[second.attempt_id].retry_of == first.attempt_id
    writes = [e.event.attempt_id for e in events if e.type == "destination.written"]
    assert writes == [second.attempt_id]
    assert second.decision().status == "released"
    assert first.decision().status == "released"  # final before the retry began
    assert audit(events, trace_id="t").violations == ()


def test_threads_each_in_their_own_turn_record_into_their_own_trace(rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=32)
    transport = RecordingTransport()
    client = chat(server, transport)
    handles: dict[str, object] = {}

    def user(name: str) -> None:
        with rec.turn(name, task=TASK):
            stream = ask(client)
            handles[name] = attempt_of(stream)
            handles[name].destination("ui", chat_text(stream))

    threads = [threading.Thread(target=user, args=(f"user-{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    transport.flush()
    for name, handle in handles.items():
        events = rec.store.read(trace_id=name)
        assert {e.event.attempt_id for e in events if e.type == "attempt.started"} == {
            handle.attempt_id}
        assert handle.decision().status == "released"
        assert audit(events, trace_id=name).violations == ()


def test_asyncio_tasks_each_in_their_own_turn(rec, server) -> None:
    import openai

    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=32)
    transport = AsyncRecordingTransport()
    client = openai.AsyncOpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                                http_client=httpx.AsyncClient(transport=transport))

    async def user(name: str):
        with rec.turn(name, task=TASK):
            stream = await client.chat.completions.create(
                model="gpt-5", stream=True, messages=[{"role": "user", "content": "x"}])
            handle = attempt_of(stream)
            text = "".join([c.choices[0].delta.content or "" async for c in stream
                            if c.choices])
            handle.destination("history", text)
            return handle

    async def main():
        return await asyncio.gather(*(user(f"task-{i}") for i in range(3)))

    handles = asyncio.run(main())
    transport.flush()
    assert [h.trace_id for h in handles] == ["task-0", "task-1", "task-2"]
    for handle in handles:
        events = rec.store.read(trace_id=handle.trace_id)
        assert [e.event.attempt_id for e in events if e.type == "attempt.started"] == [
            handle.attempt_id]
        assert handle.decision().status == "released"
        assert audit(events, trace_id=handle.trace_id).violations == ()


def test_the_anthropic_stream_helper_has_its_handle(rec, server) -> None:
    import anthropic

    server.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=64)
    transport = RecordingTransport()
    client = anthropic.Anthropic(api_key="t", base_url=server.url, max_retries=0,
                                 http_client=httpx.Client(transport=transport))
    with rec.turn("a", task=TASK):
        with client.messages.stream(model="m", max_tokens=9,
                                    messages=[{"role": "user", "content": "x"}]) as s:
            handle = attempt_of(s)
            text = s.get_final_text()
        handle.destination("ui", text)
    assert handle.decision().status == "released"
    assert audit(rec.store.read(trace_id="a"), trace_id="a").violations == ()


def test_nested_turns_are_refused_and_nothing_is_written(rec) -> None:
    with rec.turn("outer"):
        with pytest.raises(RecordingScopeError) as raised:
            with rec.turn("inner"):
                pass
    assert raised.value.code == "ambiguous_turn"
    assert rec.store.read(trace_id="inner") == []


def test_a_handle_of_another_recorder_is_refused_and_nothing_is_written(
        rec, server, tmp_path) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport()
    client = chat(server, transport)
    with Recorder(f"sqlite:///{tmp_path / 'other.db'}") as other:
        with rec.turn("mine", task=TASK):
            handle = attempt_of(stream := ask(client))
            chat_text(stream)
        with other.turn("theirs") as theirs:
            with pytest.raises(RecordingScopeError) as raised:
                theirs.destination(handle, "history", "x")
        assert raised.value.code == "foreign_attempt"
        transport.flush()
        assert [e for e in other.store.read() if e.type == "destination.written"] == []
        assert [e for e in rec.store.read() if e.type == "destination.written"] == []


def test_a_turn_through_a_transport_of_another_trace_is_not_recorded_and_the_stream_goes_on(
        rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport(rec.trace("fixed"))
    client = chat(server, transport)
    with pytest.warns(RuntimeWarning):
        with rec.turn("other"):
            text = chat_text(ask(client))
    transport.flush()
    assert text  # the application's stream is whole
    assert [f.code for f in transport.failures] == ["ambiguous_turn"]
    assert [e.type for e in rec.store.read() if e.type == "attempt.started"] == []


def test_an_object_no_transport_produced_has_no_attempt() -> None:
    with pytest.raises(RecordingScopeError) as raised:
        attempt_of(object())
    assert raised.value.code == "not_recorded"


def test_a_bad_destination_on_a_handle_raises_now_and_writes_nothing(rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport()
    client = chat(server, transport)
    with rec.turn("t", task=TASK):
        handle = attempt_of(stream := ask(client))
        chat_text(stream)
        with pytest.raises(Exception) as raised:
            handle.destination("screen", "x")
    assert raised.value.code == "unknown_destination"
    transport.flush()
    assert [e for e in rec.store.read() if e.type == "destination.written"] == []
