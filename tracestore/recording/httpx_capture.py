"""SDK capture for httpx-based clients (``openai``, ``anthropic``, ``google-genai``).

    transport = RecordingTransport(trace)             # a TraceRecorder
    client = anthropic.Anthropic(http_client=httpx2.Client(transport=transport))

The official SDKs of this generation are built on ``httpx2`` (older ones on ``httpx``);
both have the same transport API, so the transport is made for whichever module the
client uses: ``RecordingTransport(trace, http=httpx)`` for an ``httpx.Client``; the default
is ``httpx2`` when it is installed, else ``httpx``.
    with client.messages.stream(...) as stream: ...   # application code unchanged

Every streaming response (``text/event-stream``, AWS event stream, NDJSON, or a request
that asked for ``stream``) becomes one attempt of the trace, recorded from the raw body
bytes exactly as the application reads them.  Each later attempt through the same
transport and trace is recorded as a retry of the one before.

What is recorded when:

* a chunk is recorded when the application asks for the next one, so the application
  always gets its bytes before the store sees them (the store never delays the first byte);
* the body ended normally → drain ``clean``/``eof`` as the bytes show;
* the application closed the response before the end (its user's Stop) → the chunks it
  received, a local Stop at that point, then drain ``eof`` ("closed by the application");
* reading raised → drain ``reset`` (connection errors) or ``error`` (anything else) with
  the exception class, and the exception reaches the application unchanged.

Recording never breaks the application: a recording failure (database unreachable, a
typed recorder error) is kept on ``transport.failures`` and warned once, recording of that
attempt stops, and the bytes keep flowing unchanged.  The application learns of the
failure from ``transport.failures`` (or ``Recorder`` raising at start-up), never from its
own stream breaking.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from tracestore.recording.body import BodyAttempt, BodyRecording

#: Request fields that are prompts or payloads, not settings: never copied into the log.
_CONTENT_FIELDS = frozenset({"messages", "input", "contents", "system", "tools", "prompt",
                             "instructions", "tool_config", "toolConfig", "system_instruction",
                             "systemInstruction", "metadata"})

#: The writers a recording transport records with (``writer=``), and the variable that
#: chooses the one ``writer="auto"`` (the default) stands for.
WRITERS = ("auto", "thread", "process")
WRITER_ENV = "TRACESTORE_WRITER"

_STREAM_TYPES = {"text/event-stream": "sse", "application/vnd.amazon.eventstream":
                 "aws-eventstream", "application/x-ndjson": "ndjson",
                 "application/ndjson": "ndjson"}


def api_for_path(path: str) -> str:
    """The provider API a request path names (``auto`` when it names none we know)."""
    if path.endswith("/responses"):
        return "openai-responses"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/messages"):
        return "anthropic-messages"
    if ":streamGenerateContent" in path:
        return "gemini"
    if path.endswith("/converse-stream"):
        return "bedrock-converse-stream"
    return "auto"


def request_settings(request: Any, *, prompts: bool = False,
                     fields: frozenset[str] | None = None) -> dict[str, Any]:
    """Model and parameters of a request, never its headers or query (keys); its prompt
    only with ``prompts`` (the recorder's ``record_prompts``), redacted with ``fields``
    and bounded (``prompts.kept_prompt``)."""
    settings: dict[str, Any] = {"endpoint": request.url.path}
    agent = request.headers.get("user-agent")
    if agent:  # the SDK and its version (no secret): the review's reader/client revision
        settings["client"] = agent
    if ":" in request.url.path.rsplit("/", 1)[-1]:  # Gemini: /models/NAME:streamGenerateContent
        settings["model"] = request.url.path.rsplit("/", 1)[-1].split(":", 1)[0]
    try:
        body = json.loads(request.content or b"null")
    except Exception:  # noqa: BLE001 - a body that is not JSON (or not read) has no settings
        body = None
    if isinstance(body, dict):
        settings.update({k: v for k, v in body.items() if k not in _CONTENT_FIELDS})
        if prompts:
            from tracestore.recording.prompts import kept_prompt

            settings.update(kept_prompt(body, fields))
    return settings


def recorder_settings(attempt: BodyAttempt, request: Any) -> dict[str, Any]:
    """``request_settings`` as the attempt's recorder asks (its ``record_prompts`` and
    secret fields), read when the writer opens the attempt and its trace is known."""
    recorder = attempt.handle.trace.recorder
    return request_settings(request, prompts=recorder.record_prompts,
                            fields=recorder.secret_fields)


def raw_header(headers: Any, name: bytes) -> str | None:
    """One header's value (the first), read from ``headers.raw``: an httpx ``Headers.get``
    decodes and joins every header on each call (~10-30 us), and these are read in the
    application's thread before its first byte."""
    raw = getattr(headers, "raw", None)
    if raw is None:
        value = headers.get(name.decode())
        return None if value is None else str(value)
    for key, value in raw:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _content_type(response: Any) -> str:
    return (raw_header(response.headers, b"content-type") or "").split(";", 1)[0].strip().lower()


