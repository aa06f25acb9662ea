"""Turn scopes and per-response handles for the SDK capture wrappers.

    with rec.turn("turn-42", task=rule) as turn:         # every streamed SDK call inside
        stream = client.chat.completions.create(..., stream=True)   # is an attempt of it
        handle = attempt_of(stream)                       # this response's attempt, now
        text = "".join(...)                               # the app's own loop
        handle.destination("history", text)               # ordered after its own bytes
    with turn.retry():                                    # a regenerate: retry of the last
        ...

A turn is held in a ``contextvars.ContextVar``: an asyncio task sees the turn of the
context it was created in, a thread only the turns it entered itself (or a context it was
given with ``contextvars.copy_context().run``).  The attempt a streamed response belongs
to is fixed when its headers arrive, in the application's own context, before the first
byte reaches application code: its id, its trace and what it retries are known then, and
``AttemptHandle`` calls go through the transport's writer queue, after every byte of that
response the application had received — never routed by a "current attempt".
"""

from __future__ import annotations

import contextvars
import uuid
from typing import Any

from tracestore.errors import RecordingScopeError

_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("tracestore_turn",
                                                                    default=None)


def current_turn() -> Turn | None:
    """The turn scope of the calling context, if any."""
    return _TURN.get()


class Turn:
    """One user question being answered: the SDK calls inside ``with`` are its attempts."""

    def __init__(self, recorder: Any, trace_id: str, options: dict[str, Any]) -> None:
        self.recorder, self.trace_id, self._options = recorder, trace_id, options
        self.trace: Any = None
        "The ``TraceRecorder``, opened when the turn is first entered (nothing before)."
        self.attempts: list[AttemptHandle] = []
        "Handles of the responses streamed in this turn, in the order their headers came."
        self._tokens: list[contextvars.Token[Turn | None]] = []

    def __enter__(self) -> Turn:
        active = _TURN.get()
        if active is not None and active is not self:
            raise RecordingScopeError(
                f"turn {self.trace_id!r} opened inside turn {active.trace_id!r}: the SDK calls "
                "inside would belong to two traces; close the outer turn first",
                code="ambiguous_turn", trace_id=self.trace_id, outer=active.trace_id)
        if self.trace is None:
            self.trace = self.recorder.trace(self.trace_id, **self._options)
        self._tokens.append(_TURN.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _TURN.reset(self._tokens.pop())

    def retry(self) -> Turn:
        """A regenerate: the next response streamed in this turn retries the last one
        (every later response of a turn does; ``retry()`` says so where it is read)."""
        return self

    @property
    def last(self) -> AttemptHandle | None:
        return self.attempts[-1] if self.attempts else None

    def previous_id(self) -> str | None:
        return self.attempts[-1].attempt_id if self.attempts else None

    def destination(self, handle: AttemptHandle, destination: str, text: str, *,
                    cut_off: bool = False) -> None:
        """``handle.destination`` checked to be an attempt of this turn's recorder."""
        check_recorder(handle, self.recorder)
        handle.destination(destination, text, cut_off=cut_off)


def check_recorder(handle: Any, recorder: Any) -> None:
    if not isinstance(handle, AttemptHandle) or handle.recorder is not recorder \
            or handle.recorder.store is not recorder.store:
        raise RecordingScopeError(
            f"attempt {getattr(handle, 'attempt_id', handle)!r} is not recorded by this "
            "recorder and store; write its destinations through its own handle",
            code="foreign_attempt")


class AttemptHandle:
    """The attempt of one streamed response, known before its first byte is read."""

    def __init__(self, body: Any, trace: Any, turn: Turn | None) -> None:
        """``trace`` is a ``TraceRecorder`` or a factory of one, called once when the trace
        is first needed (by the writer, so a new trace is never opened in the app's thread)."""
        self._body, self._trace, self.turn = body, trace, turn
        self.attempt_id = f"att-{uuid.uuid4().hex[:16]}"

    @property
    def trace(self) -> Any:
        if callable(self._trace):
            self._trace = self._trace()
        return self._trace

    @property
    def trace_id(self) -> str:
        return self.trace.trace_id

    @property
    def recorder(self) -> Any:
        return self.trace.recorder

    def destination(self, destination: str, text: str, *, cut_off: bool = False) -> None:
        """Record what the application wrote for this response, after every byte of it the
        application had received (the writer's order); bad input raises now.
        ``cut_off=True``: the UI showed this partial text marked as cut off after a Stop."""
        self._check(destination, text, cut_off=cut_off)
        self._body.later_record("destination", destination, text, cut_off=cut_off)

    def readback(self, destination: str, text: str) -> None:
        self._check(destination, text)
        self._body.later_record("readback", destination, text)

    def decision(self) -> Any:
        """The release decision once everything received is recorded."""
        if self._body.owner.process is None or self._body.recorder is None:
            self._body.owner.flush()  # (a process writer's ``RemoteAttempt`` flushes itself)
        if self._body.recorder is None:
            raise RecordingScopeError(f"attempt {self.attempt_id!r} was not recorded (see "
                                      "the transport's failures)", code="not_recorded")
        return self._body.recorder.decision()

    def _check(self, destination: str, text: str, *, cut_off: bool = False) -> None:
        """Bad input and a closed recorder raise now, in the application's thread, before
        anything is queued (a trace still to come from a factory is checked by the writer:
        opening it here would cost the application a commit)."""
        from tracestore.ingest.evidence import destination_event

        check_open = getattr(getattr(self._trace, "recorder", None), "check_open", None)
        if not callable(self._trace) and check_open is not None:
            check_open()
        destination_event(self.attempt_id, destination, text, readback=False, cut_off=cut_off)

    def __repr__(self) -> str:
        return f"AttemptHandle({self.attempt_id!r}, trace={self.trace_id!r})"


def attempt_of(obj: Any) -> AttemptHandle:
    """The attempt of a streamed SDK response: an openai/anthropic ``Stream`` or
    ``AsyncStream``, a ``with ….stream(...)`` helper's stream, an httpx response, a boto3
    ``converse_stream`` response dict or its ``EventStream``."""
    seen: set[int] = set()
    todo = [obj]
    while todo:
        item = todo.pop(0)
        if item is None or id(item) in seen or len(seen) > 32:
            continue
        seen.add(id(item))
        handle = getattr(item, "tracestore_handle", None)
        if isinstance(handle, AttemptHandle):
            return handle
        if isinstance(item, dict):
            todo.append(item.get("stream"))
            continue
        for name in ("stream", "_raw_stream", "response", "_response", "http_response",
                     "_stream", "_raw_response", "_MessageStream__stream"):
            try:
                todo.append(getattr(item, name, None))
            except Exception:  # noqa: BLE001 - a property of a foreign object may raise
                continue
    raise RecordingScopeError(f"{type(obj).__name__} is not a response a recording "
                              "transport produced", code="not_recorded")


__all__ = ["AttemptHandle", "Turn", "attempt_of", "current_turn"]
