"""SDK capture with the real client libraries against a local server replaying real captures."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import warnings
from pathlib import Path

import httpx2 as httpx
import pytest

from tracestore import Recorder
from tracestore.errors import StoreError
from tracestore.events import CaptureSegment, FrameReceived, ReleaseDecided, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections.release import decide_release
from tracestore.recording.httpx_capture import AsyncRecordingTransport, RecordingTransport

from capture_server import CaptureServer, route_for
from conftest import FIXTURES

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

REAL = FIXTURES / "real"
PARIS = json.loads((FIXTURES / "tasks" / "paris.json").read_text())
ANTHROPIC = REAL / "anthropic" / "text-basic.sse"
RESPONSES = REAL / "openai-responses" / "text-gpt-4o.sse"
GEMINI = REAL / "gemini" / "sse-text.sse"


@pytest.fixture
def rec(tmp_path: Path):
    with Recorder(f"sqlite:///{tmp_path / 'sdk.db'}") as opened:
        yield opened


@pytest.fixture
def server():
    with CaptureServer() as running:
        yield running
    # An SDK stream the application left early (the user's Stop) keeps a suspended
    # generator in a reference cycle.  Finalize it here, while every module is whole: left
    # to a later, random collection it ran in the middle of another test's first
    # `import httpx` (google-genai's), and openai's finalizer then read the half-imported
    # module (PytestUnraisableExceptionWarning in CI).
    gc.collect()


def frames_of(rec: Recorder, attempt_id: str) -> list[tuple]:
    out, segment = [], None
    for stored in rec.store.read(attempt_id=attempt_id):
        event = stored.event
        if isinstance(event, CaptureSegment):
            segment = event
        elif isinstance(event, FrameReceived):
            out.append((event.index, event.native, event.kinds, segment.offset + event.offset))
    return out


def ingested(path: Path, task: dict | None) -> tuple[list[tuple], object]:
    from tracestore.store.log import EventStore

    data = path.read_bytes()
    plan = plan_ingest(data, filename=path.name, attempt_id="x", trace_id="x",
                       task=TaskRule.model_validate(task) if task else None)
    frames = [(e.event.index, e.event.native, e.event.kinds, e.event.offset)
              for e in plan.events if isinstance(e.event, FrameReceived)]
    with EventStore("sqlite://") as store:
        store.append(list(plan.events), blob_data=[plan.blob])
        return frames, decide_release(store.read(), "x")


def openai_client(server: CaptureServer, transport: httpx.BaseTransport):
    import openai

    return openai.OpenAI(api_key="test", base_url=f"{server.url}/v1", max_retries=0,
                         http_client=httpx.Client(transport=transport))


def anthropic_client(server: CaptureServer, transport: httpx.BaseTransport):
    import anthropic

    return anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0,
                               http_client=httpx.Client(transport=transport))


@pytest.mark.parametrize("background", [True, False])
def test_anthropic_full_read_records_what_ingest_of_the_file_records(rec, server,
                                                                     background) -> None:
    server.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=37)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}),
                                   background=background)
    client = anthropic_client(server, transport)
    stream = client.messages.create(model="claude-haiku-4-5", max_tokens=64, stream=True,
                                    messages=[{"role": "user", "content": "secret prompt"}])
    text = "".join(e.delta.text for e in stream if e.type == "content_block_delta")
    transport.flush()
    (attempt,) = transport.attempts
    frames, decision = ingested(ANTHROPIC, {"answer_patterns": ["."]})
    assert frames_of(rec, attempt.attempt_id) == frames
    recorded = attempt.decision()
    assert (recorded.status, recorded.reasons, recorded.answer) == (
        decision.status, decision.reasons, decision.answer)
    assert recorded.status == "released" and recorded.answer == text
    started = rec.store.read(attempt_id=attempt.attempt_id)[0].event
    assert started.api == "anthropic-messages"
    assert started.request == {"endpoint": "/v1/messages", "max_tokens": 64,
                               "model": "claude-haiku-4-5", "stream": True,
                               "client": started.request["client"]}
    assert started.request["client"].startswith("Anthropic/Python ")
    assert "secret prompt" not in json.dumps(started.request)
    drained = [e.event.outcome for e in rec.store.read(attempt_id=attempt.attempt_id)
               if e.type == "transport.drained"]
    assert drained == ["clean"] and transport.failures == []


def test_the_application_reads_on_while_the_writer_holds_the_store(rec, server) -> None:
    """A commit in progress (the writer holding the transport's lock) never stops the
    application's thread: it reads the whole body while the lock is held, and the bytes
    are recorded once it is free.  (The app's thread used to take that lock per chunk.)"""
    server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    transport = RecordingTransport(rec.trace("q", task=PARIS))
    client = openai_client(server, transport)
    deltas: list[str] = []

    def application() -> None:
        for event in client.responses.create(model="gpt-4o", input="x", stream=True):
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)

    with transport.lock:  # as the writer does while it commits
        reader = threading.Thread(target=application)
        reader.start()
        reader.join(30)
        assert not reader.is_alive()  # finished while the store was busy
    assert "".join(deltas) == "The capital of France is Paris."
    transport.flush()
    (attempt,) = transport.attempts
    frames, expected = ingested(RESPONSES, PARIS)
    assert frames_of(rec, attempt.attempt_id) == frames
    assert attempt.decision().status == expected.status == "released"


def test_openai_early_break_records_a_stop_where_the_app_stopped(rec, server) -> None:
    # The body waits at byte 2400 (after the first text delta) until the app has stopped,
    # so the SDK cannot have read the whole body ahead of the app.
    route = server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64, hold_at=2400)
    transport = RecordingTransport(rec.trace("q", task=PARIS))
    client = openai_client(server, transport)
    seen = 0
    with client.responses.create(model="gpt-4o", input="secret", stream=True) as stream:
        for event in stream:
            seen += 1
            if event.type == "response.output_text.delta":
                break  # the user's Stop
    route.release.set()
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    events = rec.store.read(attempt_id=attempt.attempt_id)
    kinds = [e.type for e in events]
    assert kinds[-4:] == ["local.stopped", "release.decided", "capture.segment",
                          "transport.drained"]
    frames = [e for e in events if e.type == "frame.received"]
    # Every frame the SDK handed over was recorded before the Stop (it may have read ahead).
    assert len(frames) >= seen
    assert events[-1].event.outcome == "eof"
    assert events[0].event.request["model"] == "gpt-4o"


