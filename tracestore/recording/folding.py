"""A recorder's decision planners fed what its writer has just appended (``rows.Row``),
never read back from the log nor parsed again.

A frame's observations were made by the attempt's ``LiveCapture`` normalizer, a twin of
the one its release judge's fold would run (the same API, fed the same frames in order):
when the judge is the plain ``ReleaseJudge`` over a fold that needs nothing but them and
has normalized no frame itself, every frame of the attempt is folded from them
(``ReleaseJudge.feed_observed``, as the ingest's ``PlanDecisions`` does) -- no model, no
second normalization.  Anything else is fed as a stored event, as before.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from tracestore.events import StoredEvent
from tracestore.ingest.decisions import READ_BATCH, DecisionPlanner, follows_on, trace_span
from tracestore.projections.release import ReleaseJudge

_LEAN: weakref.WeakSet[ReleaseJudge] = weakref.WeakSet()
"Judges folding their attempt's frames from lent observations (each of them, from its first)."


def _lean(judge: ReleaseJudge) -> bool:
    """Whether ``judge`` folds lent observations: from its first frame on, or never."""
    if judge in _LEAN:
        return True
    if type(judge) is ReleaseJudge and judge.fold.folds_observed and not judge.fold.frames:
        _LEAN.add(judge)
        return True
    return False


def feed_rows(store: Any, planner: DecisionPlanner, written: Sequence[tuple[int, Any]],
              span: tuple[Any, int, int] | None = None) -> None:
    """Feed ``planner`` the rows ``(position, row)`` its writer has just appended, in
    position order; the trace's events before them that it has not seen yet (another
    writer's) are read first, so the order stays the log's (``feed_written``'s rule) --
    unless ``span`` (the appends' ``(trace, version before, version after)``) shows they
    follow on from what the planner has seen: then nothing is read."""
    if not written:
        return
    if not follows_on(planner, span):
        planner.head = None
        if planner.stale and planner.position == 0:
            planner.reset(store.read(stream=planner.stream))
        for stored in store.iter_events(trace_id=planner.trace_id, after=planner.position,
                                        upto=written[0][0] - 1, batch_size=READ_BATCH):
            planner.feed(stored)
            if planner.stale:
                return  # the rule or bindings changed: ``catch_up`` starts again from the log
    _fold_rows(planner, written)
    planner.head = None if planner.stale or span is None else span[2]


def _fold_rows(planner: DecisionPlanner, written: Sequence[tuple[int, Any]]) -> None:
    judges = planner.judges
    for position, row in written:
        frame = row.frame
        if frame is not None and position > planner.position:
            judge = judges.get(row.made[0].attempt_id)
            if judge is None or _lean(judge):
                # A frame concerns its own attempt's judge alone: with none (decided
                # already), the position is all ``DecisionPlanner.feed`` keeps of it.
                planner.position = position
                if judge is not None:
                    judge.feed_observed(position, frame.native, frame.observed)
                continue
        # recorded_at None: a stand-in the planner reads, not a row (it has no time)
        planner.feed(StoredEvent(position, row.id, row.stream, 0, row.type, 0,
                                 None,  # type: ignore[arg-type]
                                 row.trace_id, row.event, ""))
        if planner.stale:
            return


def seed_new_trace(planner: DecisionPlanner, result: Any, opened: Sequence[Any]) -> None:
    """A trace its writer has just opened (``result``, the append of ``opened``, found it
    holding no row): its planner starts from those events as written, reading nothing.
    Anything else (a trace joined, an id already stored) leaves the planner to read."""
    span = trace_span(result, planner.trace_id)
    if span is None or span[1] != 0 or planner.position != 0 or \
            len(result.positions) != len(opened) or result.skipped_ids:
        return
    versions: dict[str, int] = {}
    stored = []
    for position, new in zip(result.positions, opened):
        versions[new.stream] = versions.get(new.stream, 0) + 1
        # recorded_at None: a stand-in the planner reads, not a row (it has no time)
        stored.append(StoredEvent(position, new.id, new.stream, versions[new.stream],
                                  new.event.type, 0, None,  # type: ignore[arg-type]
                                  new.trace_id, new.event, ""))
    planner.reset(stored)
    for event in stored:
        planner.feed(event)
    planner.head = None if planner.stale else span[2]


__all__ = ["feed_rows", "seed_new_trace"]
