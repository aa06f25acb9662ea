"""The SDK usage-pattern matrix (issue 18, item 3): real clients against the local server
replaying real captures byte for byte.

* every real capture with a matching SDK route, read to the end through that SDK: the same
  frames, drain (outcome, and the detail the bytes show) and decision as ``ingest`` of the
  file;
* each SDK API × pattern (full read, full read then close, ``with`` block, early break +
  close, early break without close, an exception of the app inside its loop, the server
  dropping the connection mid-body, a retry in a second thread while the first delivers);
* the same patterns with each asyncio client and async stream helper (``async with``, a
  retry in a second task).
"""

from __future__ import annotations

import asyncio
import gc
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tracestore import Recorder
from tracestore.recording.httpx_capture import AsyncRecordingTransport, RecordingTransport

from capture_server import CaptureServer, route_for
from conftest import FIXTURES
from test_recording_as_ingest import ingested as as_ingest_ingested
from test_recording_sdk import frames_of  # the frames as the SDK tests compare them

# full collections skip the SDKs' long-lived objects (conftest.frozen_heap)
pytestmark = pytest.mark.usefixtures("frozen_heap")

REAL = FIXTURES / "real"
#: A Chat Completions stream that ends with ``data: [DONE]`` and no ``finish_reason``
#: (Snowflake's OpenAI-compatible endpoint, recorded by pydantic-ai: fixtures/wild).
DONE_ONLY = FIXTURES / "wild" / "other-compatible" / "pyd__snowflake_model_streaming.sse"
TASK = {"answer_patterns": ["."]}
MSG = [{"role": "user", "content": "x"}]
GEMINI_PATH = "gemini-2.0-flash:streamGenerateContent"  # matched as a suffix


@pytest.fixture
def rec(tmp_path: Path):
    with Recorder(f"sqlite:///{tmp_path / 'matrix.db'}") as opened:
        yield opened


@pytest.fixture(scope="module")
def _server():
    with CaptureServer() as running:
        yield running


@pytest.fixture
def server(_server):
    _server.routes.clear()
    yield _server
    for route in _server.routes.values():
        route.release.set()
    gc.collect()  # finalize the streams left early while every module is whole


# -- the SDK APIs ---------------------------------------------------------------------------
def _openai(server, transport, aio=False):
    import openai

    cls, client = (openai.AsyncOpenAI, httpx.AsyncClient) if aio else (openai.OpenAI,
                                                                      httpx.Client)
    return cls(api_key="t", base_url=f"{server.url}/v1", max_retries=0,
               http_client=client(transport=transport))


def _anthropic(server, transport, aio=False):
    import anthropic

    cls, client = (anthropic.AsyncAnthropic, httpx.AsyncClient) if aio else (
        anthropic.Anthropic, httpx.Client)
    return cls(api_key="t", base_url=server.url, max_retries=0,
               http_client=client(transport=transport))


def _gemini(server, transport, aio=False):
    from google import genai
    from google.genai import types

    client = (httpx.AsyncClient if aio else httpx.Client)(transport=transport)
    key = "httpx_async_client" if aio else "httpx_client"
    return genai.Client(api_key="t", http_options=types.HttpOptions(
        base_url=server.url, **{key: client}))


@dataclass(frozen=True)
class Api:
    """One SDK API: ``start(server, transport)`` returns (stream, close); the stream is
    iterable (sync).  ``helper``: a stream manager that must be entered (``with``)."""

    name: str
    route: str
    captures: tuple[Path, ...]
    start: Callable[[Any, Any], tuple[Iterable[Any], Callable[[], None]]]
    helper: bool = False


def _chat(server, transport):
    s = _openai(server, transport).chat.completions.create(model="m", stream=True,
                                                           messages=MSG)
    return s, s.close


def _chat_helper(server, transport):
    manager = _openai(server, transport).chat.completions.stream(model="m", messages=MSG)
    s = manager.__enter__()
    return s, lambda: manager.__exit__(None, None, None)


def _responses(server, transport):
    s = _openai(server, transport).responses.create(model="m", input="x", stream=True)
    return s, s.close


