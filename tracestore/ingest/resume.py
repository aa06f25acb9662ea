"""A resumed OpenAI Responses stream into one attempt (pure: stored events and bytes in,
plan out).

``GET /v1/responses/{id}?stream=true&starting_after=N`` delivers the rest of an answer on a
second connection: one answer over two connections, every event numbered by its
``sequence_number``.  The first connection was recorded as an attempt of its own, and its
decision (cut off by the end of its transport) is final, so the whole answer is recorded as
a new attempt of the same trace that holds both connections: the first's frames (they keep
pointing into the first capture), then the second capture, then its frames, numbered on
from the first's, then the second connection's drain.  The first connection's drain is not
an end of the answer's transport and is left out.

Where the connections meet, the second's first event must be the one after the first's
last.  Leading events the second connection replays unchanged (a cursor older than the last
event received) are dropped, with a note: the stored bytes still hold them.  A gap, or a
replayed number with other content, stays in the frames and holds the attempt
(``resume_sequence_gap``, ``resume_sequence_overlap``, judged by the attempt fold).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted, CaptureStored, FrameReceived, NewEvent, StoredEvent, TraceOpened,
    TransportDrained, attempt_stream,
)
from tracestore.ingest.drain import capture_drain
from tracestore.ingest.plan import IngestPlan, event_id
from tracestore.providers.capture import read_capture

#: The APIs whose streams can be resumed by a sequence cursor.
RESUMABLE_APIS = frozenset({"openai-responses"})


@dataclass(frozen=True)
class ResumePlan:
    plan: IngestPlan
    resumes_after: int
    "The first connection's last ``sequence_number``."
    notes: tuple[str, ...]


def _sequence(native: Any) -> int | None:
    seq = native.get("sequence_number") if isinstance(native, Mapping) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def plan_resume(trace_opened: StoredEvent, first: Sequence[StoredEvent], data: bytes, *,
                resume_of: str, filename: str | None = None, attempt_id: str | None = None,
                chunk_size: int | None = None) -> ResumePlan:
    """Plan the attempt holding ``resume_of``'s frames (``first``: its stream's events) and
    the resumed connection's ``data`` (see the module docstring).

    Raises ``InputError(code="resume_not_possible")`` when ``resume_of`` is not a stream
    with sequence numbers that a second connection can continue."""
    started = next((e.event for e in first if isinstance(e.event, AttemptStarted)), None)
    if started is None:
        raise InputError(f"attempt {resume_of!r} has no start event", code="resume_not_possible",
                         attempt_id=resume_of)
    if started.api not in RESUMABLE_APIS:
        raise InputError(f"attempt {resume_of!r} is {started.api}; only an OpenAI Responses "
                         "stream is resumed by a sequence cursor", code="resume_not_possible",
                         attempt_id=resume_of)
    old_frames = [e.event for e in first if isinstance(e.event, FrameReceived)]
    last = next((s for f in reversed(old_frames) if (s := _sequence(f.native)) is not None),
                None)
    if last is None:
        raise InputError(f"attempt {resume_of!r} has no event with a sequence_number, so "
                         "there is no cursor to resume from", code="resume_not_possible",
                         attempt_id=resume_of)
    by_sequence = {s: f.native for f in old_frames if (s := _sequence(f.native)) is not None}
    reading = read_capture(data, provider=started.api, filename=filename,
                           chunk_size=chunk_size)
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or f"{resume_of}-resumed"
    if attempt == resume_of:
        raise InputError("the resumed answer is a new attempt holding both connections; "
                         "choose another --attempt", code="resume_not_possible",
                         attempt_id=resume_of)
    new_frames = list(reading.frames)
    replayed: list[int] = []
    while new_frames:
        seq = _sequence(new_frames[0].native)
        if seq is None or seq > last or by_sequence.get(seq) != new_frames[0].native:
            break
        replayed.append(seq)
        new_frames.pop(0)

    trace = started.trace_id
    body: list[Any] = []
    for old in first:
        event = old.event
        if isinstance(event, (CaptureStored, FrameReceived)):
            body.append(event.model_copy(update={"attempt_id": attempt}))
    body.append(CaptureStored(attempt_id=attempt, sha256=sha, size=len(data),
                              framing=reading.framing, filename=filename))
    base = len(old_frames)
    body += [FrameReceived(attempt_id=attempt, api=started.api, native=frame.native,
                           kinds=tuple(o.kind for o in frame.observations),
                           event_name=frame.event_name, reader="ingest", index=base + i,
                           capture_sha256=sha, offset=frame.offset, length=frame.length)
             for i, frame in enumerate(new_frames)]
    drain, detail = capture_drain(reading)
    body.append(TransportDrained(attempt_id=attempt, outcome=drain, detail=detail,
                                 reader="ingest"))
    opened = trace_opened.event
    assert isinstance(opened, TraceOpened)
    stream = attempt_stream(attempt)
    request = {"resume_of": resume_of, "starting_after": last}
    events = [NewEvent(trace_opened.stream, opened, id=trace_opened.id, trace_id=trace),
              NewEvent(stream, AttemptStarted(attempt_id=attempt, trace_id=trace,
                                              api=started.api, reader="ingest",
                                              request=request),
                       id=event_id(attempt, sha, "started"), trace_id=trace)]
    events += [NewEvent(stream, e, id=event_id(attempt, sha, "body", i), trace_id=trace)
               for i, e in enumerate(body)]
    notes: tuple[str, ...] = ()
    if replayed:
        notes = (f"the resumed connection replayed {len(replayed)} event(s) the first "
                 f"delivered unchanged (sequence {replayed[0]}..{replayed[-1]}); they are "
                 "kept in the stored bytes and not counted twice",)
    plan = IngestPlan(attempt, trace, started.api, "capture", reading.framing, sha, events,
                      data, len(new_frames), drain)
    return ResumePlan(plan, last, notes)


__all__ = ["RESUMABLE_APIS", "ResumePlan", "plan_resume"]
