"""A recorded realtime WebSocket session into events (pure: bytes in, plan out).

The capture format is JSON Lines, one WebSocket message a line::

    {"dir": "server" | "client", "t": <arrival time or null>, "data": <the message>}

and a closed socket as ``{"dir": "server", "t": …, "kind": "close", "data": {"code",
"reason", "ok"}}``.  It is recognised by shape: every line an object with ``dir`` and
``data``.

A session is one trace; each response (OpenAI Realtime, by its response id) or turn (Gemini
Live, by its index) is one attempt of it.  An attempt holds the server messages from the
end of the previous response through its own terminal, so the session's set-up and the
conversation items a response answers are read with it; messages after the last terminal
that start no response are kept on the last attempt, after its decision.  The whole file is
stored once (content-addressed); every frame points at its line (offset, length).

Transport: a response that reached its terminal drained cleanly (the socket carries the
next response); one that did not was cut off by a close record (``error`` unless the close
was ``ok``) or by the end of the recording (``eof``), and is never released.

A session continued over a second connection (Gemini's ``goAway`` and a new connection
resuming with the ``sessionResumptionUpdate`` handle; an OpenAI client reconnecting) is a
second capture ingested onto the same trace: its turns are numbered on from the trace's
attempts, and a turn the first connection's end cut stays cut (it is not stitched to the
second connection's messages: each connection's bytes are their own evidence).

Stops: a client ``response.cancel`` or ``conversation.item.truncate``, and a Gemini
``interrupted``, are a local Stop of the response in flight at their position (or, between
responses, of the response just ended: it was decided before, so the Stop changes nothing).
Client messages are otherwise not frames received; they stay in the stored bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted, CaptureStored, FrameReceived, LocalStopped, NewEvent, TaskRule, TraceOpened,
    TransportDrained, attempt_stream, trace_stream,
)
from tracestore.ingest.plan import default_attempt_id, event_id, origin_label
from tracestore.providers.base import make_normalizer
from tracestore.providers.observations import Observation
from tracestore.providers.strictjson import strict_loads
from tracestore.wire import TextFrame, decode_bytes

SESSION_FORMAT = "realtime-session"
SESSION_FRAMING = "ws-session-jsonl"
DIRECTIONS = ("server", "client")

#: Observation kinds that mean a response (turn) is under way.
_TURN_KINDS = frozenset({
    "message_start", "text_delta", "reasoning_delta", "final_text", "block_start",
    "tool_call_start", "tool_call_delta", "tool_call_done", "terminal", "error",
})
#: Gemini Live's server members and client messages (its setup, content, audio, tools).
_GEMINI_SERVER = frozenset({"setupComplete", "serverContent", "toolCall", "toolCallCancellation",
                            "usageMetadata", "goAway", "sessionResumptionUpdate"})
_GEMINI_CLIENT = frozenset({"setup", "clientContent", "client_content", "realtimeInput",
                            "realtime_input", "toolResponse", "tool_response"})


@dataclass(frozen=True)
class SessionMessage:
    """One line of a session capture."""

    index: int
    offset: int
    length: int
    direction: str
    t: Any
    kind: str | None
    "``close`` for a close record, else None (a message)."
    data: Any


def is_session(data: bytes) -> bool:
    """Whether ``data`` looks like a session capture: its first line is a JSON object with
    ``dir`` and ``data`` (``read_session`` checks every line)."""
    head = data.lstrip()[:4096]
    if not head.startswith(b"{"):
        return False
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        value = strict_loads(first)
    except Exception:  # noqa: BLE001 - any unreadable first line: not a session
        return False
    return isinstance(value, Mapping) and "dir" in value and "data" in value


def read_session(data: bytes) -> list[SessionMessage]:
    """Every line as a ``SessionMessage`` (the NDJSON decoder's bounds apply).

    Raises ``InputError(code="invalid_session_line")`` for a line that is not a session
    message, and the wire errors of NDJSON and strict JSON."""
    frames, truncation = decode_bytes(data, "ndjson")
    if truncation is not None:
        raise InputError("the session ends inside a line", code="invalid_session_line",
                         offset=truncation.offset)
    out: list[SessionMessage] = []
    for frame in frames:
        assert isinstance(frame, TextFrame)
        value = strict_loads(frame.text, offset=frame.offset)
        if not isinstance(value, Mapping) or "data" not in value or \
                value.get("dir") not in DIRECTIONS:
            raise InputError(f"session line {len(out) + 1} (byte {frame.offset}) is not "
                             '{"dir": "server"|"client", "t": …, "data": …}',
                             code="invalid_session_line", offset=frame.offset)
        kind = value.get("kind")
        t = value.get("t")
        if kind not in (None, "close") or not (t is None or isinstance(t, (str, int, float))):
            raise InputError(f"session line {len(out) + 1} (byte {frame.offset}) has a kind "
                             "other than close, or a time that is not null, a number or a "
                             "string", code="invalid_session_line", offset=frame.offset)
        out.append(SessionMessage(len(out), frame.offset, frame.length, value["dir"], t, kind,
                                  value["data"]))
    return out


def session_provider(messages: list[SessionMessage]) -> str:
    """``openai-realtime`` or ``gemini-live``, by the first message whose shape decides."""
    for msg in messages:
        if msg.kind is not None or not isinstance(msg.data, Mapping):
            continue
        members = _GEMINI_SERVER if msg.direction == "server" else _GEMINI_CLIENT
        if any(key in msg.data for key in members):
            return "gemini-live"
        if isinstance(msg.data.get("type"), str):
            return "openai-realtime"
    raise InputError("cannot tell the realtime protocol from the session's messages (neither "
                     "OpenAI Realtime events nor Gemini Live messages)", code="unknown_provider")


@dataclass
class _Turn:
    items: list[tuple[str, SessionMessage, tuple[Observation, ...]]] = field(default_factory=list)
    "(``frame`` | ``stop`` | ``close``, message, observations) in session order."
    after: list[tuple[str, SessionMessage, tuple[Observation, ...]]] = field(default_factory=list)
    "What came after its terminal and belongs to no later response (after its decision)."
    started: bool = False
    ended: bool = False
    key: str | None = None


@dataclass(frozen=True)
class SessionPlan:
    """A session's events: one trace, one attempt per response or turn."""

    provider: str
    sha256: str
    trace_id: str
    attempts: tuple[str, ...]
    events: list[NewEvent]
    blob: bytes
    messages: int


def _stop_of(provider: str, msg: SessionMessage) -> str | None:
    from tracestore.providers.gemini_live import interrupted
    from tracestore.providers.openai_realtime import client_stop

    if provider == "openai-realtime":
        return client_stop(msg.data) if msg.direction == "client" else None
    return "interrupted" if msg.direction == "server" and interrupted(msg.data) else None


def _turns(provider: str, messages: list[SessionMessage]) -> list[_Turn]:
    from tracestore.providers.openai_realtime import response_id

    normalizer = make_normalizer(provider)
    turns: list[_Turn] = []
    current = _Turn()
    for msg in messages:
        observations: tuple[Observation, ...] = ()
        if msg.kind == "close":
            current.items.append(("close", msg, ()))
            continue
        if msg.direction == "server":
            observations = tuple(normalizer.feed(msg.data))
            if any(o.kind in _TURN_KINDS for o in observations):
                current.started = True
                if current.key is None and provider == "openai-realtime":
                    current.key = response_id(msg.data)
            current.items.append(("frame", msg, observations))
        stop = _stop_of(provider, msg)
        if stop is not None:
            if current.started or not turns:
                current.items.append(("stop", msg, ()))
            else:  # between responses: the one just ended (decided already)
                turns[-1].after.append(("stop", msg, ()))
        if any(o.kind == "terminal" for o in observations):
            current.ended = True
            turns.append(current)
            current = _Turn()
    if current.items or not turns:
        if current.started or not turns:
            turns.append(current)
        else:
            turns[-1].after += current.items
    return turns


def _drain(turn: _Turn) -> tuple[str, str]:
    if turn.ended:
        return "clean", "the response ended by its terminal; the session carried on"
    for kind, msg, _ in turn.items:
        if kind == "close" and isinstance(msg.data, Mapping):
            code, reason = msg.data.get("code"), msg.data.get("reason")
            detail = f"the socket closed (code {code}, reason {reason!r}) before the turn ended"
            return ("eof" if msg.data.get("ok") is True else "error"), detail
    return "eof", "the recording ended before the turn did"


def plan_session(data: bytes, *, filename: str | None = None, trace_id: str | None = None,
                 attempt_prefix: str | None = None, task: TaskRule | None = None,
                 origin: str | None = None, first_turn: int = 1) -> SessionPlan:
    """Plan a session capture (see the module docstring).  ``first_turn``: the number of
    its first turn, past the turns a trace already holds when this session continues it."""
    messages = read_session(data)
    provider = session_provider(messages)
    sha = hashlib.sha256(data).hexdigest()
    trace = trace_id or default_attempt_id(filename, sha)
    prefix = attempt_prefix or trace
    label = origin_label(origin, "capture")
    events = [NewEvent(trace_stream(trace), TraceOpened(trace_id=trace, task=task, origin=label),
                       id=event_id(trace, "", "trace"), trace_id=trace)]
    attempts: list[str] = []
    for number, turn in enumerate(_turns(provider, messages), start=first_turn):
        attempt = f"{prefix}-{turn.key or f'turn{number}'}"
        if attempt in attempts:
            attempt = f"{attempt}-turn{number}"
        attempts.append(attempt)
        stream = attempt_stream(attempt)
        body: list[Any] = [
            AttemptStarted(attempt_id=attempt, trace_id=trace, api=provider, reader="ingest"),
            CaptureStored(attempt_id=attempt, sha256=sha, size=len(data), framing=SESSION_FRAMING,
                          filename=filename)]
        outcome, detail = _drain(turn)
        body += _body(attempt, provider, sha, turn.items)
        body.append(TransportDrained(attempt_id=attempt, outcome=outcome,  # type: ignore[arg-type]
                                     detail=detail, reader="ingest"))
        body += _body(attempt, provider, sha, turn.after)
        parts = ["started", "capture"]
        events += [NewEvent(stream, e, id=event_id(attempt, sha, parts[i] if i < 2 else "body",
                                                   i), trace_id=trace)
                   for i, e in enumerate(body)]
    return SessionPlan(provider, sha, trace, tuple(attempts), events, data, len(messages))


def _body(attempt: str, provider: str, sha: str,
          items: list[tuple[str, SessionMessage, tuple[Observation, ...]]]) -> list[Any]:
    out: list[Any] = []
    for kind, msg, observations in items:
        if kind == "frame":
            out.append(FrameReceived(
                attempt_id=attempt, api=provider, native=msg.data,
                kinds=tuple(o.kind for o in observations), reader="ingest", index=msg.index,
                capture_sha256=sha, offset=msg.offset, length=msg.length,
                observed_at=msg.t if isinstance(msg.t, str) else None))
        elif kind == "stop":
            out.append(LocalStopped(attempt_id=attempt, reader="ingest", by="user",
                                    observed_at=msg.t if isinstance(msg.t, str) else None))
    return out


__all__ = ["SESSION_FORMAT", "SESSION_FRAMING", "SessionMessage", "SessionPlan", "is_session",
           "plan_session", "read_session", "session_provider"]