def test_gemini_stream_records_its_model_from_the_path(rec, server) -> None:
    from google import genai
    from google.genai import types

    path = "/v1/models/gemini-2.0-flash:streamGenerateContent"
    server.routes[path] = route_for(GEMINI, chunk=50)
    transport = RecordingTransport(rec.trace("q", task=PARIS))
    client = genai.Client(api_key="test", http_options=types.HttpOptions(
        base_url=server.url, httpx_client=httpx.Client(transport=transport)))
    try:
        text = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(
            model="gemini-2.0-flash", contents="secret"))
    finally:
        print(server.requests)
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    frames, expected = ingested(GEMINI, PARIS)
    assert frames_of(rec, attempt.attempt_id) == frames
    assert (decision.status, decision.answer) == (expected.status, expected.answer)
    assert decision.answer == text
    request = rec.store.read(attempt_id=attempt.attempt_id)[0].event.request
    assert request["model"] == "gemini-2.0-flash" and "key" not in json.dumps(request)


def test_a_dropped_connection_is_interrupted_with_a_reset_drain(rec, server) -> None:
    server.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=40, drop_after=700)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = anthropic_client(server, transport)
    with pytest.raises(Exception) as raised:
        for _ in client.messages.create(model="m", max_tokens=9, stream=True,
                                        messages=[{"role": "user", "content": "x"}]):
            pass
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    assert decision.status == "interrupted"
    drained = [e.event for e in rec.store.read(attempt_id=attempt.attempt_id)
               if e.type == "transport.drained"]
    assert [d.outcome for d in drained] == ["reset"]
    assert drained[0].detail.startswith(type(raised.value.__context__ or raised.value).__name__) \
        or drained[0].detail.split(":")[0] in ("RemoteProtocolError", "ReadError")
    segments = [e.event for e in rec.store.read(attempt_id=attempt.attempt_id)
                if e.type == "capture.segment"]
    assert segments[-1].offset + segments[-1].size == 700  # every byte the app received


