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


class DecisionFold:
    """The ``then`` of a recorder append that may make decisions final (a drain, a Stop,
    a decisive frame, a start that supersedes): inside the append's transaction, under its
    trace's lock, the trace's planner folds the rows just written and the decisions they
    made final are written in the same transaction -- no transaction of their own.

    Only when the rows follow on from what the planner has seen (``follows_on``): the
    planner then knows the whole trace, so what it decides is what a fresh read would, and
    the trace stream (its rule) cannot have moved unseen.  Otherwise it writes nothing and
    the decision is recorded after the commit, as before.  ``settle`` says afterwards
    whether the planner may be kept (it was fed rows of a transaction that committed)."""

    def __init__(self, store: Any, planner: DecisionPlanner, batch: Sequence[Any],
                 room: int) -> None:
        self.store, self.planner, self.batch, self.room = store, planner, batch, room
        self.calls = 0
        self.fed = False
        self.due: list[Any] = []

    def __call__(self, results: list[Any]) -> list[Any]:
        from tracestore.recording.rows import model_row

        self.calls += 1
        (outcome,) = results
        span = trace_span(outcome, self.planner.trace_id)
        if self.calls > 1 or not follows_on(self.planner, span):
            return []
        feed_rows(self.store, self.planner, list(zip(outcome.positions, self.batch)), span)
        self.fed = True
        due = self.planner.missing()
        if len(due) > self.room:
            return []  # recorded after the commit, in a transaction of their own
        self.due = due
        return [model_row(new.stream, new.id, new.trace_id, new.event) for new in due]

    def settle(self, outcome: Any) -> bool:
        """After the append returned ``outcome``: True when the planner holds exactly the
        committed rows and decisions (it then learns the decisions' positions); False when
        it must be dropped (fed rows of a transaction that did not commit)."""
        if not self.fed:
            return True
        if self.calls != 1 or not outcome.then_ran:
            return False
        planner = self.planner
        for position, new in zip(outcome.followed, self.due):
            # recorded_at None: a stand-in the planner reads, not a row (it has no time)
            planner.feed(StoredEvent(position, new.id, new.stream, 0, new.event.type, 0,
                                     None,  # type: ignore[arg-type]
                                     new.trace_id, new.event, ""))
        span = trace_span(outcome, planner.trace_id)
        planner.head = None if planner.stale or span is None else span[2]
        return True


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


__all__ = ["DecisionFold", "feed_rows", "seed_new_trace"]
