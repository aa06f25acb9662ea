"""The immutable event vocabulary.

Each event kind is a pydantic model discriminated on a literal ``type``.  The type names are
stable strings (``frame.received``), never Python paths, because they are stored forever.
Every kind has a ``SCHEMA_VERSION``; when a kind's shape changes, bump it and add an upcaster
to ``UPCASTERS`` so old rows still load.

A ``StoredEvent`` is an event as the log holds it: its payload model plus the envelope the
store assigned (global position, stream, stream version, recorded-at time, hash).
Projections take ``StoredEvent`` sequences and nothing else.

The package owns the vocabulary and nothing else (it imports only ``errors``).  This
``__init__`` is its public face; the code lives by concern in ``models`` (the kinds),
``codec`` (versions, validation, JSON) and ``envelope`` (ids, NewEvent, StoredEvent,
stream names).  Import from ``tracestore.events``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracestore.events.codec import (
    SCHEMA_VERSIONS, UPCASTERS, parse_event, parse_event_json, to_json_bytes, upcast,
)
from tracestore.events.envelope import (
    NewEvent, SerializedEvent, StoredEvent, attempt_stream, new_event_id, review_stream,
    trace_stream,
)
from tracestore.events.models import (
    ANSWER_DESTINATIONS, EVENT_TYPES, MODELS, AttemptStarted, CaptureStored, ContractBound,
    Destination, DrainOutcome, FrameReceived, FrameRejected, LocalStopped, ReleaseDecided,
    RequestBound, SemanticJudged, TaskRevised, TaskRule, TraceOpened, TransportDrained,
)

if TYPE_CHECKING:  # defined in events.more_models, loaded on first use (see models.py)
    from tracestore.events.models import (
        AgentMode, CaptureSegment, DestinationReadBack, DestinationWritten, Event,
        EvidenceAttached, ModelCalled, ModelDecision, ReviewApproved, ReviewerAdded,
        ReviewFieldSet, RunFinished, RunGraded, RunOpened, StoreSetting, ToolObserved,
    )


def __getattr__(name: str) -> Any:
    from tracestore.events import models

    if name in models.MORE_MODELS or name == "Event":
        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ANSWER_DESTINATIONS", "EVENT_TYPES", "MODELS", "SCHEMA_VERSIONS", "UPCASTERS",
    "AgentMode", "AttemptStarted", "CaptureSegment", "CaptureStored", "ContractBound",
    "Destination", "DestinationReadBack", "DestinationWritten", "DrainOutcome", "Event",
    "FrameReceived", "FrameRejected", "LocalStopped", "ModelCalled", "ModelDecision",
    "NewEvent", "ReleaseDecided", "RequestBound", "ReviewApproved", "ReviewFieldSet",
    "RunFinished", "RunGraded", "RunOpened", "SemanticJudged", "SerializedEvent",
    "StoredEvent", "TaskRevised", "TaskRule", "ToolObserved", "TraceOpened",
    "TransportDrained", "EvidenceAttached", "ReviewerAdded", "StoreSetting", "attempt_stream", "new_event_id", "parse_event", "parse_event_json",
    "review_stream", "to_json_bytes", "trace_stream", "upcast",
]
