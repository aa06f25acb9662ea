"""Opening (or joining) a trace for a ``Recorder``: its opening events appended, or, when
the trace exists, checked against what it holds.

A new trace is the usual case (a service opens one per user question), so its opening is
appended first expecting an empty trace stream: on PostgreSQL that is BEGIN, one message
(the trace's lock, its positions, its head, the streams' versions and stored ids), the
insert, COMMIT.  When the trace exists the append is refused (nothing written) and the
trace is joined as before: its task rule and bindings are checked under its lock, and
only the bindings it lacks are appended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracestore.errors import ExpectedVersionConflict, InputError
from tracestore.events import NewEvent, trace_stream
from tracestore.ingest.plan import check_binding_conflicts
from tracestore.recording.folding import seed_new_trace

if TYPE_CHECKING:
    from tracestore.recording.recorder import Recorder


def open_trace(recorder: Recorder, trace_id: str, opening: list[NewEvent],
               rule: Any) -> None:
    """Append ``opening`` (the ``trace.opened`` event, then its bindings) for a new trace,
    or join the existing ``trace_id`` (refused with ``trace_conflict`` when its task rule
    differs from ``rule``).  A new trace's planner starts from its opening as written."""
    stream = trace_stream(trace_id)
    try:
        result = recorder.store.append(opening, expected_versions={stream: 0})
    except ExpectedVersionConflict:
        _join(recorder, trace_id, opening[1:], rule)
        return
    seed_new_trace(recorder.planner(trace_id), result, opening)


def _join(recorder: Recorder, trace_id: str, bound: list[NewEvent], rule: Any) -> None:
    stream = trace_stream(trace_id)

    def build(view: Any) -> tuple[list[NewEvent], list[bytes]]:
        first = view.read(stream=stream, limit=1)
        known = first[0].event
        if rule is not None and known.task != rule:
            raise InputError(f"trace {trace_id!r} already exists with another task rule; "
                             "`tracestore task` appends a new version",
                             code="trace_conflict", trace_id=trace_id)
        if bound:
            check_binding_conflicts(view.read(stream=stream), bound, trace_id)
        return [e for e in bound if not view.has_event(e.id)], []

    recorder.store.append_with(build, traces=[trace_id])


__all__ = ["open_trace"]