def _is_streaming(request: Any, response: Any) -> bool:
    """A stream's content type, Gemini's streaming path, or an error response (4xx/5xx) to
    a request that asked for a stream (``"stream": true``) — a provider refusing a streamed
    request (a bad key, an unknown model) answers with one JSON error body, recorded as the
    attempt's evidence (``failed``, as ``ingest`` of the body says) once it is read."""
    if _content_type(response) in _STREAM_TYPES:
        return True
    if ":streamGenerateContent" in request.url.path:
        return True
    return response.status_code >= 400 and api_for_path(request.url.path) != "auto" \
        and _asked_for_stream(request)


def _asked_for_stream(request: Any) -> bool:
    try:
        body = json.loads(request.content or b"null")
    except Exception:  # noqa: BLE001 - a body that is not JSON (or not read) asks for nothing
        return False
    return isinstance(body, dict) and body.get("stream") is True


def _framing(response: Any) -> str | None:
    return _STREAM_TYPES.get(_content_type(response))


def body_size(headers: Any) -> int | None:
    """The body's length in bytes as read, when the response says it (no content-encoding:
    a compressed body is read decoded, so its content-length is not what the app reads)."""
    if headers.get("content-encoding", "identity").lower() not in ("", "identity"):
        return None
    try:
        size = int(headers.get("content-length", ""))
    except ValueError:
        return None
    return size if size >= 0 else None


def attempt_for(owner: BodyRecording, request: Any, response: Any) -> BodyAttempt:
    """The attempt of a streamed response, made when its headers arrive.  Only what must be
    fixed then is worked out here, in the application's thread before its first byte (the
    handle, the turn, the API, the framing); the request's settings (a JSON parse of the
    request body) and the body's size are read by the writer when it needs them."""
    framing = _framing(response)
    attempt = BodyAttempt(owner, api_for_path(request.url.path), framing,
                          lambda: recorder_settings(attempt, request),
                          lambda: body_size(response.headers),
                          refusal=framing is None and response.status_code >= 400)
    if owner.process is not None:  # read by the writer process from its opening record
        attempt.wire = (request, response.headers)
    return owner.track(attempt)


def _default_http() -> Any:
    try:
        import httpx2 as http
    except ModuleNotFoundError:
        import httpx as http  # type: ignore[no-redef]
    return http


_CLASSES: dict[str, tuple[type, type]] = {}


def _classes(http: Any) -> tuple[type, type]:
    """The sync and async transport classes for one httpx-like module (made once)."""
    if http.__name__ in _CLASSES:
        return _CLASSES[http.__name__]

    class SyncBody(http.SyncByteStream):
        def __init__(self, inner: Any, attempt: BodyAttempt) -> None:
            self._inner, self._attempt = inner, attempt
            self.tracestore_handle = attempt.handle  # ``turn.attempt_of(stream)`` finds it
            attempt.watch(self)

        def __iter__(self) -> Iterator[bytes]:
            with self._attempt.reading():
                for chunk in self._inner:
                    self._attempt.received(chunk)
                    yield chunk

        def close(self) -> None:
            self._attempt.closed_early()
            self._inner.close()

    class AsyncBody(http.AsyncByteStream):
        def __init__(self, inner: Any, attempt: BodyAttempt) -> None:
            self._inner, self._attempt = inner, attempt
            self.tracestore_handle = attempt.handle  # ``turn.attempt_of(stream)`` finds it
            attempt.watch(self)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            with self._attempt.reading():
                async for chunk in self._inner:
                    self._attempt.received(chunk)
                    yield chunk

        async def aclose(self) -> None:
            self._attempt.closed_early()
            await self._inner.aclose()

    def wrap(response: Any, body: Any, request: Any) -> Any:
        return http.Response(response.status_code, headers=response.headers, stream=body,
                             extensions=response.extensions, request=request)

    class Sync(http.BaseTransport, BodyRecording):
        """Records streaming response bodies into ``trace`` (see the module docstring)."""

        def __init__(self, trace: Any, inner: Any = None, background: bool = True,
                     writer: str = "auto") -> None:
            BodyRecording.__init__(self, trace, (http.NetworkError, http.RemoteProtocolError),
                                background)
            _choose_writer(self, writer)
            self.inner = inner or http.HTTPTransport()

        def handle_request(self, request: Any) -> Any:
            response = self.inner.handle_request(request)
            if not _is_streaming(request, response):
                return response
            return wrap(response, SyncBody(response.stream, attempt_for(self, request, response)),
                        request)

        def close(self) -> None:
            self.stop_writer()
            self.inner.close()

    class Async(http.AsyncBaseTransport, BodyRecording):
        """The asyncio twin (``AsyncOpenAI``, ``AsyncAnthropic`` …)."""

        def __init__(self, trace: Any, inner: Any = None, background: bool = True,
                     writer: str = "auto") -> None:
            BodyRecording.__init__(self, trace, (http.NetworkError, http.RemoteProtocolError),
                                background)
            _choose_writer(self, writer)
            self.inner = inner or http.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            if not _is_streaming(request, response):
                return response
            return wrap(response, AsyncBody(response.stream, attempt_for(self, request, response)),
                        request)

        async def aclose(self) -> None:
            self.stop_writer()
            await self.inner.aclose()

    _CLASSES[http.__name__] = (Sync, Async)
    return Sync, Async


