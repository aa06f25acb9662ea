"""An application's own realtime WebSocket session, recorded as it runs, with no proxy.

``record_realtime(conn, recorder, trace=…)`` takes the ``openai`` SDK's realtime connection
(``client.realtime.connect(…)``, sync or async; the connection manager or the connection it
opened) and notes every message the application sends and receives on its socket, with its
direction and arrival time, exactly as the proxy's WebSocket leg does (both note into a
``SessionRecord``, ``tracestore.recording.session_record``).  The hook sits on the socket
itself, under the SDK, so the SDK's typed helpers (``conn.response.cancel()``), raw
``send``/``recv``/``recv_bytes``, iteration and the manager's queued messages are all seen,
byte for byte, and the SDK behaves as it does unrecorded.

The session is recorded -- redacted, one trace, one attempt per response, a client
``response.cancel`` a Stop -- once, at the first of: the socket closing (the application's
``close``, or the server's close seen by a read), the ``with`` block ending, ``close()`` on
the recording, or the interpreter exiting (``tracestore.recording.shutdown``).  An async
connection records in a worker thread, so the event loop never waits for the database.  A
recording that fails is logged and kept on ``failures``; it never raises into the
application.

When the SDK reconnects (``on_reconnecting``), each socket is a session of its own in the
same trace: the first connection's turn in flight stays cut, and the second connection's
turns continue the trace's numbering (``tracestore.ingest.session``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import uuid
from typing import Any

from tracestore.errors import StoreError, TracestoreError
from tracestore.recording.session_record import MAX_SESSION_BYTES, SessionRecord, write_record

log = logging.getLogger("tracestore.recording")

#: The origin of a session's trace: its messages are the socket's own, as a captured
#: session's are.
ORIGIN = "capture"


class RealtimeRecording:
    """One application connection's recording (``record_realtime``).

    ``sessions`` holds each recorded socket's ``RunsIngested``, ``failures`` each failure;
    ``trace_id`` is the trace they are recorded in."""

    def __init__(self, target: Any, recorder: Any, *, trace_id: str,
                 attempt_prefix: str | None, task: Any, max_bytes: int) -> None:
        from tracestore.recording.checks import as_task_rule

        self.target, self.recorder = target, recorder
        self.trace_id, self.attempt_prefix = trace_id, attempt_prefix
        self.task = as_task_rule(task)
        self.max_bytes = max_bytes
        self.sessions: list[Any] = []
        self.failures: list[TracestoreError] = []
        self._open: list[SessionRecord] = []
        self._lock = threading.Lock()
        self._entered: Any = None
        from tracestore.recording.shutdown import watch_session

        watch_session(self)

    # -- hooking ---------------------------------------------------------------------------
    def hook_manager(self, manager: Any) -> None:
        """Every socket the manager opens (the first, and each reconnect) is recorded."""
        connect = manager._connect_ws
        if inspect.iscoroutinefunction(connect):
            @functools.wraps(connect)
            async def aconnect(*args: Any, **kwargs: Any) -> Any:
                return self.hook_socket(await connect(*args, **kwargs))
            manager._connect_ws = aconnect
        else:
            @functools.wraps(connect)
            def sconnect(*args: Any, **kwargs: Any) -> Any:
                return self.hook_socket(connect(*args, **kwargs))
            manager._connect_ws = sconnect

    def hook_connection(self, connection: Any) -> None:
        """The connection's socket now, and a reconnect's socket when there is one."""
        self.hook_socket(connection._connection)
        make_ws = getattr(connection, "_make_ws", None)
        if make_ws is None:
            return
        if inspect.iscoroutinefunction(make_ws):
            async def amake(*args: Any, **kwargs: Any) -> Any:
                return self.hook_socket(await make_ws(*args, **kwargs))
            connection._make_ws = amake
        else:
            def smake(*args: Any, **kwargs: Any) -> Any:
                return self.hook_socket(make_ws(*args, **kwargs))
            connection._make_ws = smake

    def hook_socket(self, ws: Any) -> Any:
        """Note what crosses the ``websockets`` connection ``ws`` (sync or asyncio)."""
        if getattr(ws, "_tracestore_record", None) is not None:
            return ws
        request = getattr(ws, "request", None)
        record = SessionRecord(self.trace_id, self.attempt_prefix,
                               getattr(request, "path", "") or "", max_bytes=self.max_bytes)
        ws._tracestore_record = record
        with self._lock:
            self._open.append(record)
        send, recv, close = ws.send, ws.recv, ws.close
        from websockets.exceptions import ConnectionClosed

        if inspect.iscoroutinefunction(recv):
            async def asend(message: Any, *args: Any, **kwargs: Any) -> Any:
                _note(record, "client", message)  # sent now: before any answer to it
                try:
                    return await send(message, *args, **kwargs)
                except ConnectionClosed as exc:
                    await self._aclosed(record, "server", exc)
                    raise

            async def arecv(*args: Any, **kwargs: Any) -> Any:
                try:
                    message = await recv(*args, **kwargs)
                except ConnectionClosed as exc:
                    await self._aclosed(record, "server", exc)
                    raise
                _note(record, "server", message)
                return message

            async def aclose(code: int = 1000, reason: str = "") -> Any:
                record.closed("client", code, reason)
                try:
                    return await close(code, reason)
                finally:
                    await asyncio.to_thread(self._finish, record)

            ws.send, ws.recv, ws.close = asend, arecv, aclose
        else:
            def ssend(message: Any, *args: Any, **kwargs: Any) -> Any:
                _note(record, "client", message)  # sent now: before any answer to it
                try:
                    return send(message, *args, **kwargs)
                except ConnectionClosed as exc:
                    self._closed(record, "server", exc)
                    raise

            def srecv(*args: Any, **kwargs: Any) -> Any:
                try:
                    message = recv(*args, **kwargs)
                except ConnectionClosed as exc:
                    self._closed(record, "server", exc)
                    raise
                _note(record, "server", message)
                return message

            def sclose(code: int = 1000, reason: str = "") -> Any:
                record.closed("client", code, reason)
                try:
                    return close(code, reason)
                finally:
                    self._finish(record)

            ws.send, ws.recv, ws.close = ssend, srecv, sclose
        return ws

    # -- ending ----------------------------------------------------------------------------
    def _closed(self, record: SessionRecord, direction: str, exc: Any) -> None:
        _close_of(record, direction, exc)
        self._finish(record)

    async def _aclosed(self, record: SessionRecord, direction: str, exc: Any) -> None:
        _close_of(record, direction, exc)
        await asyncio.to_thread(self._finish, record)

    def _finish(self, record: SessionRecord) -> None:
        """Record ``record`` once (later calls find it gone)."""
        with self._lock:
            if record not in self._open:
                return
            self._open.remove(record)
        try:
            self.sessions.append(write_record(self.recorder, record, task=self.task,
                                              origin=ORIGIN))
        except Exception as exc:  # noqa: BLE001 - the application's session goes on
            failure = exc if isinstance(exc, TracestoreError) else StoreError(
                f"recording failed: {type(exc).__name__}: {exc}", code="recording_failed")
            self.failures.append(failure)
            log.warning("the realtime session of trace %s (%d messages) was not recorded "
                        "(%s: %s); the application's connection was unaffected",
                        record.trace_id, len(record.messages), failure.code, failure.message)

    def finish(self) -> None:
        """Record every socket not recorded yet, as far as it got (idempotent)."""
        with self._lock:
            pending = list(self._open)
        for record in pending:
            self._finish(record)

    close = finish

    # -- context managers ------------------------------------------------------------------
    def __enter__(self) -> Any:
        if _is_manager(self.target):
            self._entered = self.target.__enter__()
            return self._entered
        return self.target

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._entered is not None:
                self.target.__exit__(*exc)
        finally:
            self.finish()

    async def __aenter__(self) -> Any:
        if _is_manager(self.target):
            self._entered = await self.target.__aenter__()
            return self._entered
        return self.target

    async def __aexit__(self, *exc: Any) -> None:
        try:
            if self._entered is not None:
                await self.target.__aexit__(*exc)
        finally:
            await asyncio.to_thread(self.finish)


def record_realtime(connection: Any, recorder: Any, *, trace: str | None = None,
                    attempt: str | None = None, task: Any = None,
                    max_bytes: int = MAX_SESSION_BYTES) -> RealtimeRecording:
    """Record an ``openai`` realtime connection's session into ``recorder`` (module
    docstring).  ``connection`` is what ``client.realtime.connect(…)`` returned (use the
    recording as its ``with`` / ``async with``) or the connection it opened; ``trace`` names
    the trace (``rt-…`` when not given), ``attempt`` the attempts' prefix (the trace id when
    not given), ``task`` its task rule."""
    recorder.check_open()
    recording = RealtimeRecording(connection, recorder,
                                  trace_id=trace or f"rt-{uuid.uuid4().hex[:16]}",
                                  attempt_prefix=attempt, task=task, max_bytes=max_bytes)
    if _is_manager(connection):
        recording.hook_manager(connection)
    elif getattr(connection, "_connection", None) is not None:
        recording.hook_connection(connection)
    else:
        raise TypeError("record_realtime takes the openai SDK's realtime connection (what "
                        "client.realtime.connect(...) returns, or the connection it opened)")
    return recording


def _is_manager(target: Any) -> bool:
    return callable(getattr(target, "_connect_ws", None))


def _note(record: SessionRecord, direction: str, message: Any) -> None:
    if isinstance(message, (str, bytes)):
        record.add(direction, message)
    elif isinstance(message, (bytearray, memoryview)):
        record.add(direction, bytes(message))


def _close_of(record: SessionRecord, direction: str, exc: Any) -> None:
    """The close a ``ConnectionClosed`` reports: the peer's frame, else 1006 (no close)."""
    rcvd = getattr(exc, "rcvd", None)
    sent = getattr(exc, "sent", None)
    if rcvd is None and sent is not None:  # we closed first and the peer never answered
        record.closed("client", sent.code, sent.reason)
    else:
        record.closed(direction, rcvd.code if rcvd is not None else 1006,
                      rcvd.reason if rcvd is not None else "")


__all__ = ["RealtimeRecording", "record_realtime"]