def assert_async_openai_recorded_as_ingested(rec, server, transport) -> None:
    """The asyncio openai client streams the Responses capture through ``transport``: one
    attempt, the frames ``ingest`` reads from the same bytes, released with the text the
    application read (shared with the process writer's test)."""
    import openai

    server.routes["/v1/responses"] = route_for(RESPONSES, chunk=100)

    async def main() -> str:
        client = openai.AsyncOpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                                    http_client=httpx.AsyncClient(transport=transport))
        stream = await client.responses.create(model="gpt-4o", input="x", stream=True)
        parts = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        return "".join(parts)

    text = asyncio.run(main())
    transport.flush()
    (attempt,) = transport.attempts
    frames, expected = ingested(RESPONSES, PARIS)
    assert frames_of(rec, attempt.attempt_id) == frames
    decision = attempt.decision()
    assert (decision.status, decision.answer) == ("released", text) == (
        expected.status, expected.answer)


def test_async_client_records_the_same_frames(rec, server) -> None:
    assert_async_openai_recorded_as_ingested(
        rec, server, AsyncRecordingTransport(rec.trace("q", task=PARIS)))


def test_a_retry_while_the_first_still_delivers_supersedes_it(rec, server) -> None:
    """T8 by real code: the old stream is held mid-body, the retry runs to the end in
    another thread, then the old body finishes; its late text lands only in the old attempt."""
    old_route = route_for(ANTHROPIC, chunk=30, hold_at=700)
    server.routes["/v1/messages"] = old_route
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["Paris"]}))
    client = anthropic_client(server, transport)
    old_text: list[str] = []

    def old_reader() -> None:
        for event in client.messages.create(model="m", max_tokens=9, stream=True,
                                            messages=[{"role": "user", "content": "x"}]):
            if event.type == "content_block_delta":
                old_text.append(event.delta.text)

    old = threading.Thread(target=old_reader)
    old.start()
    assert old_route.reached.wait(20)
    server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    new_text: list[str] = []

    def new_reader() -> None:
        openai_c = openai_client(server, transport)
        for event in openai_c.responses.create(model="gpt-4o", input="x", stream=True):
            if event.type == "response.output_text.delta":
                new_text.append(event.delta)

    retry = threading.Thread(target=new_reader)
    retry.start()
    retry.join(30)
    old_route.release.set()
    old.join(30)
    transport.flush()
    first, second = transport.attempts
    assert rec.store.read(attempt_id=second.attempt_id)[0].event.retry_of == first.attempt_id
    # The application writes the answer it shows to its destinations (from the retry).
    answer = "".join(new_text)
    second.destination("ui", answer)
    second.destination("history", answer)
    events = rec.store.read(trace_id="q")
    old_d, new_d = decide_release(events, first.attempt_id), decide_release(events, second.attempt_id)
    assert (old_d.status, old_d.reasons) == ("superseded", ("superseded_by_newer_attempt",))
    assert new_d.status == "released" and new_d.answer == answer
    assert "".join(old_text) and "".join(old_text) not in new_d.answer
    released = [e.event.attempt_id for e in events
                if isinstance(e.event, ReleaseDecided) and e.event.eligible]
    assert released == [second.attempt_id]
    from tracestore.projections.destinations import audit

    assert audit(events, trace_id="q").violations == ()


def test_a_recording_failure_never_breaks_the_applications_stream(rec, server,
                                                                  monkeypatch) -> None:
    server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    transport = RecordingTransport(rec.trace("q"))
    client = openai_client(server, transport)
    segments = {"n": 0}
    original = rec.store.append

    def failing_append(events, **kwargs):
        # The database goes away once the first bytes are recorded, whatever the chunking
        # (the writer joins queued chunks into one feed, so counting appends would not do).
        if segments["n"]:
            raise StoreError("database is gone", code="database_unavailable")
        events = list(events)
        segments["n"] += sum(isinstance(e.event, CaptureSegment) for e in events)
        return original(events, **kwargs)

    original_groups = rec.store.append_groups

    def failing_groups(groups):  # the writer's batches: one transaction for many appends
        if segments["n"]:
            raise StoreError("database is gone", code="database_unavailable")
        segments["n"] += sum(isinstance(e.event, CaptureSegment)
                             for _, events, _, _ in groups for e in events)
        return original_groups(groups)

    original_fresh = rec.store.append_fresh_groups

    def failing_fresh(groups, versions=None, **kwargs):  # the same, as the recorder's rows
        if segments["n"]:
            raise StoreError("database is gone", code="database_unavailable")
        segments["n"] += sum(e.type == "capture.segment" for _, events, _, _ in groups
                             for e in events)
        return original_fresh(groups, versions, **kwargs)

    monkeypatch.setattr(rec.store, "append", failing_append)
    monkeypatch.setattr(rec.store, "append_groups", failing_groups)
    monkeypatch.setattr(rec.store, "append_fresh_groups", failing_fresh)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        deltas = [e.delta for e in client.responses.create(model="gpt-4o", input="x",
                                                           stream=True)
                  if e.type == "response.output_text.delta"]
        transport.flush()
    assert "".join(deltas) == "The capital of France is Paris."
    assert [f.code for f in transport.failures] == ["database_unavailable"]
    assert any("recording stopped" in str(w.message) for w in caught)
    monkeypatch.undo()
    transport.flush()
    (attempt,) = transport.attempts
    assert attempt.decision().status == "pending"  # a clean prefix, never a made-up ending
    assert rec.store.verify().ok