def _responses_helper(server, transport):
    manager = _openai(server, transport).responses.stream(model="m", input="x")
    s = manager.__enter__()
    return s, lambda: manager.__exit__(None, None, None)


def _messages(server, transport):
    s = _anthropic(server, transport).messages.create(model="m", max_tokens=9, stream=True,
                                                      messages=MSG)
    return s, s.close


def _messages_helper(server, transport):
    manager = _anthropic(server, transport).messages.stream(model="m", max_tokens=9,
                                                            messages=MSG)
    s = manager.__enter__()
    return s, lambda: manager.__exit__(None, None, None)


def _gemini_stream(server, transport):
    s = _gemini(server, transport).models.generate_content_stream(model="gemini-2.0-flash",
                                                                  contents="x")
    return s, s.close


def _converse(server, transport):
    import boto3

    from tracestore.recording.bedrock_capture import record_bedrock

    if transport.bedrock is None:  # one client and recording per session, as an app has
        transport.bedrock_client = boto3.client(
            "bedrock-runtime", region_name="us-east-1", endpoint_url=server.url,
            aws_access_key_id="t", aws_secret_access_key="t")
        transport.bedrock = record_bedrock(transport.bedrock_client, transport.trace)
    client = transport.bedrock_client
    response = client.converse_stream(modelId="amazon.nova-micro-v1:0", messages=[])
    return response["stream"], response["stream"].close


def _sse(folder: str) -> tuple[Path, ...]:
    return tuple(sorted((REAL / folder).glob("*.sse")))


CHAT = (*_sse("openai-chat"), DONE_ONLY)
RESPONSES = _sse("openai-responses")
ANTHROPIC = _sse("anthropic")
GEMINI = tuple(p for p in _sse("gemini"))
BEDROCK = tuple(sorted((REAL / "bedrock").glob("*.bin")))

APIS = [
    Api("openai-chat", "/v1/chat/completions", CHAT, _chat),
    Api("openai-chat-stream-helper", "/v1/chat/completions", CHAT, _chat_helper, True),
    Api("openai-responses", "/v1/responses", RESPONSES, _responses),
    Api("openai-responses-stream-helper", "/v1/responses", RESPONSES, _responses_helper,
        True),
    Api("anthropic-messages", "/v1/messages", ANTHROPIC, _messages),
    Api("anthropic-messages-stream-helper", "/v1/messages", ANTHROPIC, _messages_helper,
        True),
    Api("gemini", GEMINI_PATH, GEMINI, _gemini_stream),
    Api("bedrock-converse-stream", "/converse-stream", BEDROCK, _converse),
]
TEXT = {"openai-chat": REAL / "openai-chat" / "text-usage-moderation-gpt-5.sse",
        "openai-responses": REAL / "openai-responses" / "text-gpt-4o.sse",
        "anthropic-messages": REAL / "anthropic" / "text-basic.sse",
        "gemini": REAL / "gemini" / "sse-text.sse",
        "bedrock-converse-stream": REAL / "bedrock" / "nova-micro-text.bin"}


def text_capture(api: Api) -> Path:
    return TEXT[api.name.replace("-stream-helper", "")]


class Session:
    """A transport (or boto3 recording) and the attempts it recorded."""

    def __init__(self, rec: Recorder, server: CaptureServer) -> None:
        self.rec, self.server = rec, server
        self.transport = RecordingTransport(rec.trace("q", task=TASK))
        self.transport.bedrock = None

    def start(self, api: Api):
        return api.start(self.server, self.transport)

    @property
    def recording(self):
        return self.transport.bedrock or self.transport

    def attempts(self) -> list[Any]:
        self.recording.flush()
        return list(self.recording.attempts)


def ingested(path: Path):
    """The frames, drain and decision ``ingest`` gives ``path`` (test_recording_as_ingest's)."""
    _api, frames, drain, decision = as_ingest_ingested(path)
    return frames, drain, decision


