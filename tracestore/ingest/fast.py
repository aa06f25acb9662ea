"""The fast path for large decoded projections: two C-speed passes, nothing held per element.

``tracestore ingest`` of a 1,000,000-element projection used to scan the array in Python,
parse every element again, build a pydantic model per frame and keep all of it in memory
(3.6 GiB).  Here:

1. **check** (before anything is written): the C JSON parser walks the decoded text element
   by element with the strict hooks (duplicate keys, ``NaN``, out-of-range numbers, the depth bound); each element's shape, label
   and API are checked and counted, and only its byte span is kept (two integers).
2. **plan** (lazily, while the store appends in bounded batches inside its one transaction):
   each span of the input bytes is parsed again by the plain C parser (pass 1 proved it strict), normalized,
   and its payload serialized straight to the bytes the model would have produced.

Whenever this path is unsure -- bytes that are not UTF-8, a byte-order mark, an element over
the frame bound, anything but one comma between elements, or ANY invalid element -- it
hands over to the reference path (the incremental wire decoder and ``plan_projection``),
which reports exactly the error it always did, in the same order.  So the fast path only
ever runs on inputs the reference path accepts, and a test checks both plan the same events.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from tracestore.errors import InputError
from tracestore.events import FrameReceived, NewEvent, SerializedEvent, attempt_stream
from tracestore.providers.base import make_normalizer
from tracestore.providers.strictjson import strict_decoder, too_deep
from tracestore.wire.limits import MAX_FRAME_BYTES, MAX_FRAMES_PER_CAPTURE, MAX_JSON_DEPTH

#: Local labels (``{"local": "stop"}``, ``{"local": "drain", …}``) one projection may hold
#: besides its native frames.  Labels are not frames: they do not count against
#: ``MAX_FRAMES_PER_CAPTURE`` (a 1,000,000-frame projection plus its labels is accepted).
MAX_LABELS_PER_PROJECTION = 1_000

SHALLOW_CHARS = 2 * (MAX_JSON_DEPTH + 1) - 1
"An element of at most this many characters cannot nest deeper than ``MAX_JSON_DEPTH``."
_SPACE = re.compile(r"[ \t\r\n]*")
_NEXT = re.compile(r"[ \t\r\n]*([,\]])[ \t\r\n]*")


class HandOver(Exception):
    """The fast path is unsure about this input; the reference path decides."""


@dataclass(frozen=True)
class Checked:
    """What pass 1 learned: spans (byte offset, byte length) per element, the API, the
    frame and label counts, and the last drain outcome.  The decoded text is not kept:
    pass 2 parses each element from the input bytes, so the text (as large as the input)
    is freed before the store is opened."""

    spans: array
    api: str
    frames: int
    labels: int
    drain: str | None


def utf8_text(data: bytes) -> str:
    """``data`` as text; ``HandOver`` for bytes that are not UTF-8 or begin with a BOM (the
    reference path reports both in its own words)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HandOver from None
    if text.startswith("\ufeff"):
        raise HandOver
    return text


def check_projection(data: bytes, api: str, *, label_event: Any, api_of: Any) -> Checked:
    """Pass 1: walk the array once with the strict C parser; raise ``HandOver`` on doubt.

    ``label_event`` and ``api_of`` are the reference path's own checks, so both paths
    judge elements by the same code.
    """
    text = utf8_text(data)
    ascii_only = data.isascii()
    # the C scanner itself: raw_decode's wrapper cost more (JSONDecoder sets the attribute
    # in __init__; typeshed does not declare it)
    scan = strict_decoder().scan_once  # type: ignore[attr-defined]
    spans = array("q")
    pos = _SPACE.match(text).end()  # type: ignore[union-attr]  # [ \t\r\n]* always matches
    if text[pos:pos + 1] != "[":
        raise HandOver
    pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]  # (as above)
    frames = labels = 0
    drain: str | None = None
    detected = None if api == "auto" else api
    byte_pos = char_pos = 0  # for non-ASCII text: byte offset of char_pos
    done = text[pos:pos + 1] == "]"
    while not done:
        try:
            element, end = scan(text, pos)
        except (StopIteration, ValueError, RecursionError):
            raise HandOver from None
        if type(element) is not dict or (
                # nesting deeper than the bound takes more than twice as many characters
                end - pos > SHALLOW_CHARS and too_deep(text[pos:end], element, MAX_JSON_DEPTH)):
            raise HandOver
        if ascii_only:
            offset, length = pos, end - pos
        else:
            offset = byte_pos + len(text[char_pos:pos].encode("utf-8"))
            length = len(text[pos:end].encode("utf-8"))
            byte_pos, char_pos = offset + length, end
        if length > MAX_FRAME_BYTES:
            raise HandOver
        index = frames + labels
        if "local" in element:
            labels += 1
            try:
                drain = getattr(label_event(element, index, "-"), "outcome", drain)
            except InputError:
                raise HandOver from None
        else:
            frames += 1
            kind = api_of(element)
            if detected is None:
                detected = kind
            if kind not in (detected, None):
                raise HandOver
        if frames > MAX_FRAMES_PER_CAPTURE or labels > MAX_LABELS_PER_PROJECTION:
            raise HandOver
        spans.extend((offset, length))
        sep = _NEXT.match(text, end)
        if sep is None:
            raise HandOver
        pos, done = sep.end(), sep.group(1) == "]"
    if pos != len(text) or detected is None:
        raise HandOver
    return Checked(spans, detected, frames, labels, drain)