NOVA = REAL / "bedrock" / "nova-micro-text.bin"


def bedrock_client(server: CaptureServer):
    import boto3

    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url,
                        aws_access_key_id="test", aws_secret_access_key="test")


def test_bedrock_converse_stream_records_the_raw_event_stream(rec, server) -> None:
    from tracestore.recording.bedrock_capture import record_bedrock

    server.routes["/converse-stream"] = route_for(NOVA, chunk=100)
    client = bedrock_client(server)
    recording = record_bedrock(client, rec.trace("q", task=PARIS))
    response = client.converse_stream(
        modelId="amazon.nova-micro-v1:0", inferenceConfig={"maxTokens": 50},
        messages=[{"role": "user", "content": [{"text": "secret"}]}])
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in response["stream"]
                   if "contentBlockDelta" in e)
    recording.flush()
    (attempt,) = recording.attempts
    frames, expected = ingested(NOVA, PARIS)
    assert frames_of(rec, attempt.attempt_id) == frames
    decision = attempt.decision()
    assert (decision.status, decision.answer) == (expected.status, expected.answer)
    assert decision.status == "released" and decision.answer == text
    request = rec.store.read(attempt_id=attempt.attempt_id)[0].event.request
    assert request == {"endpoint": "converse-stream", "modelId": "amazon.nova-micro-v1:0",
                       "inferenceConfig": {"maxTokens": 50}}


def test_bedrock_early_close_is_a_stop_and_a_drop_is_a_reset(rec, server) -> None:
    from tracestore.recording.bedrock_capture import record_bedrock

    route = server.routes["/converse-stream"] = route_for(NOVA, chunk=100, hold_at=1500)
    client = bedrock_client(server)
    recording = record_bedrock(client, rec.trace("q", task=PARIS))
    response = client.converse_stream(modelId="amazon.nova-micro-v1:0", messages=[])
    for event in response["stream"]:
        if "contentBlockDelta" in event:
            response["stream"].close()  # the user's Stop
            break
    route.release.set()
    recording.flush()
    stopped = recording.attempts[0].decision()
    assert (stopped.status, stopped.reasons) == ("stopped", ("local_stop_before_release",))
    server.routes["/converse-stream"] = route_for(NOVA, chunk=100, drop_after=1500)
    response = client.converse_stream(modelId="amazon.nova-micro-v1:0", messages=[])
    with pytest.raises(Exception):
        for _ in response["stream"]:
            pass
    recording.flush()
    retry = recording.attempts[1]
    events = rec.store.read(attempt_id=retry.attempt_id)
    assert events[0].event.retry_of == recording.attempts[0].attempt_id
    drained = [e.event for e in events if e.type == "transport.drained"]
    assert [d.outcome for d in drained] == ["reset"]
    assert retry.decision().status == "interrupted"


def test_a_recorded_sdk_attempt_fills_the_settings_fields_of_the_review(rec, server) -> None:
    server.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=64)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = anthropic_client(server, transport)
    for _ in client.messages.create(model="claude-haiku-4-5", max_tokens=64, stream=True,
                                    messages=[{"role": "user", "content": "x"}]):
        pass
    transport.flush()
    (attempt,) = transport.attempts
    from clihelp import run

    db = Path(rec.store.url.split("///", 1)[1])
    code, out, err = run("review", attempt.attempt_id, "--template", "application-record",
                         "--format", "json", db=db)
    assert code == 0, err
    fields = {f["name"]: f for f in json.loads(out)["fields"]}
    for name in ("source_settings", "target_settings"):
        assert fields[name]["source"] == "derived", fields[name]
        assert "model=claude-haiku-4-5" in fields[name]["value"]
        assert "max_tokens=64" in fields[name]["value"]
    assert "live recording" in fields["trace_origin"]["value"]