#: What a live drain adds to the detail the bytes show: how the application ended the body.
APP_NOTE = re.compile(r"(?:^|; )(?:closed by the application|the application dropped the "
                      r"response) (?:after the native terminal|after the dialect's end "
                      r"marker \[DONE\])(?: \(garbage-collected\))?; (?:\d+ body bytes unread"
                      r"|body bytes unread not known \(chunked body: at least its last chunk\))$")


def bytes_detail(detail: str | None) -> str | None:
    """A live drain's detail without the application's note: what the bytes show."""
    return APP_NOTE.sub("", detail or "") or None


def drain_of(rec: Recorder, attempt_id: str):
    (drained,) = [e.event for e in rec.store.read(attempt_id=attempt_id)
                  if e.type == "transport.drained"]
    return drained


def read_all(stream) -> None:
    try:
        for _ in stream:
            pass
    except Exception:  # noqa: BLE001 - an SDK raising on a native error event is a read too
        pass


def assert_as_ingested(rec: Recorder, attempt: Any, capture: Path) -> None:
    frames, drain, expected = ingested(capture)
    assert frames_of(rec, attempt.attempt_id) == frames
    got = attempt.decision()
    assert (got.status, got.reasons, got.answer) == (expected.status, expected.reasons,
                                                     expected.answer)
    drained = drain_of(rec, attempt.attempt_id)
    assert (drained.outcome, bytes_detail(drained.detail)) == drain
    assert "local.stopped" not in [e.type for e in rec.store.read(attempt_id=attempt.attempt_id)]


# -- the oracle: every capture with a route, full read ----------------------------------------
# Every capture through each API's plain call; a stream helper reads the same bytes and
# differs only in how it closes, so it runs the oracle on its API's text capture (the
# pattern tests below drive every helper too) -- a third fewer SDK round trips.
CASES = [(api, capture) for api in APIS
         for capture in (api.captures if not api.helper else (text_capture(api),))]


@pytest.mark.parametrize(("api", "capture"), CASES,
                         ids=[f"{a.name}-{c.stem}" for a, c in CASES])
def test_a_full_read_is_what_ingest_of_the_capture_says(rec, server, api, capture) -> None:
    server.routes[api.route] = route_for(capture, chunk=4096)
    session = Session(rec, server)
    stream, close = session.start(api)
    read_all(stream)
    close()
    (attempt,) = session.attempts()
    assert_as_ingested(rec, attempt, capture)


@pytest.mark.parametrize("content_length", [False, True], ids=["chunked", "content-length"])
def test_done_without_finish_reason_is_what_ingest_says_not_a_stop(
        rec, server, content_length) -> None:
    """openai's iterator stops at ``[DONE]`` and closes the response: with no finish_reason
    before it that is the provider's own end of the stream, not the user's Stop — the drain
    names the marker exactly as ``ingest`` of the bytes does, and the decision is ingest's."""
    server.routes["/v1/chat/completions"] = route_for(DONE_ONLY, by_event=True,
                                                      content_length=content_length)
    session = Session(rec, server)
    stream, close = _chat(server, session.transport)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    close()
    (attempt,) = session.attempts()
    assert text == "4"
    _, (outcome, detail), expected = ingested(DONE_ONLY)
    assert (outcome, detail) == ("eof", "the dialect's end marker [DONE] arrived (frame 3 at "
                                 "byte 950) but no native terminal (finish_reason) came")
    got = attempt.decision()
    assert (got.status, got.reasons) == (expected.status, expected.reasons)
    assert got.status == "interrupted"
    unread = "0 body bytes unread" if content_length else \
        "body bytes unread not known (chunked body: at least its last chunk)"
    assert drain_of(rec, attempt.attempt_id).detail == (
        f"{detail}; closed by the application after the dialect's end marker [DONE]; {unread}")
    assert "local.stopped" not in [e.type for e in rec.store.read(attempt_id=attempt.attempt_id)]


# -- the patterns -------------------------------------------------------------------------
def _ids(apis):
    return [a.name for a in apis]


