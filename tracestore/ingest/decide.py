"""An ingest's release decisions, derived from its plan inside its ONE transaction.

``tracestore ingest`` used to append the frames in one transaction and, in a second, read
the whole trace back, parse every event again and append the ``release.decided`` the plan
already implied.  A crash between the two left an attempt without its decision for good
(re-running the ingest was a no-op), and the read-back was over a third of an ingest.

``PlanDecisions`` is a store ``Tap`` (``EventStore.append_with(..., tap=)``):

* **before** the plan is written (``prepare``, called by the caller's builder) it reads the
  trace's prior state, which is small: the trace stream (opening, task versions, bindings)
  and the trace's ``attempt.started``/``release.decided`` rows; an older attempt still
  undecided (a new attempt will supersede it) has its own events read as well;
* **while** the plan is written it folds each event the store writes (``written``): the
  model the plan built (a lazily planned frame lends its fields, never parsed back);
* **then** it hands the store the ``semantic.judged``/``release.decided`` events now due,
  appended in the same transaction: all or nothing.

When nothing of an attempt was written (the input is already in the store) and its
decision is missing -- a store left so by an older version's crash -- the decision is
planned from a read of the trace instead, so re-running the ingest repairs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracestore.events import (
    SCHEMA_VERSIONS, AttemptStarted, FrameReceived, NewEvent, SerializedEvent, StoredEvent, attempt_stream,
    trace_stream,
)
from tracestore.projections.release import ReleaseJudge, rule_in_force
from tracestore.ingest.decisions import DecisionPlanner, decision_id
from tracestore.store.reads import ROW_COLUMNS, _stored_from_row


class PlanDecisions:
    """The decisions one append of ingest plans makes final (see the module docstring).

    ``attempts`` maps each trace the plan writes to the attempts the plan holds in it.
    """

    def __init__(self, attempts: Mapping[str, Sequence[str]]) -> None:
        self.attempts = {trace: tuple(ids) for trace, ids in attempts.items()}
        self.planners: dict[str, DecisionPlanner] = {}
        self.started: set[str] = set()
        "Attempts of the plan whose ``attempt.started`` was written by this append."
        self._older: dict[str, list[StoredEvent]] = {}
        self._recorded_at: Any = None
        self._lean: dict[str, ReleaseJudge] = {}
        "Attempts whose frames are folded from the plan's observations: their judge."
        self._candidates: dict[str, ReleaseJudge] = {}
        self._lean_streams: set[str] = set()
        self._unsure: set[str] = set()
        "Traces whose decisions are taken from a read at the end (see ``written``)."

    # -- before the plan is written ----------------------------------------------------
    def prepare(self, view: Any) -> None:
        """Read each trace's prior state (never an event of the new attempts: none is
        written yet).  Call from the ``append_with`` builder."""
        import datetime as dt

        self._recorded_at = dt.datetime.fromisoformat(view.recorded_at)
        for trace in self.attempts:
            planner = DecisionPlanner(trace, view.read(stream=trace_stream(trace)))
            planner.position = view.head_position
            self.planners[trace] = planner
            self._older[trace] = self._undecided_older(view, planner)

    def _undecided_older(self, view: Any, planner: DecisionPlanner) -> list[StoredEvent]:
        """The events of the trace's earlier attempts not yet decided under the rule in
        force (the next attempt.started supersedes them), in position order."""
        mark = view.store._mark
        rows = view.conn.exec_driver_sql(
            f"SELECT {ROW_COLUMNS} FROM ts_events WHERE trace_id = {mark} "
            f"AND type IN ({mark}, {mark}) ORDER BY position",
            (planner.trace_id, "attempt.started", "release.decided")).all()
        starts: list[StoredEvent] = []
        decided: set[str] = set()
        for stored in map(_stored_from_row, rows):
            if stored.type == "release.decided":
                if stored.event.rule_version == planner.rule.version:
                    decided.add(stored.event.attempt_id)
            elif stored.event.trace_id == planner.trace_id:
                starts.append(stored)
        open_ = [s.event.attempt_id for s in starts if s.event.attempt_id not in decided]
        if not open_:
            return []
        found = {s.position: s for s in starts}
        for attempt_id in open_:
            for stored in view.read(stream=attempt_stream(attempt_id)):
                found[stored.position] = stored
        return [found[p] for p in sorted(found)]

    def _judge_older(self, planner: DecisionPlanner) -> None:
        """Judges for the trace's undecided earlier attempts, fed their own events (and
        the trace's later starts): the plan's attempt.started may supersede them."""
        older = self._older.pop(planner.trace_id, [])
        for start in older:
            event = start.event
            if not isinstance(event, AttemptStarted) or event.attempt_id in planner.judges:
                continue
            judge = ReleaseJudge.for_attempt([*planner.trace_events, start], event.attempt_id,
                                             planner.rule)
            for stored in older:
                judge.feed(stored)
            if not (judge.decided and (event.attempt_id, planner.rule.version)
                    in planner.recorded):
                planner.judges[event.attempt_id] = judge

    # -- while the plan is written (the store calls these) -------------------------------
    def written(self, position: int, version: int, new: Any, digest: str) -> None:
        planner = self.planners.get(new.trace_id)
        if planner is None:
            return
        if new.__class__ is SerializedEvent and new.observed is not None \
                and (fields := new.fields) is not None:
            # A frame the plan normalized: folded from the plan's own data (no model, no
            # stored event, no second normalization).
            attempt_id = fields["attempt_id"]
            lean = self._lean.get(attempt_id) or self._promote(attempt_id)
            if lean is not None and planner.judges.get(attempt_id) is lean:
                planner.position = position  # all ``DecisionPlanner.feed`` keeps of a frame
                lean.feed_observed(position, fields["native"], new.observed)
                # Folded: the lent fields and observations are not needed again (the store
                # keeps only the payload), so a 5,000-row chunk does not hold its parsed
                # natives until the chunk is inserted.
                new.fields = new.observed = None
                return
        elif new.stream in self._lean_streams and (
                new.type if new.__class__ is SerializedEvent else new.event.type
        ) == "frame.received":
            # A frame of a lean attempt the plan lent no observations for (a model the
            # serializer refused): the fold cannot take it, so ``then`` decides the trace
            # from a read instead.
            self._unsure.add(new.trace_id)
        if new.__class__ is SerializedEvent:
            event = _model_of(new)
            type_name = new.type
        else:
            event = new.event
            type_name = event.type
        stored = StoredEvent(position, new.id, new.stream, version, type_name,
                             SCHEMA_VERSIONS[type_name],
                             self._recorded_at, new.trace_id, event, digest)
        if new.stream == planner.stream:  # the plan's trace opening or bindings
            planner.trace_events.append(stored)
            planner.trace_version = version
            planner.rule = rule_in_force(planner.trace_events, planner.trace_id)
            planner.position = position
            return
        if isinstance(event, AttemptStarted):
            self._judge_older(planner)
            if event.attempt_id in self.attempts.get(planner.trace_id, ()):
                self.started.add(event.attempt_id)
                planner.feed(stored)
                self._lean_judge(planner, event.attempt_id)
                return
        planner.feed(stored)

    def _lean_judge(self, planner: DecisionPlanner, attempt_id: str) -> None:
        """The plan's attempt may be folded from the plan's observations when its judge is
        the plain release judge over a fold that needs nothing but them (``_promote``)."""
        judge = planner.judges.get(attempt_id)
        if judge is not None and type(judge) is ReleaseJudge and judge.fold.folds_observed:
            self._candidates[attempt_id] = judge

    def _promote(self, attempt_id: str) -> ReleaseJudge | None:
        """At the attempt's first frame lent observations: fold them from now on, if its
        fold has normalized no frame itself (so its own normalizer is never needed)."""
        judge = self._candidates.pop(attempt_id, None)
        if judge is None or judge.fold.frames:
            return None
        self._lean[attempt_id] = judge
        self._lean_streams.add(judge.fold.start.stream)
        return judge

    def then(self, view: Any, result: Any) -> list[NewEvent]:
        due: list[NewEvent] = []
        for trace, planner in self.planners.items():
            if trace in self._unsure:
                due += _repair(view, trace)
                continue
            due += planner.missing()
            for attempt_id in self.attempts[trace]:
                if attempt_id not in self.started and not view.has_event(
                        decision_id(attempt_id, planner.rule.version, "decided")):
                    due += _repair(view, trace)
                    break
        return _distinct(due)


def _repair(view: Any, trace: str) -> list[NewEvent]:
    """The trace's missing decisions from a read of it (inside the write transaction)."""
    planner = DecisionPlanner(trace, view.read(stream=trace_stream(trace)))
    for stored in view.read(trace_id=trace):
        planner.feed(stored)
    return planner.missing()


def _distinct(events: Iterable[NewEvent]) -> list[NewEvent]:
    seen: set[str] = set()
    out = []
    for event in events:
        if event.id not in seen:
            seen.add(event.id)
            out.append(event)
    return out


def _model_of(new: SerializedEvent) -> Any:
    """The model of a lazily planned event: its fields when the plan lent them (a frame:
    built without validation, it was validated as it was planned), else parsed."""
    fields = new.fields
    if fields is not None and new.type == "frame.received":
        return FrameReceived.model_construct(**fields)
    return new.event


__all__ = ["PlanDecisions"]
