"""Recording a streamed response body as the application reads it: what every SDK
wrapper shares (``httpx_capture`` for httpx/httpx2 clients, ``bedrock_capture`` for boto3).

A wrapper hands each chunk to ``BodyAttempt.received`` as the application gets it and
reads its inner body inside ``BodyAttempt.reading()``, which records how the body ended;
``closed_early`` is the application closing it (its user's Stop).  ``BodyRecording`` is
what one transport (or one boto3 client) shares between its attempts (``body_recording``): the trace, the
writer thread, the failures.  The rules (when a chunk is recorded, what each ending
records, why a recording failure never reaches the application) are in the
``httpx_capture`` docstring and docs/recording.md.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tracestore.errors import TracestoreError

# The writer thread (queue, batching, pauses) is in ``writer``; its bounds are importable
# from here as before.
from tracestore.recording.writer import (  # noqa: F401 - bounds re-exported
    MAX_LAG_SECONDS, MERGE_BYTES, QUEUE_ITEMS, QUIET_SECONDS, Chunk, Writer,
)

# What the attempts of one transport share; importable from here as before.
from tracestore.recording.body_recording import BodyRecording


class BodyAttempt:
    """One recorded body: the recorder calls, each guarded so failures never reach the app.

    All attempts of one transport share its lock: before an attempt is opened, the bytes
    other attempts already handed to the application are recorded, so a retry's start comes
    after everything the app had received from the old attempt (the T8 order, as lived).
    """

    def __init__(self, owner: BodyRecording, api: str, framing: str | None,
                 settings: dict[str, Any] | Callable[[], dict[str, Any]],
                 expected_size: int | None | Callable[[], int | None] = None,
                 refusal: bool = False) -> None:
        self.owner, self.api, self.framing = owner, api, framing
        self.refusal = refusal
        "An error response (HTTP 4xx/5xx, not a stream) to a streamed request."
        self.settings = settings
        "The request settings, or how to read them: read by the writer when it opens the "
        "attempt, never in the application's thread before its first byte."
        self._expected_size = expected_size
        "The body's length when the response said it (content-length), or how to read it."
        self.received_bytes = 0
        self.recorder: Any = None
        self.pending: bytes | None = None
        self.closing = False
        self.finished = False
        self.dead = False
        self.key: int | None = None
        "This attempt's key in the process writer's journal (once opened there)."
        self.secret_fields: frozenset[str] | None = None
        "Its recorder's secret field names, once opened in the process writer's journal."
        self.wire: tuple[Any, Any] = (None, None)
        "The request and response headers, for the process writer's opening record."
        self.handle, self.retry_of = owner.assign(self)
        "This response's attempt (``turn.AttemptHandle``), fixed in the app's own context."

    @property
    def expected_size(self) -> int | None:
        """The body's length when the response said it (content-length), else None; read
        from the headers when first needed (by the writer, at the body's end)."""
        if callable(self._expected_size):
            self._expected_size = self._expected_size()
        return self._expected_size

    def _open_then(self, action: Callable[[Any], Any]) -> None:
        """Open the attempt (first call), then ``action(recorder)``."""
        self._open()
        action(self.recorder)

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
            trace = self.handle.trace
            retry_of = self.retry_of if self.owner.was_opened(self.retry_of) \
                else self.owner.previous(trace)
            if callable(self.settings):
                self.settings = self.settings()
            self.recorder = trace.attempt(self.handle.attempt_id, api=self.api,
                                          framing=self.framing, retry_of=retry_of,
                                          request=self.settings)
            self.owner.opened(trace, self.recorder)

    def later_call(self, action: Callable[[Any], Any]) -> None:
        """Run ``action(recorder)`` after every byte the application received so far is
        recorded, in the writer's order (the handle's destination writes)."""
        def work() -> None:
            self.flush()
            self._guard(lambda: self._open_then(action))

        self.owner.submit(work)

    def later_record(self, method: str, *args: Any, **kwargs: Any) -> None:
        """``recorder.<method>(*args, **kwargs)`` after every byte received so far is
        recorded (``later_call``); in the writer process when the transport has one."""
        if self.owner.process is not None:
            if self.owner.process.stopped:  # the transport closed: its child is gone
                self.owner.process.record_here(self, method, args, kwargs)
                return
            self._journal(("call", method, args, kwargs))
            return
        self.later_call(lambda rec: getattr(rec, method)(*args, **kwargs))

    # -- the process writer (``process.py``): the app's facts journaled, nothing decoded --
    def _journaled(self) -> int | None:
        """This attempt's key in the journal, opening it there first (None: not recorded)."""
        if self.key is None and not self.dead:
            self.key = self.owner.process.open(self)
            if self.key is None:
                self.dead = True
            else:
                self.owner.attempts.append(self.recorder)
        return None if self.dead else self.key

    def _open_in_app(self) -> bool:
        """Whether the attempt's recorder in the application is still open.  Once it is
        closed nothing more of the attempt is journaled (``recorder_closed`` on the
        transport's failures, once), as the writer thread records nothing more of it."""
        if not self.recorder.trace.recorder.closed:
            return True
        from tracestore.errors import AttemptClosedError

        self.dead = True
        self.owner.failed(AttemptClosedError("this recorder is closed; it records nothing "
                                             "more", code="recorder_closed"))
        return False

    def _journal(self, call: tuple[Any, ...]) -> None:
        key = self._journaled()
        if key is not None and self._open_in_app():
            self.owner.process.call(key, call)

    def _journal_end(self, call: tuple[Any, ...]) -> None:
        """The first ending wins, as ``_end``; journaled for the child to record."""
        with self.owner.state_lock:
            if self.closing:
                return
            self.closing = self.finished = True
            self.owner.live.discard(self)
        self._journal(call)

    def received(self, chunk: bytes) -> None:
        """The app got ``chunk``.  In the background, it is queued for the writer now; in
        the foreground, the one before it is recorded now (after the app had it)."""
        chunk = bytes(chunk)
        self.received_bytes += len(chunk)
        if self.owner.process is not None:
            key = self._journaled()
            if key is not None and self._open_in_app():
                self.owner.process.chunk(key, chunk)
            return
        if self.owner.background:
            self.owner.submit(Chunk(self, chunk))
            return
        with self.owner.lock:
            previous, self.pending = self.pending, chunk
            if previous:
                self._guard(lambda: self._open_then(lambda r: r.feed(previous)))

    def record(self, data: bytes) -> None:
        """Record ``data`` (bytes the application already had) now."""
        self._guard(lambda: self._open_then(lambda r: r.feed(data)))

    def flush(self) -> None:
        """Record what the app already holds (called under the transport's lock)."""
        if self.pending and not self.finished:
            pending, self.pending = self.pending, None
            self._guard(lambda: self._open_then(lambda r: r.feed(pending)))

    def _finish(self) -> bool:
        if self.finished:
            return False
        self.flush()
        self._guard(self._open)
        self.finished = True
        with self.owner.state_lock:
            self.owner.live.discard(self)
        return True

    def _end(self, *actions: Callable[[], Any]) -> None:
        """Finish once (the first ending wins), then run the recorder ``actions``."""
        with self.owner.state_lock:  # not ``lock``: the app's thread never waits for a commit
            if self.closing:
                return
            self.closing = True

        def finish() -> None:
            if self._finish():
                for action in actions:
                    self._guard(action)

        self.owner.submit(finish)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Wrap the loop over the inner body: its end is recorded as it happened — the
        body's last byte, or the exception (which then reaches the application unchanged).
        Closing the generator (the application stopped reading) is left to ``close``, and so
        is an asyncio task cancelled in a read: that is the application stopping, the way an
        async server stops a stream, not the body breaking."""
        try:
            yield
        except GeneratorExit:
            raise
        except BaseException as exc:
            if not _cancelled(exc):
                self.broke(exc)
            raise
        self.ended()

    def ended(self) -> None:
        if self.owner.process is not None:
            self._journal_end(("drain",))
            return
        self._end(lambda: self.recorder.drain())

    def broke(self, exc: BaseException) -> None:
        detail = f"{type(exc).__name__}: {exc}"[:500]
        outcome = "reset" if isinstance(exc, self.owner.broken) else "error"
        if self.owner.process is not None:
            from tracestore.text.redaction import redact_text

            self._journal_end(("drain", outcome, redact_text(detail, self._secret_fields())))
            return
        self._end(lambda: self.recorder.drain(outcome, detail))

    def _secret_fields(self) -> frozenset[str]:
        """The recorder's secret field names: known once the attempt is journaled, else
        its transport's trace's recorder's, else the defaults (``secret_fields()``)."""
        from tracestore.text.redaction import secret_fields

        if self.secret_fields is not None:
            return self.secret_fields
        recorder = getattr(getattr(self.owner, "trace", None), "recorder", None)
        return getattr(recorder, "secret_fields", None) or secret_fields()

    def closed_early(self) -> None:
        """The application closed the body before reading it to its end: after the native
        terminal that is the stream's end as the SDK ends it (a clean drain), before it the
        user's Stop at the last byte received."""
        self._closed_at(self.received_bytes, "closed by the application {}")

    def watch(self, body: object) -> None:
        """Record ``dropped`` when the application lets ``body`` go without closing it."""
        finalizer = weakref.finalize(body, self.dropped)
        finalizer.atexit = False  # a process exiting mid-stream leaves a pending prefix

    def dropped(self) -> None:
        """The body was garbage-collected unclosed.  The collector may run this in any
        thread, holding any lock: the ending is handed to a fresh thread, never waited for
        here (``flush`` waits for it)."""
        if self.closing:
            return
        size = self.received_bytes
        self.owner.later(lambda: self._closed_at(
            size, "the application dropped the response without closing it, {} "
                  "(garbage-collected)"))

    def _closed_at(self, size: int, how: str) -> None:
        """The body ended unread at byte ``size``.  After the native terminal: the drain the
        bytes show, noting ``how`` and the bytes left unread.  After the dialect's end marker
        (``[DONE]``) with no native terminal: the SDK ended the stream where the provider
        ended it, so no Stop either — the drain the bytes show (``eof``, naming the marker,
        as ``ingest`` of the same bytes says), with the same note.  Before both: a Stop and
        drain ``eof``."""
        if self.refusal and size == 0:
            self._abandon()
            return
        if self.owner.process is not None:
            self._journal_end(("closed_at", size, how))
            return

        def unread() -> str:
            expected = self.expected_size
            if expected is not None:
                return f"{max(expected - size, 0)} body bytes unread"
            return "body bytes unread not known (chunked body: at least its last chunk)"

        def stop() -> None:
            if self._ending() is None and not self.refusal:  # an error body is no answer
                self.recorder.stop(by="application")

        def drain() -> None:
            ending = self._ending()
            if ending is not None:
                self.recorder.drain(note=f"{how.format(ending)}; {unread()}")
            elif self.refusal:
                self.recorder.drain("eof", how.format("before the end of the error body"))
            else:
                self.recorder.drain("eof", how.format("before the native terminal"))

        self._end(stop, drain)

    def _abandon(self) -> None:
        """An error response closed before a byte of it was read (an SDK retrying a 429 or
        a 5xx closes it unread, then sends the request again): nothing of it reached the
        application and there is no evidence to keep — nothing is recorded, as ``ingest``
        refuses an empty input.  The response leaves its turn's attempts."""
        with self.owner.state_lock:
            if self.closing:
                return
            self.closing = self.finished = True
            self.owner.live.discard(self)
            turn = getattr(self.handle, "turn", None)
            if turn is not None and self.handle in turn.attempts:
                turn.attempts.remove(self.handle)

    def _ending(self) -> str | None:
        """How the bytes recorded so far end the stream as its dialect ends it: "after the
        native terminal" (or native error frame), "after the dialect's end marker [DONE]",
        or None (the stream was cut short)."""
        capture = getattr(self.recorder, "capture", None)
        if getattr(capture, "ended_natively", False):
            return "after the native terminal"
        if getattr(capture, "end_marker", None) is not None:
            return "after the dialect's end marker [DONE]"
        return None

def _cancelled(exc: BaseException) -> bool:
    """An asyncio cancellation (asyncio is only looked up, never imported: a process that
    never imported it cannot be cancelled by it)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


__all__ = ["QUEUE_ITEMS", "BodyAttempt", "BodyRecording"]