@pytest.mark.parametrize("api", APIS, ids=_ids(APIS))
def test_full_read_then_close_and_with_block_are_clean(rec, server, api) -> None:
    capture = text_capture(api)
    server.routes[api.route] = route_for(capture, chunk=512)
    session = Session(rec, server)
    stream, close = session.start(api)
    read_all(stream)
    close()
    close()  # closing twice is the app's business, recorded once
    stream, close = session.start(api)
    try:
        with (stream if not api.helper and hasattr(stream, "__enter__") else _closing(close)):
            read_all(stream)
    finally:
        close()
    first, second = session.attempts()
    assert_as_ingested(rec, first, capture)
    frames, drain, _ = ingested(capture)
    assert frames_of(rec, second.attempt_id) == frames
    drained = drain_of(rec, second.attempt_id)
    assert (drained.outcome, bytes_detail(drained.detail)) == drain == ("clean", None)


class _closing:
    def __init__(self, close):
        self.close = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _held(api: Api, server: CaptureServer, **options):
    capture = text_capture(api)
    route = route_for(capture, chunk=256, hold_at=_half(capture), **options)
    server.routes[api.route] = route
    return capture, route


def _half(capture: Path) -> int:
    return capture.stat().st_size // 2


def _assert_stopped(rec, attempt, capture) -> None:
    decision = attempt.decision()
    assert (decision.status, decision.reasons) == ("stopped", ("local_stop_before_release",))
    drained = drain_of(rec, attempt.attempt_id)
    assert drained.outcome == "eof"
    segments = [e.event for e in rec.store.read(attempt_id=attempt.attempt_id)
                if e.type == "capture.segment"]
    assert segments[-1].offset + segments[-1].size <= _half(capture)


@pytest.mark.parametrize("api", APIS, ids=_ids(APIS))
def test_early_break_and_close_is_a_stop(rec, server, api) -> None:
    capture, route = _held(api, server)
    session = Session(rec, server)
    stream, close = session.start(api)
    for _ in stream:
        break
    close()
    route.release.set()
    (attempt,) = session.attempts()
    _assert_stopped(rec, attempt, capture)
    assert drain_of(rec, attempt.attempt_id).detail == \
        "closed by the application before the native terminal"


def _break_without_close(session: Session, api: Api) -> None:
    stream, _close = session.start(api)
    for _ in stream:
        break


@pytest.mark.parametrize("api", [a for a in APIS if not a.helper],
                         ids=_ids(a for a in APIS if not a.helper))
def test_early_break_without_close_is_a_stop_once_collected(rec, server, api) -> None:
    capture, route = _held(api, server)
    session = Session(rec, server)
    _break_without_close(session, api)
    gc.collect()
    route.release.set()
    (attempt,) = session.attempts()
    _assert_stopped(rec, attempt, capture)


def _app_raises(session: Session, api: Api) -> None:
    stream, close = session.start(api)
    try:
        for _ in stream:
            raise LookupError("the application's own bug")
    except LookupError:
        pass
    finally:
        if api.helper:
            close()  # a helper is used in a `with` block, which closes on the exception


@pytest.mark.parametrize("api", APIS, ids=_ids(APIS))
def test_an_exception_of_the_app_inside_its_loop_is_a_stop(rec, server, api) -> None:
    capture, route = _held(api, server)
    session = Session(rec, server)
    _app_raises(session, api)
    gc.collect()
    route.release.set()
    (attempt,) = session.attempts()
    _assert_stopped(rec, attempt, capture)


@pytest.mark.parametrize("api", APIS, ids=_ids(APIS))
def test_the_server_dropping_mid_body_is_an_interrupted_reset(rec, server, api) -> None:
    capture = text_capture(api)
    server.routes[api.route] = route_for(capture, chunk=256, drop_after=_half(capture))
    session = Session(rec, server)
    stream, close = session.start(api)
    with pytest.raises(Exception):  # noqa: B017 - each SDK names the broken read its way
        for _ in stream:
            pass
    close()
    (attempt,) = session.attempts()
    assert attempt.decision().status == "interrupted"
    assert drain_of(rec, attempt.attempt_id).outcome == "reset"