def frame_template() -> dict[str, Any]:
    """FrameReceived's fields in declaration order with their defaults (the dict whose JSON
    is byte-for-byte the model's own serialization)."""
    return {name: field.default for name, field in FrameReceived.model_fields.items()}


#: The fields of a planned frame that change from frame to frame, and how each is written
#: into ``payload_format`` (``%b``: bytes already JSON; ``%d``: an int).
_FRAME_VARYING = {"native": b"%b", "kinds": b"%b", "index": b"%d", "offset": b"%d",
                  "length": b"%d"}


def payload_format(template: dict[str, Any],
                   varying: dict[str, bytes] = _FRAME_VARYING) -> bytes | None:
    """``to_json`` of a frame's fields as one bytes %-format over what varies, in the order
    of ``varying``: compact JSON is ``{`` + ``"key":value`` pairs joined by ``,`` +
    ``}``, so the constant pairs are serialized once and each frame is one formatting of its
    native's JSON (the only part that is not plain), its kinds and three ints -- the same
    bytes, a third less work.  None when a constant field will not serialize (then every
    frame goes through ``to_json`` of its fields, and the model, as before)."""
    if list(varying) != [name for name in template if name in varying]:
        return None  # the model's field order moved: keep the general path
    parts = []
    try:
        for name, value in template.items():
            key = to_json(name) + b":"
            parts.append(key + varying[name] if name in varying
                         else key + to_json(value).replace(b"%", b"%%"))
    except PydanticSerializationError:
        return None
    return b"{" + b",".join(parts) + b"}"


def plan_body(checked: Checked, data: bytes, *, attempt: str, trace: str, sha: str,
              body_prefix: str, label_event: Any) -> Iterator[Any]:
    """Pass 2: one event per element, produced as the store consumes them; element
    ``index`` gets the id ``body_prefix`` + ``index`` in 11 hex digits."""
    spans = checked.spans
    # the plain C scanner: pass 1 proved them strict (an attribute typeshed does not declare)
    scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
    feed = make_normalizer(checked.api).feed
    stream = attempt_stream(attempt)
    template = frame_template()
    template.update(type="frame.received", attempt_id=attempt, api=checked.api,
                    reader="ingest", capture_sha256=sha)
    form = payload_format(template)
    kinds_json: dict[tuple[str, ...], bytes] = {}
    fields_of = iter(spans)
    for index, (offset, length) in enumerate(zip(fields_of, fields_of)):
        element = scan(data[offset:offset + length].decode("utf-8"), 0)[0]
        if "local" in element:
            yield NewEvent(stream, label_event(element, index, attempt),
                           id=f"{body_prefix}{index:011x}", trace_id=trace)
            continue
        # ``feed``, not ``kinds``: the observations are lent to the ingest's decision,
        # which folds them instead of normalizing every frame a second time.
        observed = feed(element)
        kinds = (observed[0].kind,) if len(observed) == 1 \
            else tuple([o.kind for o in observed])
        fields = template.copy()  # item by item: ``update(**…)`` builds a dict to merge
        fields["native"] = element
        fields["kinds"] = kinds
        fields["index"] = index
        fields["offset"] = offset
        fields["length"] = length
        yield serialized_frame(form, fields, element, (cached_json(kinds_json, kinds), index,
                                                        offset, length),
                               stream, f"{body_prefix}{index:011x}", trace, observed)


def cached_json(cache: dict[Any, bytes], value: Any) -> bytes:
    """``to_json(value)`` for the few values frames repeat (their kinds, event names)."""
    encoded = cache.get(value)
    if encoded is None:
        encoded = cache[value] = to_json(value)
    return encoded


def serialized_frame(form: bytes | None, fields: dict[str, Any], native: Any, rest: tuple,
                     stream: str, event_id: str, trace: str, observed: Any) -> Any:
    """One planned frame: its payload ``form % (native's JSON, *rest)`` (or ``to_json`` of
    its ``fields`` without a form), or the model itself when pydantic's serializer refuses
    a value (a lone surrogate), which the model's own serialization keeps as an escape."""
    try:
        payload = to_json(fields) if form is None else form % (to_json(native), *rest)
    except PydanticSerializationError:
        return NewEvent(stream, FrameReceived(**fields), id=event_id, trace_id=trace)
    return SerializedEvent(stream, event_id, trace, "frame.received", payload, fields, observed)


class PlannedEvents:
    """The events of a plan: the few head events as models, then the body, generated each
    time it is iterated (never all in memory).  Supports ``len``, iteration and indexing
    into the head, which is all a caller of ``plan.events`` needs to append or inspect."""

    def __init__(self, head: list[NewEvent], body_count: int, body: Any) -> None:
        self.head = head
        self._count = body_count
        self._body = body  # a no-argument callable returning a fresh iterator

    def __len__(self) -> int:
        return len(self.head) + self._count

    def __iter__(self) -> Iterator[Any]:
        yield from self.head
        yield from self._body()

    def __getitem__(self, index: int) -> Any:
        if -len(self) <= index < 0:
            index += len(self)
        if 0 <= index < len(self.head):
            return self.head[index]
        for n, event in enumerate(self._body(), start=len(self.head)):
            if n == index:
                return event
        raise IndexError(index)


__all__ = ["Checked", "HandOver", "MAX_LABELS_PER_PROJECTION", "PlannedEvents",
           "SHALLOW_CHARS", "cached_json", "check_projection", "frame_template",
           "payload_format", "plan_body", "serialized_frame", "utf8_text"]
