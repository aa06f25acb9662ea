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
import queue
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from tracestore.errors import TracestoreError

#: Recorder operations (chunks) that may wait for the writer thread before a new chunk
#: blocks the application: bounds memory at QUEUE_ITEMS chunks when the store is slow.
QUEUE_ITEMS = 1024

#: Request fields that are prompts or payloads, not settings: never copied into the log.
_CONTENT_FIELDS = frozenset({"messages", "input", "contents", "system", "tools", "prompt",
                             "instructions", "tool_config", "toolConfig", "system_instruction",
                             "systemInstruction", "metadata"})

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


def request_settings(request: Any) -> dict[str, Any]:
    """Model and parameters of a request, never its prompt, headers or query (keys)."""
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
    return settings


def _is_streaming(request: Any, response: Any) -> bool:
    ctype = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype in _STREAM_TYPES:
        return True
    return ":streamGenerateContent" in request.url.path


def _framing(response: Any) -> str | None:
    ctype = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return _STREAM_TYPES.get(ctype)


def attempt_for(owner: _Recording, request: Any, response: Any) -> _Attempt:
    return owner.track(_Attempt(owner, api_for_path(request.url.path), _framing(response),
                                request_settings(request)))


class _Attempt:
    """One recorded body: the recorder calls, each guarded so failures never reach the app.

    All attempts of one transport share its lock: before an attempt is opened, the bytes
    other attempts already handed to the application are recorded, so a retry's start comes
    after everything the app had received from the old attempt (the T8 order, as lived).
    """

    def __init__(self, owner: _Recording, api: str, framing: str | None,
                 settings: dict[str, Any]) -> None:
        self.owner, self.api, self.framing, self.settings = owner, api, framing, settings
        self.recorder: Any = None
        self.pending: bytes | None = None
        self.closing = False
        self.finished = False
        self.dead = False

    def _guard(self, action: Callable[[], Any]) -> None:
        if self.dead:
            return
        try:
            action()
        except TracestoreError as exc:  # recording failed: the app's stream goes on
            self.dead = True
            self.owner.failed(exc)

    def _open(self) -> None:
        if self.recorder is None:
            self.owner.flush_others(self)
            trace = self.owner.trace_for_attempt()
            self.recorder = trace.attempt(api=self.api, framing=self.framing,
                                          retry_of=self.owner.previous(trace),
                                          request=self.settings)
            self.owner.opened(trace, self.recorder)

    def received(self, chunk: bytes) -> None:
        """The app got ``chunk``.  In the background, it is queued for the writer now; in
        the foreground, the one before it is recorded now (after the app had it)."""
        chunk = bytes(chunk)
        if self.owner.background:
            self.owner.submit(lambda: self._guard(lambda: (self._open(),
                                                           self.recorder.feed(chunk))))
            return
        with self.owner.lock:
            previous, self.pending = self.pending, chunk
            if previous:
                self._guard(lambda: (self._open(), self.recorder.feed(previous)))

    def flush(self) -> None:
        """Record what the app already holds (called under the transport's lock)."""
        if self.pending and not self.finished:
            pending, self.pending = self.pending, None
            self._guard(lambda: (self._open(), self.recorder.feed(pending)))

    def _finish(self) -> bool:
        if self.finished:
            return False
        self.flush()
        self._guard(self._open)
        self.finished = True
        self.owner.live.discard(self)
        return True

    def _end(self, *actions: Callable[[], Any]) -> None:
        """Finish once (the first ending wins), then run the recorder ``actions``."""
        with self.owner.lock:
            if self.closing:
                return
            self.closing = True

        def finish() -> None:
            if self._finish():
                for action in actions:
                    self._guard(action)

        self.owner.submit(finish)

    def ended(self) -> None:
        self._end(lambda: self.recorder.drain())

    def broke(self, exc: BaseException) -> None:
        detail = f"{type(exc).__name__}: {exc}"[:500]
        outcome = "reset" if isinstance(exc, self.owner.broken) else "error"
        self._end(lambda: self.recorder.drain(outcome, detail))

    def closed_early(self) -> None:
        self._end(lambda: self.recorder.stop(by="application"),
                  lambda: self.recorder.drain(
                      "eof", "closed by the application before the body ended"))


