"""What every ingest plan shares: the plan itself, stable event ids, origins, contract and
request bindings, and the envelope events (trace opened, bindings, attempt started, capture
stored) that precede an input's own events.  Pure: data in, data out.

Event ids are derived from (attempt, content hash, index), so ingesting the same file into
the same attempt twice is a reported no-op rather than a duplicate.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted,
    CaptureStored,
    ContractBound,
    NewEvent,
    RequestBound,
    TaskRule,
    TraceOpened,
    attempt_stream,
    trace_stream,
)

if TYPE_CHECKING:  # the fast path (its JSON scanner, the wire limits) is not needed to
    # derive an id: ``release`` imports this module for ``id_prefix`` alone.
    from tracestore.ingest.fast import PlannedEvents

_ID_NAMESPACE = uuid.UUID("5b0c7f3e-29a4-4c1e-9d8e-7a1f0c2b4d6e")
DRAIN_OUTCOMES = ("clean", "eof", "error", "reset")

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
    "A projection's body is generated while it is appended (see ``ingest.fast``)."
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


def envelope(attempt: str, trace: str, api: str, sha: str, size: int, framing: str,
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
