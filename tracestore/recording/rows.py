"""The live recorder's events as rows to append: each payload's canonical bytes made here,
once, and no pydantic model per frame (a model per frame made recording cost about
what the traffic itself costs).

A frame's ``frame.received`` payload is one bytes %-formatting of a template serialized
once per attempt (the ingest's fast path does the same, ``ingest/fast.py``): compact JSON
is ``{`` + ``"key":value`` pairs joined by ``,`` + ``}``, so the constant pairs are written
once and each frame fills in its native's JSON, its kinds, event name, index, segment and
span -- exactly the bytes ``canonical_payload`` writes for the model (a test compares them
on every real capture).  A native the fast serializer refuses (a lone surrogate) goes
through the model, as before.  The other events (a start, a segment, a drain …) are few:
their models are built and validated as always, then serialized once.

``Row`` is what ``EventStore.append_fresh_groups`` takes; it keeps what the decision
planner folds (the model, or a frame's fields and observations) so nothing is parsed back.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from tracestore.events import FrameReceived, new_event_id
from tracestore.store.append_types import canonical_payload


class Row:
    """One event to append: stream, fresh id, trace, type and canonical payload bytes."""

    __slots__ = ("stream", "id", "trace_id", "type", "payload", "model", "frame", "made")

    def __init__(self, stream: str, id: str, trace_id: str | None, type: str, payload: bytes,
                 model: Any = None, frame: Any = None, made: Any = None) -> None:
        self.stream, self.id, self.trace_id = stream, id, trace_id
        self.type, self.payload = type, payload
        self.model = model
        self.frame = frame
        "A frame's ``stream.LiveFrame`` (its native and the observations lent to the fold)."
        self.made = made
        "A frame's ``(FrameRows, segment sha256, segment offset)``: its model, on demand."

    @property
    def event(self) -> Any:
        """The event's model (a frame's built from the values its payload was written
        from, without validating them again)."""
        if self.model is None:
            rows, sha, segment_offset = self.made
            self.model = FrameReceived.model_construct(
                **rows.fields(self.frame, sha, segment_offset))
        return self.model

    def __repr__(self) -> str:
        return f"Row({self.stream!r}, {self.type!r}, id={self.id!r})"


def fresh_ids(count: int) -> list[str]:
    """``count`` fresh event ids: one drawn as ``new_event_id`` draws (the clock, then 64
    random bits), then its successors -- one clock read per append, not per frame."""
    base = int(new_event_id(), 16)
    return [f"{base + n:032x}" for n in range(count)]


def model_row(stream: str, event_id: str, trace_id: str | None, event: Any) -> Row:
    """A row for an event model (validated as it was built): serialized once, here."""
    return Row(stream, event_id, trace_id, event.type, canonical_payload(event), event)


#: How each field of a frame that changes from frame to frame is written into the
#: template (``%b``: bytes already JSON; ``%d``: an int).
_VARYING = {"native": b"%b", "kinds": b"%b", "event_name": b"%b", "index": b"%d",
            "capture_sha256": b"%b", "offset": b"%d", "length": b"%d"}


class FrameRows:
    """One attempt's ``frame.received`` rows (its attempt id, API and reader are fixed)."""

    def __init__(self, stream: str, trace_id: str, attempt_id: str, api: str,
                 reader: str) -> None:
        self.stream, self.trace_id, self.attempt_id = stream, trace_id, attempt_id
        self.constant = {"attempt_id": attempt_id, "api": api, "reader": reader}
        self.template = self._template()
        self._json: dict[Any, bytes] = {}  # kinds, event names, segment hashes, as JSON

    def _template(self) -> bytes | None:
        """The payload as one %-format over ``_VARYING``, in the model's field order; None
        when the model's fields are not as this expects (then every frame is a model)."""
        fields = FrameReceived.model_fields
        if getattr(FrameReceived, "OMIT_NONE", None) or not set(_VARYING) <= set(fields):
            return None
        values = {name: field.default for name, field in fields.items()}
        values.update(type="frame.received", **self.constant)
        parts = []
        try:
            for name, value in values.items():
                key = to_json(name) + b":"
                parts.append(key + _VARYING[name] if name in _VARYING
                             else key + to_json(value).replace(b"%", b"%%"))
        except PydanticSerializationError:
            return None
        return b"{" + b",".join(parts) + b"}"

    def fields(self, frame: Any, sha: str, segment_offset: int) -> dict[str, Any]:
        """A frame's field values, as its model takes them."""
        return {"type": "frame.received", **self.constant, "native": frame.native,
                "kinds": frame.kinds, "event_name": frame.event_name, "index": frame.index,
                "capture_sha256": sha, "offset": frame.offset - segment_offset,
                "length": frame.length}

    def _as_json(self, value: Any) -> bytes:
        found = self._json.get(value)
        if found is None:
            found = self._json[value] = to_json(value)
        return found

    def rows(self, frames: list[Any], ids: list[str], sha: str, segment_offset: int,
             ) -> list[Row]:
        """The rows of ``frames`` (``stream.LiveFrame``) in the segment ``sha`` that
        starts at ``segment_offset`` of the stream."""
        out = []
        template, as_json = self.template, self._as_json
        stream, trace_id = self.stream, self.trace_id
        sha_json, made = as_json(sha), (self, sha, segment_offset)
        for frame, event_id in zip(frames, ids):
            payload = None
            if template is not None:
                try:
                    payload = template % (to_json(frame.native), as_json(frame.kinds),
                                          as_json(frame.event_name), frame.index, sha_json,
                                          frame.offset - segment_offset, frame.length)
                except PydanticSerializationError:  # e.g. a lone surrogate: the model's
                    pass
            if payload is None:
                model = FrameReceived(**self.fields(frame, sha, segment_offset))
                out.append(Row(stream, event_id, trace_id, "frame.received",
                               canonical_payload(model), model, frame, made))
                continue
            out.append(Row(stream, event_id, trace_id, "frame.received", payload, None,
                           frame, made))
        return out


__all__ = ["FrameRows", "Row", "fresh_ids", "model_row"]
