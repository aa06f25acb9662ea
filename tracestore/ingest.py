"""Turn an input file's bytes into the events that record it (pure: bytes in, plan out).

Two kinds of input are accepted:

* a **decoded projection** — a JSON array of native event objects with local labels, in the
  form seed 003 writes S1, S2 and T1 (``{"type": "response.output_text.delta", …}``,
  ``{"contentBlockDelta": …}``, ``{"local": "stop"}``, ``{"local": "drain", "outcome": …}``);
* a **capture** — the raw body bytes an application received (SSE, NDJSON, Gemini JSON
  array, AWS event stream …), decoded by ``tracestore.wire`` and ``tracestore.providers``.

Event ids are derived from (attempt, content hash, index), so ingesting the same file into
the same attempt twice is a reported no-op rather than a duplicate.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.errors import InputError, WireError
from tracestore.events import (
    AttemptStarted,
    CaptureStored,
    ContractBound,
    FrameReceived,
    FrameRejected,
    LocalStopped,
    NewEvent,
    RequestBound,
    TaskRule,
    TraceOpened,
    TransportDrained,
    attempt_stream,
    trace_stream,
)
from tracestore.ingest_fast import (
    MAX_LABELS_PER_PROJECTION, HandOver, PlannedEvents, check_projection, plan_body,
)
from tracestore.providers.base import as_map, make_normalizer
from tracestore.providers.bedrock import EVENT_MEMBERS
from tracestore.providers.capture import PARTIAL_PROVIDERS, read_capture
from tracestore.providers.strictjson import strict_loads
from tracestore.wire import (
    DETECT_HEAD_BYTES, MAX_FRAMES_PER_CAPTURE, decode_bytes, framing_for_path, make_decoder,
)

_ID_NAMESPACE = uuid.UUID("5b0c7f3e-29a4-4c1e-9d8e-7a1f0c2b4d6e")
DRAIN_OUTCOMES = ("clean", "eof", "error", "reset")
PROJECTION_APIS = ("openai-responses", "bedrock-converse-stream")

#: ``ingest --origin`` values and the words seed 003's record uses for them.  A decoded JSON
#: array may be a synthetic projection or a real capture someone decoded, and only the
#: person ingesting it knows which, so a projection's origin is never assumed.
ORIGINS = {"synthetic": "synthetic projection", "decoded": "decoded capture",
           "capture": "framed capture"}
#: The origin a raw capture gets with ``--origin synthetic`` (hand-built framed bytes).
SYNTHETIC_CAPTURE = "synthetic framed capture"


def origin_label(origin: str | None, kind: str) -> str | None:
    """The stored origin for ``--origin`` on a ``projection`` or ``capture`` input."""
    if origin is None:
        return ORIGINS["capture"] if kind == "capture" else None
    if origin not in ORIGINS:
        raise InputError(f"--origin {origin!r} is not one of {', '.join(ORIGINS)}",
                         code="unknown_origin")
    if kind == "capture":
        if origin == "decoded":
            raise InputError("--origin decoded is for a JSON array of decoded events; this "
                             "input is framed capture bytes", code="origin_mismatch")
        return SYNTHETIC_CAPTURE if origin == "synthetic" else ORIGINS["capture"]
    if origin == "capture":
        raise InputError("--origin capture is for raw framed bytes; this input is a JSON "
                         "array of decoded events (use synthetic or decoded)",
                         code="origin_mismatch")
    return ORIGINS[origin]


@dataclass(frozen=True)
class IngestPlan:
    attempt_id: str
    trace_id: str
    api: str
    kind: str
    "``projection`` or ``capture``."
    framing: str
    sha256: str
    events: list[NewEvent] | PlannedEvents
    "A projection's body is generated while it is appended (see ``ingest_fast``)."
    blob: bytes
    frames: int
    drain: str | None
    "The drain outcome the input shows (None when a projection supplied none)."


def event_id(attempt: str, sha256: str, part: str, index: int = 0) -> str:
    """A deterministic id: the same input into the same attempt gets the same ids.

    A digest of (attempt, input) followed by the part and index, so one ingest's ids sort
    together and append to the id index rather than scattering across it.
    """
    return f"{id_prefix(attempt, sha256)}{_PARTS[part]}{index:011x}"


def id_prefix(attempt: str, sha256: str) -> str:
    """The digest part of ``event_id``: computed once per ingest, not once per event."""
    return hashlib.sha256(f"{_ID_NAMESPACE}\x1f{attempt}\x1f{sha256}".encode()).hexdigest()[:20]


_PARTS = {"trace": "0", "started": "1", "capture": "2", "body": "3", "contract": "4",
          "binding": "5"}


@dataclass(frozen=True)
class Bindings:
    """What ``--contract`` and ``--binding`` bind the trace to (both optional)."""

    contract: Any = None
    "A loaded ``tracestore.contracts.model.Contract``."
    binding: dict[str, Any] | None = None


def binding_events(trace: str, bindings: Bindings | None) -> list[tuple[str, str, Any]]:
    """``contract.bound`` / ``request.bound`` for the trace stream, with stable ids (the same
    contract or binding given again is a no-op; a different one is refused at append)."""
    from tracestore.contracts.binding import binding_digest

    out: list[tuple[str, str, Any]] = []
    if bindings is None:
        return out
    if bindings.contract is not None:
        c = bindings.contract
        out.append((trace_stream(trace), event_id(trace, c.sha256, "contract"),
                    ContractBound(trace_id=trace, name=c.name, contract=c.source,
                                  sha256=c.sha256)))
    if bindings.binding is not None:
        digest = binding_digest(bindings.binding)
        out.append((trace_stream(trace), event_id(trace, digest, "binding"),
                    RequestBound(trace_id=trace, binding=bindings.binding, sha256=digest)))
    return out


def default_attempt_id(filename: str | None, sha256: str) -> str:
    stem = (filename or "input").rsplit("/", 1)[-1].split(".", 1)[0] or "input"
    return f"{stem}-{sha256[:8]}"


def check_binding_conflicts(known: Sequence[Any], planned: Sequence[NewEvent],
                            trace_id: str) -> None:
    """A trace answers one request under one contract: refuse a different one
    (``known`` are the trace stream's stored events, ``planned`` the events to append)."""
    new = {e.event.type: e.event.sha256 for e in planned
           if e.event.type in ("contract.bound", "request.bound")}
    for stored in known:
        sha = new.get(stored.type)
        if sha is not None and stored.event.sha256 != sha:
            what = "contract" if stored.type == "contract.bound" else "request binding"
            raise InputError(
                f"trace {trace_id!r} already has another {what}; a trace answers one "
                "request under one contract, so choose another trace",
                code="trace_conflict", trace_id=trace_id)


# -- projections ------------------------------------------------------------------------

def is_label(element: Any) -> bool:
    return as_map(element) is not None and "local" in element


def projection_api_of(element: Any) -> str | None:
    """Which API a decoded native object belongs to, judged by its shape alone."""
    if as_map(element) is None or not element:
        return None
    if isinstance(element.get("type"), str):
        return "openai-responses"
    if len(element) == 1:
        (member,) = element.keys()
        if member in EVENT_MEMBERS or str(member).endswith("Exception"):
            return "bedrock-converse-stream"
    return None


def detect_projection_api(elements: Sequence[Any]) -> str:
    apis = {projection_api_of(e) for e in elements if not is_label(e)} - {None}
    if len(apis) == 1:
        return apis.pop()  # type: ignore[return-value]
    if not apis:
        raise InputError("the projection holds no native events to tell the API from; "
                         "pass --api", code="unknown_api")
    raise InputError(f"the projection mixes native events of {sorted(apis)}; one attempt "
                     "holds one API's events", code="mixed_apis")


def _label_event(element: Mapping[str, Any], index: int, attempt_id: str) -> Any:
    label = element.get("local")
    if label == "stop":
        return LocalStopped(attempt_id=attempt_id, reader="ingest",
                            by=_opt_str(element.get("by")))
    if label == "drain":
        outcome = element.get("outcome")
        if outcome not in DRAIN_OUTCOMES:
            raise InputError(
                f"element {index}: drain outcome {outcome!r} is not one of "
                f"{', '.join(DRAIN_OUTCOMES)}", code="unknown_label", index=index)
        return TransportDrained(attempt_id=attempt_id, outcome=outcome, reader="ingest",
                                detail=_opt_str(element.get("detail")))
    raise InputError(f"element {index}: unknown local label {label!r} (expected 'stop' or "
                     "'drain')", code="unknown_label", index=index)


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def plan_projection(frames: Sequence[tuple[int, int, Any]], data: bytes, *,
                    filename: str | None, attempt_id: str | None, trace_id: str | None,
                    api: str, task: TaskRule | None = None,
                    bindings: Bindings | None = None, origin: str | None = None) -> IngestPlan:
    """Plan the events for a decoded projection: ``frames`` are (offset, length, element)."""
    label = origin_label(origin, "projection")
    elements = [element for _, _, element in frames]
    for index, element in enumerate(elements):
        if not isinstance(element, Mapping):
            raise InputError(f"element {index} is a {type(element).__name__}, not an object",
                             code="invalid_shape", index=index)
    _check_counts(elements)
    if api == "auto":
        api = detect_projection_api(elements)
    elif api not in PROJECTION_APIS:
        raise InputError(f"--api {api!r}: projections are {', '.join(PROJECTION_APIS)} or auto",
                         code="unknown_api")
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or default_attempt_id(filename, sha)
    trace = trace_id or attempt
    body: list[Any] = []
    drain: str | None = None
    normalizer = make_normalizer(api)  # one, fed in order: normalizers keep stream state
    for index, (offset, length, element) in enumerate(frames):
        if is_label(element):
            event = _label_event(element, index, attempt)
            drain = getattr(event, "outcome", drain)
        else:
            if projection_api_of(element) not in (api, None):
                raise InputError(f"element {index} is not a {api} event",
                                 code="mixed_apis", index=index)
            event = FrameReceived(attempt_id=attempt, api=api, native=dict(element),
                                  kinds=tuple(o.kind for o in normalizer.feed(element)),
                                  reader="ingest", index=index,
                                  capture_sha256=sha, offset=offset, length=length)
        body.append(event)
    events = _envelope(attempt, trace, api, sha, len(data), "projection", filename, task,
                       origin=label, body=body, bindings=bindings)
    return IngestPlan(attempt, trace, api, "projection", "json-array", sha, events, data,
                      len(frames), drain)


def _check_counts(elements: Sequence[Any]) -> None:
    """The frame bound counts native frames; labels have their own (small) bound."""
    labels = sum(1 for e in elements if is_label(e))
    if len(elements) - labels > MAX_FRAMES_PER_CAPTURE:
        raise WireError(f"more than {MAX_FRAMES_PER_CAPTURE} native frames in one projection",
                        code="frame_count_limit", offset=None)
    if labels > MAX_LABELS_PER_PROJECTION:
        raise InputError(f"more than {MAX_LABELS_PER_PROJECTION} local labels in one "
                         "projection", code="label_count_limit")


def plan_projection_fast(data: bytes, *, filename: str | None, attempt_id: str | None,
                         trace_id: str | None, api: str,
                         task: TaskRule | None = None, origin: str | None = None) -> IngestPlan:
    """``plan_projection`` for a whole JSON array in memory, without holding its elements.

    Raises ``HandOver`` when the input needs the reference path (see ``ingest_fast``).
    """
    checked = check_projection(data, api, label_event=_label_event, api_of=projection_api_of)
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or default_attempt_id(filename, sha)
    trace = trace_id or attempt
    head = _envelope(attempt, trace, checked.api, sha, len(data), "projection", filename,
                     task, origin=origin_label(origin, "projection"), body=())
    prefix = f"{id_prefix(attempt, sha)}{_PARTS['body']}"

    def body() -> Any:
        return plan_body(checked, data, attempt=attempt, trace=trace, sha=sha,
                         body_id=lambda index: f"{prefix}{index:011x}",
                         label_event=_label_event)

    count = checked.frames + checked.labels
    return IngestPlan(attempt, trace, checked.api, "projection", "json-array", sha,
                      PlannedEvents(head, count, body), data, count, checked.drain)


def _envelope(attempt: str, trace: str, api: str, sha: str, size: int, framing: str,
              filename: str | None, task: TaskRule | None, *, origin: str | None,
              body: Sequence[Any], bindings: Bindings | None = None) -> list[NewEvent]:
    """trace.opened (then contract/request bindings), attempt.started, capture.stored, then
    the body, with stable ids."""
    head: list[tuple[str, str, Any]] = [
        (trace_stream(trace), event_id(trace, "", "trace"),
         TraceOpened(trace_id=trace, task=task, origin=origin)),
        *binding_events(trace, bindings),
        (attempt_stream(attempt), event_id(attempt, sha, "started"),
         AttemptStarted(attempt_id=attempt, trace_id=trace, api=api, reader="ingest")),
        (attempt_stream(attempt), event_id(attempt, sha, "capture"),
         CaptureStored(attempt_id=attempt, sha256=sha, size=size, framing=framing,
                       filename=filename)),
    ]
    events = [NewEvent(stream, e, id=eid, trace_id=trace) for stream, eid, e in head]
    events += [NewEvent(attempt_stream(attempt), e, id=event_id(attempt, sha, "body", i),
                        trace_id=trace) for i, e in enumerate(body)]
    return events


# -- captures ---------------------------------------------------------------------------

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
    events = _envelope(attempt, trace, reading.provider, sha, len(data), reading.framing,
                       filename, task, origin=label, body=body, bindings=bindings)
    return IngestPlan(attempt, trace, reading.provider, "capture", reading.framing, sha,
                      events, data, len(reading.frames), drain)


def capture_drain(reading: Any) -> tuple[str, str | None]:
    """The drain the bytes show: clean only when the capture ended after a native terminal."""
    truncation = reading.truncation
    if truncation is not None:
        return "eof", (f"input ended inside a frame at byte {truncation.offset} "
                       f"({truncation.code})")
    if not reading.terminal_seen:
        ending = reading.error_ending()
        if ending is not None:
            # The bytes end right after a whole native error frame: the provider ended the
            # stream with its error, which the release decision judges as such.
            frame, error = ending
            name = error.error_code or error.native_type
            return "clean", (f"input ended after the native error frame {name} "
                             f"(frame {frame.index} at byte {frame.offset})")
        return "eof", "input ended before the native terminal"
    return "clean", None


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
    if not data.strip():
        raise InputError("the input is empty", code="empty_input")
    framing = framing_for_path(filename or "", data[:DETECT_HEAD_BYTES])
    if framing == "json-array" and provider in ("auto", *PROJECTION_APIS) and (
            provider in PROJECTION_APIS or _first_element_is_projection(data)):
        if chunk_size is None:
            try:
                return plan_projection_fast(data, filename=filename, attempt_id=attempt_id,
                                            trace_id=trace_id, api=provider, task=task,
                                            origin=origin)
            except HandOver:
                pass  # the reference path below reports the exact error (or decodes it)
        frames, truncation = decode_bytes(
            data, "json-array", chunk_size=chunk_size,
            max_frames=MAX_FRAMES_PER_CAPTURE + MAX_LABELS_PER_PROJECTION)
        if truncation is not None:
            raise WireError("the JSON array ends before its closing ']'",
                            code=truncation.code, offset=truncation.offset)
        parsed = [(f.offset, f.length, strict_loads(f.text, offset=f.offset)) for f in frames]
        return plan_projection(parsed, data, filename=filename, attempt_id=attempt_id,
                               trace_id=trace_id, api=provider, task=task, bindings=bindings,
                               origin=origin)
    reading = read_capture(data, provider=provider, framing=framing, filename=filename,
                           chunk_size=chunk_size, progress=progress, keep_partial=True)
    return plan_capture(reading, data, filename=filename, attempt_id=attempt_id,
                        trace_id=trace_id, task=task, bindings=bindings, origin=origin)


def _first_element_is_projection(data: bytes, piece: int = 64 * 1024) -> bool:
    """Whether a JSON array is a projection, judged by its first element only.

    Gemini's JSON-array captures start with a ``GenerateContentResponse`` (``candidates``,
    ``usageMetadata``), never with a ``type``, a ``local`` label or a single Bedrock member
    key, so the first element decides, and a capture is decoded once, by the capture reader.
    """
    decoder = make_decoder("json-array")
    for start in range(0, len(data), piece):
        frames = decoder.feed(data[start:start + piece])
        if frames:
            first = strict_loads(frames[0].text, offset=frames[0].offset)
            return is_label(first) or projection_api_of(first) is not None
    return False
