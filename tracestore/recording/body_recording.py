"""What one transport (or one boto3 client) shares between the bodies it records
(``body.BodyAttempt``): the trace, the writer thread, the attempts opened, the failures.
Importable from ``tracestore.recording.body`` as before."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracestore.errors import RecordingScopeError, TracestoreError
from tracestore.recording.turn import AttemptHandle, current_turn
from tracestore.recording.writer import Writer

if TYPE_CHECKING:
    from tracestore.recording.body import BodyAttempt


class BodyRecording:
    """What both transports share: the trace, the attempts opened, the failures seen."""

    def __init__(self, trace: Any, broken: tuple[type[BaseException], ...],
                 background: bool = True) -> None:
        self.trace = trace
        self.background = background
        "Record in a writer thread (the app never waits for the store) or in the app's own."
        # ``state_lock`` guards the writer thread, ``live`` and each attempt's ``closing``
        # and is never held while the store works; ``lock`` is held around every recorder
        # call (commits).  In the background the application's thread takes only the first,
        # so it never waits for a commit.
        self.state_lock = threading.Lock()
        self.broken: tuple[type[BaseException], ...] = (ConnectionError, *broken)
        "Exceptions that mean the connection broke (drain ``reset``); others are ``error``."
        self.attempts: list[Any] = []
        "The ``AttemptRecorder`` of every recorded response, in the order they were opened."
        self.failures: list[TracestoreError] = []
        self.live: set[BodyAttempt] = set()
        self.lock = threading.RLock()
        self._last: dict[str, str] = {}
        self._later: list[threading.Thread] = []
        self._assigned: dict[str | None, str] = {}  # trace id → newest attempt id assigned
        self._opened: set[str] = set()
        self.process: Any = None
        "The process writer (``process.ProcessWriter``) when the transport records in one."
        self.unsettled = False
        """``writer="auto"`` with no trace given (turn scopes) or a trace factory: the
        writer is chosen by the store of the first response's trace (``_settle``)."""
        self.writer = Writer(self.lock, self.state_lock)
        self.writer.on_failure = self._batch_failed
        from tracestore.recording.shutdown import watch_transport

        watch_transport(self)

    def _batch_failed(self, recorder: Any, exc: Any) -> None:
        """The writer's batch could not record ``recorder``'s appends: as ``_guard`` does."""
        with self.state_lock:
            mine = [a for a in self.live if a.recorder is recorder]
        for attempt in mine:
            attempt.dead = True
        self.failed(exc)

    def later(self, work: Callable[[], Any]) -> None:
        """Run ``work`` in a fresh thread (from a finalizer: no lock may be taken there);
        ``flush`` waits for it."""
        thread = threading.Thread(target=work, daemon=True, name="tracestore-dropped")
        self._later.append(thread)
        thread.start()

    def submit(self, work: Callable[[], Any]) -> None:
        """Run recorder ``work`` in order: queued for the writer thread, or right here."""
        if not self.background:
            with self.lock:
                work()
            return
        self.writer.submit(work)

    def flush(self) -> None:
        """Wait until everything the application received so far is recorded."""
        while self._later:
            self._later.pop(0).join(30)
        if self.process is not None:
            self.process.flush()
        elif self.background:
            self.writer.flush()

    def stop_writer(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.writer.stop()

    def trace_for_attempt(self) -> Any:
        """The trace a new attempt joins: the one given, or a fresh one from the factory."""
        return self.trace() if callable(self.trace) else self.trace

    def assign(self, attempt: BodyAttempt) -> tuple[Any, str | None]:
        """The handle and the retried attempt of a new response, in the application's own
        context (its turn scope) when the response's headers arrive."""
        turn, problem = current_turn(), None
        given = self.trace
        if self.unsettled:
            given = self._settle(attempt, turn, given)
            if given is None and attempt.dead:
                return None, None
        if callable(given) and turn is None:  # a factory: its trace is opened by the writer
            return AttemptHandle(attempt, given, None), None
        if callable(given):
            given = given()
        if turn is not None:
            if given is not None and (given.trace_id != turn.trace_id
                                      or given.recorder is not turn.recorder):
                problem = RecordingScopeError(
                    f"a response streamed in turn {turn.trace_id!r} through a transport "
                    f"recording trace {given.trace_id!r}: not recorded (ambiguous)",
                    code="ambiguous_turn", trace_id=turn.trace_id)
            trace = turn.trace
        elif given is None:
            problem, trace = RecordingScopeError(
                "a response streamed outside any turn through a transport given no trace: "
                "not recorded (use `with rec.turn(...)`)", code="ambiguous_turn"), None
        else:
            trace = given
        handle = AttemptHandle(attempt, trace, turn) if trace is not None else None
        with self.state_lock:
            retry_of = turn.previous_id() if turn is not None else \
                self._assigned.get(trace.trace_id if trace is not None else None)
            if handle is not None:
                self._assigned[handle.trace_id] = handle.attempt_id
                if turn is not None:
                    turn.attempts.append(handle)
        if problem is not None:
            attempt.dead = True
            self.failed(problem)
        return handle, retry_of

    def _settle(self, attempt: BodyAttempt, turn: Any, given: Any) -> Any:
        """Choose the writer (``writer="auto"``) by the store this response is recorded
        into: the process writer when another process can open it, else the thread.  Returns
        the trace (or factory) to record the response into: a factory is called here, its
        trace only noted (``process.deferred``: no commit in the application's thread) and
        opened by whichever writer records it."""
        from tracestore.errors import StoreError
        from tracestore.recording import process

        if turn is not None:
            url = turn.recorder.store.url
        elif callable(given):
            try:
                given = process.deferred(given)
                url = given.recorder.store.url
            except Exception as exc:  # noqa: BLE001 - recording never breaks the stream
                attempt.dead = True
                self.failed(exc if isinstance(exc, TracestoreError) else StoreError(
                    f"the transport's trace factory raised {exc!r}; this response is not "
                    "recorded", code="recording_failed"))
                return None
        else:
            return given  # no trace to record into: refused below (``ambiguous_turn``)
        with self.state_lock:
            if self.unsettled:  # (the writer first: ``unsettled`` is read without the lock)
                if process.shareable(url):
                    self.process = process.ProcessWriter(self)
                self.unsettled = False
        opening = getattr(given, "opening", None)
        if turn is None and self.process is None and opening is not None:
            noted = given  # the thread opens the noted trace when it records the response
            return lambda: noted.recorder.trace(noted.trace_id, **opening)
        return given

    def was_opened(self, attempt_id: str | None) -> bool:
        return attempt_id is not None and attempt_id in self._opened

    def track(self, attempt: BodyAttempt) -> BodyAttempt:
        with self.state_lock:
            self.live.add(attempt)
        return attempt

    def flush_others(self, me: BodyAttempt) -> None:
        with self.state_lock:
            others = list(self.live)
        for other in others:
            if other is not me:
                other.flush()

    def previous(self, trace: Any) -> str | None:
        return self._last.get(trace.trace_id)

    def opened(self, trace: Any, attempt: Any) -> None:
        self._last[trace.trace_id] = attempt.attempt_id
        self._opened.add(attempt.attempt_id)
        self.attempts.append(attempt)

    def failed(self, exc: TracestoreError) -> None:
        self.failures.append(exc)
        warnings.warn(f"tracestore: recording stopped for this attempt ({exc}); the "
                      "application's stream is unaffected", RuntimeWarning, stacklevel=3)


__all__ = ["BodyRecording"]