def test_asyncio_tasks_a_retry_while_the_first_still_delivers_supersedes_it(
        rec, server) -> None:
    """The T8 situation with the async clients in two asyncio tasks of one event loop: the
    old body is held mid-stream, the retry runs to the end, then the old body finishes."""
    import anthropic
    import openai

    old_route = route_for(ANTHROPIC, chunk=30, hold_at=700)
    server.routes["/v1/messages"] = old_route
    server.routes["/v1/responses"] = route_for(RESPONSES, chunk=64)
    transport = AsyncRecordingTransport(rec.trace("q", task={"answer_patterns": ["Paris"]}))
    old_text: list[str] = []
    new_text: list[str] = []

    async def old_reader() -> None:
        client = anthropic.AsyncAnthropic(api_key="t", base_url=server.url, max_retries=0,
                                          http_client=httpx.AsyncClient(transport=transport))
        stream = await client.messages.create(model="m", max_tokens=9, stream=True,
                                              messages=[{"role": "user", "content": "x"}])
        async for event in stream:
            if event.type == "content_block_delta":
                old_text.append(event.delta.text)

    async def new_reader() -> None:
        assert await asyncio.to_thread(old_route.reached.wait, 20)  # old is mid-body
        client = openai.AsyncOpenAI(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
                                    http_client=httpx.AsyncClient(transport=transport))
        stream = await client.responses.create(model="gpt-4o", input="x", stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                new_text.append(event.delta)
        old_route.release.set()  # the old body goes on only after the retry has finished

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(old_reader(), new_reader()), 60)

    asyncio.run(main())
    transport.flush()
    first, second = transport.attempts
    assert rec.store.read(attempt_id=second.attempt_id)[0].event.retry_of == first.attempt_id
    answer = "".join(new_text)
    second.destination("ui", answer)
    events = rec.store.read(trace_id="q")
    old_d = decide_release(events, first.attempt_id)
    new_d = decide_release(events, second.attempt_id)
    assert (old_d.status, old_d.reasons) == ("superseded", ("superseded_by_newer_attempt",))
    assert (new_d.status, new_d.answer) == ("released", "The capital of France is Paris.")
    assert answer == new_d.answer
    assert "".join(old_text) and "".join(old_text) not in new_d.answer
    # The old attempt's late bytes (after the hold) come after the retry's start in the log.
    started = next(e.position for e in events if e.type == "attempt.started"
                   and e.event.attempt_id == second.attempt_id)
    old_segments = [e for e in events if e.type == "capture.segment"
                    and e.event.attempt_id == first.attempt_id]
    assert old_segments[0].position < started < old_segments[-1].position
    assert old_segments[-1].event.offset + old_segments[-1].event.size == \
        ANTHROPIC.stat().st_size  # every byte of the old body, though superseded
    released = [e.event.attempt_id for e in events
                if isinstance(e.event, ReleaseDecided) and e.event.eligible]
    assert released == [second.attempt_id]
    from tracestore.projections.destinations import audit

    assert audit(events, trace_id="q").violations == ()


CHAT_CAPTURES = sorted((REAL / "openai-chat").glob("*.sse"))
CHAT = REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse"


def drains_of(rec: Recorder, attempt_id: str) -> list:
    return [e.event for e in rec.store.read(attempt_id=attempt_id)
            if e.type == "transport.drained"]


def ingested_drain(path: Path) -> str:
    plan = plan_ingest(path.read_bytes(), filename=path.name, attempt_id="x", trace_id="x")
    return next(e.event.outcome for e in plan.events if e.event.type == "transport.drained")


@pytest.mark.parametrize("capture", CHAT_CAPTURES, ids=lambda p: p.stem)
def test_chat_completions_full_read_is_decided_as_ingest_decides_it(rec, server,
                                                                    capture) -> None:
    """openai's iterator stops at ``data: [DONE]`` and closes the response itself: that is
    the end of the stream as the SDK ends it, not the user's Stop (issue 18)."""
    server.routes["/v1/chat/completions"] = route_for(capture, chunk=64)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = openai_client(server, transport)
    try:
        for _ in client.chat.completions.create(model="gpt-5", stream=True,
                                                messages=[{"role": "user", "content": "x"}]):
            pass
    except Exception:  # noqa: BLE001 - an error event after 200 is raised by the SDK
        pass
    transport.flush()
    (attempt,) = transport.attempts
    frames, expected = ingested(capture, {"answer_patterns": ["."]})
    assert frames_of(rec, attempt.attempt_id) == frames
    recorded = attempt.decision()
    assert (recorded.status, recorded.reasons, recorded.answer) == (
        expected.status, expected.reasons, expected.answer)
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert drained.outcome == ingested_drain(capture)
    types = [e.type for e in rec.store.read(attempt_id=attempt.attempt_id)]
    assert "local.stopped" not in types