class _Recording:
    """What both transports share: the trace, the attempts opened, the failures seen."""

    def __init__(self, trace: Any, broken: tuple[type[BaseException], ...],
                 background: bool = True) -> None:
        self.trace = trace
        self.background = background
        "Record in a writer thread (the app never waits for the store) or in the app's own."
        self._queue: queue.Queue[Callable[[], Any] | None] = queue.Queue(QUEUE_ITEMS)
        self._writer: threading.Thread | None = None
        self.broken = (ConnectionError, *broken)
        "Exceptions that mean the connection broke (drain ``reset``); others are ``error``."
        self.attempts: list[Any] = []
        "The ``AttemptRecorder`` of every recorded response, in the order they were opened."
        self.failures: list[TracestoreError] = []
        self.live: set[_Attempt] = set()
        self.lock = threading.RLock()
        self._last: dict[str, str] = {}

    def submit(self, work: Callable[[], Any]) -> None:
        """Run recorder ``work`` in order: queued for the writer thread, or right here."""
        if not self.background:
            with self.lock:
                work()
            return
        with self.lock:
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                                name="tracestore-recorder")
                self._writer.start()
        self._queue.put(work)  # blocks only when QUEUE_ITEMS chunks wait (bounded memory)

    def _write_loop(self) -> None:
        while True:
            work = self._queue.get()
            try:
                if work is None:
                    return
                with self.lock:
                    work()
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the writer silently
                warnings.warn(f"tracestore: recorder writer error {exc!r}", RuntimeWarning)
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        """Wait until everything the application received so far is recorded."""
        if self.background:
            self._queue.join()

    def stop_writer(self) -> None:
        self.flush()
        if self._writer is not None and self._writer.is_alive():
            self._queue.put(None)
            self._writer.join(30)

    def trace_for_attempt(self) -> Any:
        """The trace a new attempt joins: the one given, or a fresh one from the factory."""
        return self.trace() if callable(self.trace) else self.trace

    def track(self, attempt: _Attempt) -> _Attempt:
        with self.lock:
            self.live.add(attempt)
        return attempt

    def flush_others(self, me: _Attempt) -> None:
        for other in list(self.live):
            if other is not me:
                other.flush()

    def previous(self, trace: Any) -> str | None:
        return self._last.get(trace.trace_id)

    def opened(self, trace: Any, attempt: Any) -> None:
        self._last[trace.trace_id] = attempt.attempt_id
        self.attempts.append(attempt)

    def failed(self, exc: TracestoreError) -> None:
        self.failures.append(exc)
        warnings.warn(f"tracestore: recording stopped for this attempt ({exc}); the "
                      "application's stream is unaffected", RuntimeWarning, stacklevel=3)


def _default_http() -> Any:
    try:
        import httpx2 as http
    except ModuleNotFoundError:
        import httpx as http
    return http


_CLASSES: dict[str, tuple[type, type]] = {}


def _classes(http: Any) -> tuple[type, type]:
    """The sync and async transport classes for one httpx-like module (made once)."""
    if http.__name__ in _CLASSES:
        return _CLASSES[http.__name__]

    class SyncBody(http.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, attempt: _Attempt) -> None:
            self._inner, self._attempt = inner, attempt

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._attempt.received(chunk)
                    yield chunk
            except GeneratorExit:
                raise
            except BaseException as exc:
                self._attempt.broke(exc)
                raise
            self._attempt.ended()

        def close(self) -> None:
            self._attempt.closed_early()
            self._inner.close()

    class AsyncBody(http.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, attempt: _Attempt) -> None:
            self._inner, self._attempt = inner, attempt

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self._attempt.received(chunk)
                    yield chunk
            except GeneratorExit:
                raise
            except BaseException as exc:
                self._attempt.broke(exc)
                raise
            self._attempt.ended()

        async def aclose(self) -> None:
            self._attempt.closed_early()
            await self._inner.aclose()

    def wrap(response: Any, body: Any, request: Any) -> Any:
        return http.Response(response.status_code, headers=response.headers, stream=body,
                             extensions=response.extensions, request=request)

    class Sync(http.BaseTransport, _Recording):  # type: ignore[misc,name-defined]
        """Records streaming response bodies into ``trace`` (see the module docstring)."""

        def __init__(self, trace: Any, inner: Any = None, background: bool = True) -> None:
            _Recording.__init__(self, trace, (http.NetworkError, http.RemoteProtocolError),
                                background)
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

    class Async(http.AsyncBaseTransport, _Recording):  # type: ignore[misc,name-defined]
        """The asyncio twin (``AsyncOpenAI``, ``AsyncAnthropic`` …)."""

        def __init__(self, trace: Any, inner: Any = None, background: bool = True) -> None:
            _Recording.__init__(self, trace, (http.NetworkError, http.RemoteProtocolError),
                                background)
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


def RecordingTransport(trace: Any, inner: Any = None, *, http: Any = None,  # noqa: N802
                       background: bool = True) -> Any:
    """A sync transport recording streaming bodies into ``trace`` (a ``TraceRecorder``, or
    a no-argument callable returning the trace for each new streamed response).

    ``http`` is the module the client is built on (``httpx2`` by default when installed,
    else ``httpx``); ``inner`` the transport that really sends (default: the module's own).
    ``background=True`` (default) records in one writer thread, in the order the chunks
    reached the application, so the application never waits for the store; call
    ``transport.flush()`` before reading the log.  ``background=False`` records in the
    application's thread, each chunk when the next one is read.
    """
    return _classes(http or _default_http())[0](trace, inner, background)


def AsyncRecordingTransport(trace: Any, inner: Any = None, *, http: Any = None,  # noqa: N802
                            background: bool = True) -> Any:
    """The asyncio twin of :func:`RecordingTransport`."""
    return _classes(http or _default_http())[1](trace, inner, background)


__all__ = ["AsyncRecordingTransport", "RecordingTransport", "api_for_path", "request_settings"]
