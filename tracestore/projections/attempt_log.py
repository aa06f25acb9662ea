"""Finding what an attempt is judged with in the log: its start, its trace's opening and
the trace's bindings (output contract, request binding), as of a position."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracestore.errors import NotFound
from tracestore.events import (
    AttemptStarted, ContractBound, RequestBound, StoredEvent, TraceOpened,
)


def visible(events: Sequence[StoredEvent], upto: int | None) -> Sequence[StoredEvent]:
    """The events judged: those at or before ``upto`` (all when ``None``)."""
    if upto is None:
        return events
    return [e for e in events if e.position <= upto]


def find_start(events: Sequence[StoredEvent], attempt_id: str) -> StoredEvent:
    for stored in events:
        if isinstance(stored.event, AttemptStarted) and stored.event.attempt_id == attempt_id:
            return stored
    raise NotFound(f"attempt {attempt_id!r} has no attempt.started event in the log",
                   code="attempt_not_found", attempt_id=attempt_id)


def find_trace(events: Sequence[StoredEvent], trace_id: str) -> TraceOpened | None:
    for stored in events:
        if isinstance(stored.event, TraceOpened) and stored.event.trace_id == trace_id:
            return stored.event
    return None


@dataclass(frozen=True)
class TraceBindings:
    """What a trace is bound to besides its task: output contract and request binding."""

    contract: Any = None
    "The loaded ``tracestore.contracts.model.Contract``, or None."
    binding: Mapping[str, Any] | None = None
    binding_sha256: str | None = None


def find_bindings(events: Sequence[StoredEvent], trace_id: str) -> TraceBindings:
    """The trace's first ``contract.bound`` and ``request.bound`` (ingest refuses a second,
    different one, so the first is the only one)."""
    contract = request = None
    for stored in events:
        event = stored.event
        # The type test first: ``getattr`` of a field a pydantic model lacks is slow, and
        # most events (frames) have no trace id.
        if (event.__class__ is not ContractBound and event.__class__ is not RequestBound
                or event.trace_id != trace_id):
            continue
        if contract is None and isinstance(event, ContractBound):
            # Only a bound trace loads the contract models (~20 ms of a ``release``).
            from tracestore.contracts.model import cached_contract

            contract = cached_contract(event.sha256, event.contract)
        elif request is None and isinstance(event, RequestBound):
            request = event
    return TraceBindings(contract, request.binding if request else None,
                         request.sha256 if request else None)