@pytest.mark.parametrize("api", APIS, ids=_ids(APIS))
def test_a_retry_in_a_second_thread_while_the_first_delivers_supersedes_it(
        rec, server, api) -> None:
    capture, route = _held(api, server)
    session = Session(rec, server)
    delivering = threading.Event()

    def old_reader() -> None:  # the app has its first event: the old attempt is live
        stream = session.start(api)[0]
        for _ in stream:
            delivering.set()

    first = threading.Thread(target=old_reader)
    first.start()
    assert delivering.wait(20) and route.reached.wait(20)
    server.routes[api.route] = route_for(capture, chunk=4096)
    stream, close = session.start(api)
    read_all(stream)
    close()
    route.release.set()
    first.join(30)
    gc.collect()
    old, new = session.attempts()
    started = [e.event for e in rec.store.read(attempt_id=new.attempt_id)
               if e.type == "attempt.started"]
    assert started[0].retry_of == old.attempt_id
    assert old.decision().status == "superseded"
    assert_as_ingested(rec, new, capture)


# -- async ----------------------------------------------------------------------------------
async def _async_stream(api: str, server, transport):
    if api == "openai-chat":
        return await _openai(server, transport, True).chat.completions.create(
            model="m", stream=True, messages=MSG)
    if api == "openai-responses":
        return await _openai(server, transport, True).responses.create(
            model="m", input="x", stream=True)
    if api == "anthropic-messages":
        return await _anthropic(server, transport, True).messages.create(
            model="m", max_tokens=9, stream=True, messages=MSG)
    return await _gemini(server, transport, True).aio.models.generate_content_stream(
        model="gemini-2.0-flash", contents="x")


def _async_manager(api: str, server, transport):
    """An async stream helper's manager (``async with … as stream``)."""
    if api == "openai-chat-stream-helper":
        return _openai(server, transport, True).chat.completions.stream(model="m",
                                                                        messages=MSG)
    if api == "openai-responses-stream-helper":
        return _openai(server, transport, True).responses.stream(model="m", input="x")
    return _anthropic(server, transport, True).messages.stream(model="m", max_tokens=9,
                                                               messages=MSG)


async def _astart(api: str, server, transport):
    """(async iterable, async close) for one async SDK API; a helper's manager entered."""
    if api.endswith("-stream-helper"):
        manager = _async_manager(api, server, transport)
        stream = await manager.__aenter__()
        return stream, lambda: manager.__aexit__(None, None, None)
    stream = await _async_stream(api, server, transport)
    return stream, (stream.aclose if hasattr(stream, "aclose") else stream.close)


async def _aread_all(stream) -> None:
    try:
        async for _ in stream:
            pass
    except Exception:  # noqa: BLE001 - as read_all
        pass


ASYNC = ["openai-chat", "openai-chat-stream-helper", "openai-responses",
         "openai-responses-stream-helper", "anthropic-messages",
         "anthropic-messages-stream-helper", "gemini"]
ROUTES = {a.name: a.route for a in APIS}


async def _until_abandoned_bodies_end(transport: Any) -> None:
    """Let the loop finalize what the application abandoned, however the interpreter's own
    collections fell: a collection finds an abandoned generator in a reference cycle, but
    its finalizer hook only schedules ``aclose()`` on the loop, which holds the response
    body until that task (and the SDK's own ``finally``, closing the connection) has run;
    only then is the body freed and its ending recorded.  Bounded: 500 turns of the loop."""
    for _ in range(500):
        gc.collect()
        await asyncio.sleep(0.001)
        with transport.state_lock:
            if all(attempt.closing for attempt in transport.live):
                return


