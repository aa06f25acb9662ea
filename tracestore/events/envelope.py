"""The envelope side of events: ids, events to append, events as stored, stream names."""

from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass
from typing import Any

from tracestore.errors import InputError

_id_source = random.Random(random.SystemRandom().getrandbits(128))


def new_event_id() -> str:
    """A fresh event id: 64 bits of time then 64 random bits, as 32 hex digits.

    Time first (the UUIDv7 idea) makes ids of one ingest sort together, so inserting them
    into the unique id index appends to its B-tree instead of touching random pages; with
    64 random bits after the nanosecond clock, two ids never collide in practice.  A PRNG
    seeded once from the OS is enough: ids must be unique, not secret.
    """
    return f"{time.time_ns():016x}{_id_source.getrandbits(64):016x}"


class NewEvent:
    """An event ready to append: payload model, target stream, and its id.

    A plain slotted class rather than a frozen dataclass: one ingest builds 100k of these,
    and frozen-dataclass construction was the largest single cost of an ingest.
    """

    __slots__ = ("stream", "event", "id", "trace_id", "fresh_id")

    def __init__(self, stream: str, event: Any, id: str = "", trace_id: str | None = None) -> None:
        self.stream = stream
        self.event = event
        # A freshly drawn 128-bit random id cannot already be stored, so the store may skip
        # its idempotency lookup; ids given by the caller are always checked.
        self.fresh_id = not id
        self.id = id or new_event_id()
        self.trace_id = trace_id
        for name, value in (("stream", stream), ("id", self.id), ("trace_id", trace_id)):
            # Ids and stream names are joined with a separator in the hash chain and shown
            # in terminals: printable text only.
            if value is not None and (not value or not value.isprintable()):
                raise InputError(f"{name} {value!r} must be non-empty printable text",
                                 code="invalid_identifier")

    def __repr__(self) -> str:
        return f"NewEvent({self.stream!r}, {self.event!r}, id={self.id!r})"


class SerializedEvent:
    """An event to append whose payload is already its canonical JSON bytes.

    The bulk ingest path builds these instead of models: a million ``FrameReceived``
    models cost more than the rest of an ingest.  The payload must be exactly what
    ``canonical_payload`` writes for the model (tests check it); ``event`` rebuilds the
    model on demand for callers that inspect a plan.
    """

    __slots__ = ("stream", "id", "trace_id", "type", "payload", "fields", "observed")
    fresh_id = False

    def __init__(self, stream: str, id: str, trace_id: str | None, type: str,
                 payload: bytes, fields: dict[str, Any] | None = None,
                 observed: Any = None) -> None:
        self.stream, self.id, self.trace_id = stream, id, trace_id
        self.type, self.payload = type, payload
        self.fields = fields
        "The validated field values the payload was serialized from, when the planner lent them."
        self.observed = observed
        """A frame's observations as the planner's normalizer made them (its kinds are the
        payload's), when it lent them: the ingest's decision folds them, never normalizing
        the frame again (``tracestore.ingest.decide``)."""

    @property
    def event(self) -> Any:
        import json

        from tracestore.events.codec import parse_event

        return parse_event(json.loads(self.payload))

    def __repr__(self) -> str:
        return f"SerializedEvent({self.stream!r}, {self.type!r}, id={self.id!r})"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as recorded: the payload model plus the envelope the store assigned."""

    position: int
    id: str
    stream: str
    version: int
    type: str
    schema_version: int
    recorded_at: dt.datetime
    trace_id: str | None
    event: Any
    hash: str

    @property
    def attempt_id(self) -> str | None:
        return getattr(self.event, "attempt_id", None)


def attempt_stream(attempt_id: str) -> str:
    return f"attempt:{attempt_id}"


def trace_stream(trace_id: str) -> str:
    return f"trace:{trace_id}"


def review_stream(template: str, attempt_id: str) -> str:
    return f"review:{template}:{attempt_id}"
