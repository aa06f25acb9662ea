"""Planning a decoded projection: a JSON array of native event objects with local labels,
in the form seed 003 writes S1, S2 and T1 (``{"type": "response.output_text.delta", …}``,
``{"contentBlockDelta": …}``, ``{"local": "stop"}``, ``{"local": "drain", "outcome": …}``).

``plan_projection`` is the reference path (elements already decoded, everything checked in
order); ``plan_projection_fast`` plans a whole array in two C-speed passes without holding
its elements (``tracestore.ingest.fast``) and hands over to the reference path when unsure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from tracestore.errors import InputError, WireError
from tracestore.events import (
    FrameReceived, LocalStopped, TaskRule, TransportDrained,
)
from tracestore.ingest.fast import (
    MAX_LABELS_PER_PROJECTION, PlannedEvents, check_projection, plan_body,
)
from tracestore.ingest.plan import (
    _PARTS, DRAIN_OUTCOMES, Bindings, IngestPlan, default_attempt_id, envelope, id_prefix,
    origin_label,
)
from tracestore.providers.base import as_map, make_normalizer
from tracestore.providers.bedrock import EVENT_MEMBERS
from tracestore.providers.strictjson import strict_loads
from tracestore.wire import MAX_FRAMES_PER_CAPTURE, TextFrame, make_decoder

PROJECTION_APIS = ("openai-responses", "bedrock-converse-stream")


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
    apis = {api for e in elements
            if not is_label(e) and (api := projection_api_of(e)) is not None}
    if len(apis) == 1:
        return apis.pop()
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
    events = envelope(attempt, trace, api, sha, len(data), "projection", filename, task,
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
                         trace_id: str | None, api: str, task: TaskRule | None = None,
                         bindings: Bindings | None = None,
                         origin: str | None = None) -> IngestPlan:
    """``plan_projection`` for a whole JSON array in memory, without holding its elements.

    Raises ``HandOver`` when the input needs the reference path (see ``ingest.fast``).
    """
    checked = check_projection(data, api, label_event=_label_event, api_of=projection_api_of)
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or default_attempt_id(filename, sha)
    trace = trace_id or attempt
    head = envelope(attempt, trace, checked.api, sha, len(data), "projection", filename,
                    task, origin=origin_label(origin, "projection"), body=(),
                    bindings=bindings)
    prefix = f"{id_prefix(attempt, sha)}{_PARTS['body']}"

    def body() -> Any:
        return plan_body(checked, data, attempt=attempt, trace=trace, sha=sha,
                         body_prefix=prefix, label_event=_label_event)

    count = checked.frames + checked.labels
    return IngestPlan(attempt, trace, checked.api, "projection", "json-array", sha,
                      PlannedEvents(head, count, body), data, count, checked.drain)


def first_element_is_projection(data: bytes, piece: int = 64 * 1024) -> bool:
    """Whether a JSON array is a projection, judged by its first element only.

    Gemini's JSON-array captures start with a ``GenerateContentResponse`` (``candidates``,
    ``usageMetadata``), never with a ``type``, a ``local`` label or a single Bedrock member
    key, so the first element decides, and a capture is decoded once, by the capture reader.
    """
    decoder = make_decoder("json-array")
    for start in range(0, len(data), piece):
        frames = decoder.feed(data[start:start + piece])
        if frames:
            head = cast(TextFrame, frames[0])  # a json-array decoder's frames are text
            first = strict_loads(head.text, offset=head.offset)
            return is_label(first) or projection_api_of(first) is not None
    return False
