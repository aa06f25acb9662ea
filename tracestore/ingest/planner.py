"""Turn an input file's bytes into the events that record it (pure: bytes in, plan out).

Two kinds of input are accepted:

* a **decoded projection** — a JSON array of native event objects with local labels
  (planned by ``tracestore.ingest.projection``);
* a **capture** — the raw body bytes an application received (SSE, NDJSON, Gemini JSON
  array, AWS event stream …), decoded by ``tracestore.wire`` and ``tracestore.providers``.

What every plan shares (ids, origins, bindings, the envelope events) is in
``tracestore.ingest.plan``; this module re-exports it.  Writing a plan to a store is
``tracestore.ingest.pipeline``'s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, cast

from tracestore.errors import InputError, WireError
from tracestore.events import FrameReceived, FrameRejected, TaskRule, TransportDrained
from tracestore.ingest.capture_fast import FAST_FRAMINGS, plan_capture_fast
from tracestore.ingest.drain import capture_drain
from tracestore.ingest.fast import MAX_LABELS_PER_PROJECTION, HandOver
from tracestore.ingest.plan import (
    DRAIN_OUTCOMES, ORIGINS, SYNTHETIC_CAPTURE, Bindings, IngestPlan, binding_events,
    check_binding_conflicts, default_attempt_id, envelope, event_id, id_prefix, origin_label,
)
from tracestore.ingest.projection import (
    PROJECTION_APIS, detect_projection_api, first_element_is_projection,
    is_label, plan_projection, plan_projection_fast, projection_api_of,
)
from tracestore.providers.capture import PARTIAL_PROVIDERS, read_capture
from tracestore.providers.strictjson import strict_loads
from tracestore.wire import (
    DETECT_HEAD_BYTES, MAX_FRAMES_PER_CAPTURE, TextFrame, decode_bytes, framing_for_path,
)

__all__ = [
    "DRAIN_OUTCOMES", "ORIGINS", "PROJECTION_APIS", "SYNTHETIC_CAPTURE", "Bindings",
    "IngestPlan", "binding_events", "capture_drain", "check_binding_conflicts",
    "default_attempt_id", "detect_projection_api", "event_id", "id_prefix", "is_label",
    "origin_label", "plan_capture", "plan_ingest", "plan_projection", "plan_projection_fast",
    "projection_api_of",
]


def plan_capture(reading: Any, data: bytes, *, filename: str | None, attempt_id: str | None,
                 trace_id: str | None, task: TaskRule | None = None,
                 bindings: Bindings | None = None, origin: str | None = None) -> IngestPlan:
    """Plan the events for a decoded capture (a ``providers.capture.CaptureReading``)."""
    label = origin_label(origin, "capture")
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or default_attempt_id(filename, sha)
    trace = trace_id or attempt
    body: list[Any] = [
        FrameReceived(attempt_id=attempt, api=reading.provider, native=frame.native,
                      kinds=tuple(o.kind for o in frame.observations),
                      event_name=frame.event_name, reader="ingest", index=frame.index,
                      capture_sha256=sha, offset=frame.offset, length=frame.length)
        for frame in reading.frames
    ]
    failure = getattr(reading, "failure", None)
    if failure is not None:  # a frame that could not be read: recorded, and reading stops
        body.append(FrameRejected(attempt_id=attempt, code=failure.code, offset=failure.offset,
                                  index=len(reading.frames), detail=failure.message))
    elif reading.truncation is not None and reading.provider in PARTIAL_PROVIDERS:
        # Seed 000 keeps an application stream that ends inside a frame (or inside a UTF-8
        # character) as invalid, with the seed's own code, whatever frames came before.
        body.append(FrameRejected(attempt_id=attempt, code=reading.truncation.code,
                                  offset=reading.truncation.offset, index=len(reading.frames),
                                  detail="input ended inside a frame"))
    drain, detail = capture_drain(reading)
    body.append(TransportDrained(attempt_id=attempt, outcome=drain, detail=detail,
                                 reader="ingest"))
    events = envelope(attempt, trace, reading.provider, sha, len(data), reading.framing,
                      filename, task, origin=label, body=body, bindings=bindings)
    return IngestPlan(attempt, trace, reading.provider, "capture", reading.framing, sha,
                      events, data, len(reading.frames), drain)


def plan_ingest(data: bytes, *, filename: str | None = None, attempt_id: str | None = None,
                trace_id: str | None = None, provider: str = "auto",
                chunk_size: int | None = None, task: TaskRule | None = None,
                progress: Callable[[int], None] | None = None,
                bindings: Bindings | None = None, origin: str | None = None) -> IngestPlan:
    """Decide whether ``data`` is a projection or a capture, and plan its events.

    ``progress`` hears how many bytes of a capture have been decoded (for progress bars);
    ``origin`` is ``--origin`` (see ``ORIGINS``), checked against the kind of input.
    """
    if origin is not None and origin not in ORIGINS:
        origin_label(origin, "capture")  # raises unknown_origin before any decoding
    if not data or data.isspace():  # (``strip`` would copy a large input whole)
        raise InputError("the input is empty", code="empty_input")
    framing = framing_for_path(filename or "", data[:DETECT_HEAD_BYTES])
    if framing == "json-array" and provider in ("auto", *PROJECTION_APIS) and (
            provider in PROJECTION_APIS or first_element_is_projection(data)):
        if chunk_size is None:
            try:
                return plan_projection_fast(data, filename=filename, attempt_id=attempt_id,
                                            trace_id=trace_id, api=provider, task=task,
                                            bindings=bindings, origin=origin)
            except HandOver:
                pass  # the reference path below reports the exact error (or decodes it)
        frames, truncation = decode_bytes(
            data, "json-array", chunk_size=chunk_size,
            max_frames=MAX_FRAMES_PER_CAPTURE + MAX_LABELS_PER_PROJECTION)
        if truncation is not None:
            raise WireError("the JSON array ends before its closing ']'",
                            code=truncation.code, offset=truncation.offset)
        texts = cast(list[TextFrame], frames)  # a json-array decoder's frames are text
        parsed = [(f.offset, f.length, strict_loads(f.text, offset=f.offset)) for f in texts]
        return plan_projection(parsed, data, filename=filename, attempt_id=attempt_id,
                               trace_id=trace_id, api=provider, task=task, bindings=bindings,
                               origin=origin)
    if chunk_size is None and framing in FAST_FRAMINGS:
        try:
            return plan_capture_fast(data, framing=framing, provider=provider,
                                     filename=filename, attempt_id=attempt_id,
                                     trace_id=trace_id, task=task, bindings=bindings,
                                     origin=origin, progress=progress)
        except HandOver:
            pass  # the reference path below reports the exact error (or decodes it)
    reading = read_capture(data, provider=provider, framing=framing, filename=filename,
                           chunk_size=chunk_size, progress=progress, keep_partial=True)
    return plan_capture(reading, data, filename=filename, attempt_id=attempt_id,
                        trace_id=trace_id, task=task, bindings=bindings, origin=origin)
