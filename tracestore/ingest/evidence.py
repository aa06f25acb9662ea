"""The application's own evidence added to an ingest plan (pure: plan in, plan out).

Teams with logs rather than code hooks know facts the capture bytes do not show: the
attempt retried another one (``--retry-of``), the user pressed Stop after the app had
received N bytes (``--stop-after-byte``).  These transform the plan ``tracestore.ingest``
made — they add no decoding of their own — and work on its lazily generated body (a
large projection's events are never all in memory).

Ids stay deterministic, and the evidence is part of them: ingesting the same file into the
same attempt with the same evidence is a reported no-op, with different evidence it is
``attempt_exists`` (a retry is a fresh attempt, never an edit of a recorded one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tracestore.errors import InputError
from tracestore.events import FrameReceived, LocalStopped, NewEvent, TransportDrained
from tracestore.ingest.plan import IngestPlan, event_id

if TYPE_CHECKING:
    from tracestore.store.log import EventStore


class _EvidencedEvents:
    """``plan.events`` with the start replaced and a Stop inserted; re-iterable, like the
    plan's own event list, and indexable into its head."""

    def __init__(self, events: Any, started_at: int, started: NewEvent,
                 stop: NewEvent | None, stop_after: int | None) -> None:
        self._events, self._started_at, self._started = events, started_at, started
        self._stop, self._stop_after = stop, stop_after

    def __len__(self) -> int:
        return len(self._events) + (self._stop is not None)

    def __getitem__(self, index: int) -> Any:
        if index == self._started_at:
            return self._started
        if 0 <= index <= self._started_at + 1:
            return self._events[index]
        raise IndexError("only the plan's head events are indexable")

    def __iter__(self) -> Iterator[Any]:
        pending_stop = self._stop
        for index, new in enumerate(self._events):
            if index == self._started_at:
                new = self._started
            elif pending_stop is not None and _seen_after(new, self._stop_after):
                yield pending_stop
                pending_stop = None
            yield new
        if pending_stop is not None:
            yield pending_stop


def _seen_after(new: NewEvent, stop_after: int | None) -> bool:
    """Whether the app could not yet have seen ``new`` when it stopped at ``stop_after``."""
    event = new.event
    if isinstance(event, FrameReceived):
        end = (event.offset or 0) + (event.length or 0)
        return stop_after is not None and end > stop_after
    # The transport ends after everything the app read: a Stop comes before the drain.
    return isinstance(event, TransportDrained)


def with_app_evidence(plan: IngestPlan, *, retry_of: str | None = None,
                      stop_after_byte: int | None = None) -> IngestPlan:
    """The plan with ``retry_of`` on its ``attempt.started`` and a local Stop placed between
    the frames the app had wholly received within its first ``stop_after_byte`` bytes and
    the rest (frames are judged by where they end in the stored bytes)."""
    if retry_of is None and stop_after_byte is None:
        return plan
    if stop_after_byte is not None and stop_after_byte < 0:
        raise InputError("--stop-after-byte must be 0 or more", code="invalid_option")
    if retry_of is not None and retry_of == plan.attempt_id:
        raise InputError(f"attempt {plan.attempt_id!r} cannot retry itself",
                         code="invalid_option")
    key = f"{plan.sha256}|retry_of={retry_of}|stop_after_byte={stop_after_byte}"
    started_at = next(i for i in range(len(plan.events))
                      if plan.events[i].event.type == "attempt.started")
    head = plan.events[started_at]
    started = NewEvent(head.stream, head.event.model_copy(update={"retry_of": retry_of}),
                       id=event_id(plan.attempt_id, key, "started"), trace_id=head.trace_id)
    stop = None
    if stop_after_byte is not None:
        stop = NewEvent(head.stream, LocalStopped(attempt_id=plan.attempt_id, reader="ingest",
                                                  by="user"),
                        id=event_id(plan.attempt_id, key, "body"), trace_id=head.trace_id)
    events = _EvidencedEvents(plan.events, started_at, started, stop, stop_after_byte)
    return dataclasses.replace(plan, events=events)  # type: ignore[arg-type]


def check_retry_of(store: EventStore, trace_id: str, retry_of: str | None) -> None:
    """``--retry-of`` must name an attempt of the same trace already in the log."""
    if retry_of is None:
        return
    from tracestore.errors import NotFound
    from tracestore.events import attempt_stream

    first = store.read(stream=attempt_stream(retry_of), limit=1)
    if not first or first[0].trace_id != trace_id:
        raise NotFound(f"--retry-of names {retry_of!r}, which is not an attempt of trace "
                       f"{trace_id!r} (ingest the retry with --trace)", code="attempt_not_found",
                       attempt_id=retry_of)


#: Destinations an application may report (``progress`` is the fixed pre-release text).
APP_DESTINATIONS = ("progress", "ui", "history", "export", "copy")


def destination_event(attempt_id: str, destination: str, text: str, *,
                      readback: bool, observed_at: str | None = None,
                      cut_off: bool = False) -> Any:
    """``destination.written`` (source application) or ``destination.read_back``."""
    from tracestore.events import DestinationReadBack, DestinationWritten
    from tracestore.projections.semantics import sha256_text

    if destination not in APP_DESTINATIONS:
        raise InputError(f"unknown destination {destination!r}; expected one of "
                         f"{', '.join(APP_DESTINATIONS)}", code="unknown_destination")
    if not isinstance(text, str):
        raise InputError("destination text must be a str", code="invalid_text")
    if cut_off and (readback or destination != "ui"):
        raise InputError("only a ui write can be shown as cut off (the release policy lets a "
                         "stopped attempt's partial text be shown on the UI, marked as cut "
                         "off, and nowhere else)", code="cut_off_not_ui")
    if readback:
        return DestinationReadBack(attempt_id=attempt_id, destination=destination,  # type: ignore[arg-type]
                                   text=text, sha256=sha256_text(text), observed_at=observed_at)
    return DestinationWritten(attempt_id=attempt_id, destination=destination,  # type: ignore[arg-type]
                              text=text, sha256=sha256_text(text), source="application",
                              observed_at=observed_at, shown_as="cut_off" if cut_off else None)


def revise_task(store: EventStore, trace_id: str, rule: Any, *,
                by: str | None = None) -> tuple[int, int | None]:
    """Append ``task.revised`` (one more than the newest version) in one transaction.

    Returns ``(version, position)``; position is None when ``rule`` is already the rule in
    force (nothing appended).  Version 1 is what ``trace.opened`` held (even no rule).
    """
    from tracestore.errors import NotFound
    from tracestore.events import TaskRevised, trace_stream
    from tracestore.projections.release import rule_in_force

    outcome: dict[str, Any] = {}

    def build(view: Any) -> tuple[list[NewEvent], list[bytes]]:
        own = view.read(stream=trace_stream(trace_id))
        if not own:
            raise NotFound(f"no trace {trace_id!r} in the log", code="trace_not_found",
                           trace_id=trace_id)
        current = rule_in_force(own, trace_id)
        if current.rule == rule:
            outcome["version"] = current.version or 1
            return [], []
        outcome["version"] = (current.version or 1) + 1
        revised = TaskRevised(trace_id=trace_id, version=outcome["version"], task=rule, by=by)
        return [NewEvent(trace_stream(trace_id), revised, trace_id=trace_id)], []

    result = store.append_with(build)
    return outcome["version"], (result.positions[0] if result.positions else None)


__all__ = ["APP_DESTINATIONS", "check_retry_of", "destination_event", "revise_task",
           "with_app_evidence"]