def test_chat_completions_full_read_is_released_with_a_clean_drain(rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = openai_client(server, transport)
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="gpt-5", stream=True, messages=[{"role": "user", "content": "x"}]) if c.choices)
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    assert (decision.status, decision.answer) == ("released", text)
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert drained.outcome == "clean"
    assert drained.detail == ("closed by the application after the native terminal; body "
                              "bytes unread not known (chunked body: at least its last chunk)")


def test_chat_completions_close_before_the_terminal_is_a_stop_at_that_byte(rec,
                                                                           server) -> None:
    route = server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64, hold_at=1200)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = openai_client(server, transport)
    stream = client.chat.completions.create(model="gpt-5", stream=True,
                                            messages=[{"role": "user", "content": "x"}])
    for _ in stream:
        break
    stream.close()
    route.release.set()
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    events = rec.store.read(attempt_id=attempt.attempt_id)
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert drained.outcome == "eof"
    assert drained.detail == "closed by the application before the native terminal"
    segments = [e.event for e in events if e.type == "capture.segment"]
    assert segments[-1].offset + segments[-1].size <= 1200  # the bytes it had, no more


def test_a_stream_dropped_without_close_is_recorded_when_collected(rec, server) -> None:
    """``break`` without close or ``with``: once the stream object is garbage-collected the
    attempt is a Stop (no terminal had arrived), the drain's detail says so."""
    route = server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64, hold_at=1200)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = openai_client(server, transport)
    stream = client.chat.completions.create(model="gpt-5", stream=True,
                                            messages=[{"role": "user", "content": "x"}])
    for _ in stream:
        break
    del stream
    gc.collect()
    route.release.set()
    transport.flush()
    (attempt,) = transport.attempts
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert (drained.outcome, drained.detail) == (
        "eof", "the application dropped the response without closing it, before the "
               "native terminal (garbage-collected)")


def test_a_content_length_body_closed_after_the_terminal_says_how_much_was_unread(
        rec, server) -> None:
    server.routes["/v1/chat/completions"] = route_for(CHAT, chunk=64, content_length=True)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = openai_client(server, transport)
    for _ in client.chat.completions.create(model="gpt-5", stream=True,
                                            messages=[{"role": "user", "content": "x"}]):
        pass
    transport.flush()
    (attempt,) = transport.attempts
    assert attempt.decision().status == "released"
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert drained.outcome == "clean"
    assert drained.detail in (  # the SDK may have asked for the empty end of the body
        None, "closed by the application after the native terminal; 0 body bytes unread")


def test_a_stream_dropped_after_the_terminal_is_a_clean_drain(rec, server) -> None:
    """Anthropic's iterator leaves the body after ``message_stop`` unread when the app
    breaks right there; dropping the stream then is a clean drain naming how it ended."""
    server.routes["/v1/messages"] = route_for(ANTHROPIC, chunk=4096)
    transport = RecordingTransport(rec.trace("q", task={"answer_patterns": ["."]}))
    client = anthropic_client(server, transport)
    stream = client.messages.create(model="m", max_tokens=9, stream=True,
                                    messages=[{"role": "user", "content": "x"}])
    for event in stream:
        if event.type == "message_stop":
            break
    del stream, event
    gc.collect()
    transport.flush()
    (attempt,) = transport.attempts
    assert attempt.decision().status == "released"
    (drained,) = drains_of(rec, attempt.attempt_id)
    assert drained.outcome == "clean"
    # anthropic's generator closes the response when it is collected (the SDK's close), or
    # the body object goes unclosed (the recorder's finalizer): both after the terminal.
    unread = "body bytes unread not known (chunked body: at least its last chunk)"
    assert drained.detail in (
        None, f"closed by the application after the native terminal; {unread}",
        "the application dropped the response without closing it, after the native "
        f"terminal (garbage-collected); {unread}")