@pytest.mark.parametrize("api", ASYNC)
def test_async_patterns(rec, server, api) -> None:
    """Every pattern with the asyncio client, in one event loop: full read then close, an
    ``async with`` block, early break + close, early break without close (collected), an
    exception of the app inside its loop, the server dropping mid-body, and a retry in a
    second task while the first still delivers."""
    base = api.replace("-stream-helper", "")
    capture, route_path, helper = TEXT[base], ROUTES[api], api.endswith("-stream-helper")
    traces = iter(range(100))
    transport = AsyncRecordingTransport(lambda: rec.trace(f"q{next(traces)}", task=TASK))
    got: dict[str, Any] = {}

    def last(name: str) -> None:
        transport.flush()
        got[name] = transport.attempts[-1]

    def held():
        route = server.routes[route_path] = route_for(capture, chunk=256,
                                                      hold_at=_half(capture))
        return route

    async def main() -> None:
        server.routes[route_path] = route_for(capture, chunk=512)
        stream, close = await _astart(api, server, transport)
        await _aread_all(stream)
        await close()
        await close()  # closing twice is the app's business, recorded once
        last("full")
        stream, close = await _astart(api, server, transport)
        try:
            if not helper and hasattr(stream, "__aenter__"):
                async with stream:
                    await _aread_all(stream)
            else:
                await _aread_all(stream)
        finally:
            await close()
        last("with")
        route = held()
        stream, close = await _astart(api, server, transport)
        async for _ in stream:
            break
        await close()
        route.release.set()
        last("break-close")
        for pattern in ("break-no-close", "app-raises"):
            if helper and pattern == "break-no-close":
                continue  # a helper is used in `async with`, which closes
            route = held()
            stream, close = await _astart(api, server, transport)
            try:
                async for _ in stream:
                    if pattern == "app-raises":
                        raise LookupError("the application's own bug")
                    break
            except LookupError:
                pass
            if helper:
                await close()  # `async with` closes on the exception
            del stream, close
            await _until_abandoned_bodies_end(transport)
            route.release.set()
            last(pattern)
        server.routes[route_path] = route_for(capture, chunk=256, drop_after=_half(capture))
        stream, close = await _astart(api, server, transport)
        with pytest.raises(Exception):  # noqa: B017 - each SDK names the broken read its way
            async for _ in stream:
                pass
        await close()
        last("drop")

    asyncio.run(main())
    assert_as_ingested(rec, got["full"], capture)
    frames, drain, _ = ingested(capture)
    assert frames_of(rec, got["with"].attempt_id) == frames
    drained = drain_of(rec, got["with"].attempt_id)
    assert (drained.outcome, bytes_detail(drained.detail)) == drain == ("clean", None)
    for pattern in ("break-close", "break-no-close", "app-raises"):
        if pattern in got:
            _assert_stopped(rec, got[pattern], capture)
    assert got["drop"].decision().status == "interrupted"
    assert drain_of(rec, got["drop"].attempt_id).outcome == "reset"
    patterns = {"full", "with", "break-close", "app-raises", "drop"} | (
        set() if helper else {"break-no-close"})
    assert set(got) == patterns
    assert len({a.attempt_id for a in got.values()}) == len(got)  # one attempt each


@pytest.mark.parametrize("api", ASYNC)
def test_async_retry_in_a_second_task_while_the_first_delivers_supersedes_it(
        rec, server, api) -> None:
    capture, route_path = TEXT[api.replace("-stream-helper", "")], ROUTES[api]
    transport = AsyncRecordingTransport(rec.trace("q", task=TASK))
    route = server.routes[route_path] = route_for(capture, chunk=256, hold_at=_half(capture))

    async def old_reader() -> None:
        stream, close = await _astart(api, server, transport)
        await _aread_all(stream)
        await close()

    async def new_reader() -> None:
        assert await asyncio.to_thread(route.reached.wait, 20)  # the old one is mid-body
        server.routes[route_path] = route_for(capture, chunk=4096)
        stream, close = await _astart(api, server, transport)
        await _aread_all(stream)
        await close()
        route.release.set()  # the old body goes on only after the retry has finished

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(old_reader(), new_reader()), 60)

    asyncio.run(main())
    transport.flush()
    old, new = transport.attempts
    started = [e.event for e in rec.store.read(attempt_id=new.attempt_id)
               if e.type == "attempt.started"]
    assert started[0].retry_of == old.attempt_id
    assert old.decision().status == "superseded"
    assert_as_ingested(rec, new, capture)
