"""Frame types produced by the wire decoders.

A frame is the smallest unit of a capture that the provider layer interprets: one SSE
event, one NDJSON line, one JSON-array element, one AWS event-stream message.  Each frame
carries ``offset`` and ``length`` so that ``capture[offset:offset + length]`` gives back
the exact bytes it came from: the event log stores captures content-addressed and a
reviewer must always be able to go from a decoded frame back to the evidence.

Frames are frozen, slotted dataclasses: they are values (compared in tests across chunk
boundaries), cheap to create in bulk, and must not be edited after decoding.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Union

#: A decoded AWS event-stream header value.  Timestamps (type 8) are kept as the raw
#: integer milliseconds since the epoch (as botocore does) so decoding never fails on an
#: out-of-range date; UUIDs (type 9) become ``uuid.UUID``.
HeaderValue = Union[bool, int, bytes, str, uuid.UUID]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched server-sent event (WHATWG event-stream interpretation).

    ``event`` is ``"message"`` when the block had no ``event`` field (or an empty one), as
    the spec says; ``event_field_present`` tells whether the wire actually named it.
    ``id`` is the stream's *last event ID* at dispatch (it persists across events, per
    spec), ``None`` while no ``id`` field has been seen.  ``retry`` is the valid ``retry``
    value given inside this event's block, else ``None``.
    """

    offset: int
    length: int
    event: str
    data: str
    id: str | None
    retry: int | None
    event_field_present: bool


@dataclass(frozen=True, slots=True)
class TextFrame:
    """One NDJSON line or one top-level JSON-array element, as text (not parsed)."""

    offset: int
    length: int
    text: str


@dataclass(frozen=True, slots=True)
class EventStreamMessage:
    """One ``application/vnd.amazon.eventstream`` message with both CRCs verified."""

    offset: int
    length: int
    headers: dict[str, HeaderValue]
    payload: bytes

    def _str_header(self, name: str) -> str | None:
        # Only string-typed values are meaningful for the ':'-prefixed protocol headers;
        # anything else is reported as absent rather than guessed at.
        value = self.headers.get(name)
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str | None:
        """``:message-type``: ``event``, ``exception`` or ``error``."""
        return self._str_header(":message-type")

    @property
    def event_type(self) -> str | None:
        """``:event-type``: the union member name of an event (e.g. ``messageStop``)."""
        return self._str_header(":event-type")

    @property
    def exception_type(self) -> str | None:
        """``:exception-type``: the modeled exception member name."""
        return self._str_header(":exception-type")

    @property
    def content_type(self) -> str | None:
        """``:content-type`` of the payload (``application/json`` for Bedrock)."""
        return self._str_header(":content-type")

    @property
    def error_code(self) -> str | None:
        """``:error-code`` of an unmodeled error message."""
        return self._str_header(":error-code")

    @property
    def error_message(self) -> str | None:
        """``:error-message`` of an unmodeled error message."""
        return self._str_header(":error-message")


@dataclass(frozen=True, slots=True)
class Truncation:
    """The input ended inside a frame: the unfinished bytes and why.

    ``code`` is ``truncated_frame`` (a frame was cut) or ``truncated_utf8`` (the input
    ended inside a multi-byte UTF-8 character).  A truncation is not an exception: the
    frames before it are valid evidence, and the attempt's projection decides what an
    unfinished stream means.
    """

    offset: int
    length: int
    code: str


Frame = Union[SSEEvent, TextFrame, EventStreamMessage]


# Fast constructors for the decoders' hot loops.  A frozen dataclass's generated __init__
# goes through object.__setattr__ by name for every field (~0.9 us for SSEEvent), which
# alone would cost more than the rest of SSE decoding.  Two cheaper ways build the very
# same object (type, equality, hash and repr unchanged; tests/test_wire_api.py checks):
#
# * SSEEventDraft has exactly SSEEvent's slots but is not frozen, so its fields are filled
#   with plain attribute stores (which the interpreter specialises for slots), and then
#   ``draft.__class__ = SSEEvent`` (allowed: same slots, same base).  About half the cost
#   of seven descriptor calls; the SSE hot loops inline it.
# * Calling the slot descriptors directly (``_text_slots``), for the other frame types.
#
# Only the wire decoders use these; everyone else calls the normal constructor.
_new = object.__new__
_text_slots = tuple(TextFrame.__dict__[name].__set__ for name in TextFrame.__slots__)


class SSEEventDraft:
    """An ``SSEEvent`` being filled in; set every slot, then assign ``__class__``."""

    __slots__ = SSEEvent.__slots__
    offset: int
    length: int
    event: str
    data: str
    id: str | None
    retry: int | None
    event_field_present: bool


def new_sse_event(offset: int, length: int, event: str, data: str, id: str | None,
                  retry: int | None, event_field_present: bool) -> SSEEvent:
    """Same as ``SSEEvent(...)``, faster (see the comment above)."""
    frame = _new(SSEEventDraft)
    frame.offset = offset
    frame.length = length
    frame.event = event
    frame.data = data
    frame.id = id
    frame.retry = retry
    frame.event_field_present = event_field_present
    frame.__class__ = SSEEvent  # type: ignore[assignment]
    return frame  # type: ignore[return-value]


def new_text_frame(offset: int, length: int, text: str) -> TextFrame:
    """Same as ``TextFrame(...)``, faster (see the comment above)."""
    s_offset, s_length, s_text = _text_slots
    frame = _new(TextFrame)
    s_offset(frame, offset)
    s_length(frame, length)
    s_text(frame, text)
    return frame

__all__ = ["EventStreamMessage", "Frame", "HeaderValue", "SSEEvent", "TextFrame", "Truncation"]