def default_writer() -> str:
    """The writer ``writer="auto"`` stands for: ``$TRACESTORE_WRITER`` when it is set
    (``thread``, ``process`` or ``auto``), else ``auto``."""
    from tracestore.errors import InputError

    value = os.environ.get(WRITER_ENV, "").strip().lower()
    if not value:
        return "auto"
    if value not in WRITERS:
        raise InputError(f"${WRITER_ENV}={os.environ[WRITER_ENV]!r} is not a writer; "
                         f"expected {', '.join(WRITERS[:-1])} or {WRITERS[-1]}",
                         code="invalid_input", variable=WRITER_ENV)
    return value


def resolve_writer(owner: BodyRecording, writer: str) -> str:
    """The writer ``owner`` records with: ``thread`` or ``process`` as given, or for
    ``auto`` (after ``$TRACESTORE_WRITER``) the process writer when the transport records
    in the background, the process writer can start here (``process.can_start``) and its
    trace's store is one another process can open (a SQLite file, PostgreSQL), else the
    thread.  ``unsettled``: no trace is known yet (turn scopes, a trace factory), so the
    first response's store decides (``BodyRecording._settle``)."""
    from tracestore.errors import InputError

    if writer not in WRITERS:
        raise InputError(f"unknown writer {writer!r}; expected "
                         f"{', '.join(WRITERS[:-1])} or {WRITERS[-1]}", code="invalid_input")
    if writer == "auto":
        writer = default_writer()
    if writer != "auto":
        return writer
    from tracestore.recording import process

    if not owner.background or not process.can_start():
        return "thread"
    trace = owner.trace
    if trace is None or callable(trace):
        return "unsettled"
    return "process" if process.shareable(trace.recorder.store.url) else "thread"


def _choose_writer(owner: BodyRecording, writer: str) -> None:
    """Set up the writer ``resolve_writer`` chooses; checked here, when the application
    builds its client, never in a stream."""
    from tracestore.errors import InputError

    chosen = resolve_writer(owner, writer)
    if chosen == "unsettled":
        owner.unsettled = True
        return
    if chosen == "thread":
        return
    given = "writer='process'" if writer == "process" else f"${WRITER_ENV}=process"
    if not owner.background:
        raise InputError(f"{given} records in the background; it cannot be "
                         "combined with background=False", code="invalid_input")
    from tracestore.recording.process import ProcessWriter, shareable, unavailable

    trace = owner.trace
    if trace is not None and not callable(trace) and not shareable(trace.recorder.store.url):
        raise unavailable()
    owner.process = ProcessWriter(owner)


def RecordingTransport(trace: Any = None, inner: Any = None, *, http: Any = None,  # noqa: N802
                       background: bool = True, writer: str = "auto") -> Any:
    """A sync transport recording streaming bodies into ``trace`` (a ``TraceRecorder``, or
    a no-argument callable returning the trace for each new streamed response), or, with
    no trace, into the trace of the turn scope each response is streamed in
    (``with rec.turn(...)``; ``turn.attempt_of(stream)`` is a response's attempt).

    ``http`` is the module the client is built on (``httpx2`` by default when installed,
    else ``httpx``); ``inner`` the transport that really sends (default: the module's own).
    ``background=True`` (default) records off the application's thread, in the order the
    chunks reached the application, so the application never waits for the store; call
    ``transport.flush()`` before reading the log.  ``background=False`` records in the
    application's thread, each chunk when the next one is read.

    ``writer`` says what records in the background.  ``"process"``: a child process
    (``process.py``): the application's process only appends each chunk to a journal file,
    and the child (niced, started on first use) decodes and writes to the same store, so
    recording costs the application's interpreter almost nothing — for a server streaming
    many responses at once through one client.  It needs a store another process can open
    (a SQLite file or PostgreSQL); ``transport.attempts`` hold ``process.RemoteAttempt``
    handles whose ``decision()`` flushes, then reads the store.  ``"thread"``: one writer
    thread in the application's process.  ``"auto"`` (default): the process writer when
    the store is a SQLite file or PostgreSQL (for turn scopes and trace factories, the
    store of the first response) and this platform can start it, else the thread;
    ``$TRACESTORE_WRITER`` (``thread``, ``process``, ``auto``) chooses instead.
    """
    return _classes(http or _default_http())[0](trace, inner, background, writer)


def AsyncRecordingTransport(trace: Any = None, inner: Any = None, *, http: Any = None,  # noqa: N802
                            background: bool = True, writer: str = "auto") -> Any:
    """The asyncio twin of :func:`RecordingTransport`."""
    return _classes(http or _default_http())[1](trace, inner, background, writer)


__all__ = ["WRITERS", "WRITER_ENV", "AsyncRecordingTransport", "RecordingTransport",
           "api_for_path", "default_writer", "raw_header", "resolve_writer",
           "request_settings"]
