"""Release decisions as events, for every path that records facts (ingest, recorder, task).

The design asks that a decision be appended when it becomes final, with the policy and
rule versions it used, so the log itself shows what was decided when.  ``DecisionPlanner``
is pure: a trace's events in (in position order, any batching), the ``semantic.judged``
and ``release.decided`` events still missing out.  ``record_decisions`` feeds it from a
read *outside* the write transaction and appends what it says in a short one, so the write
lock is never held while a long trace is read and judged (holding it made concurrent
SQLite writers time out with "database is locked" once traces had ~100 attempts).

Nothing is lost or duplicated although the plan is made from a snapshot:

* a decision's event ids are derived from (attempt, rule version), so when two writers
  plan the same decision the store keeps the first and skips the second (idempotent ids);
* a decision is final once made — later events do not change it — so a snapshot taken
  after it became final plans exactly what a fresh read would;
* the one thing that can change which decision is due is the trace stream itself (a new
  task rule version, a contract binding): the append expects the trace stream at the
  version the plan saw, and on a conflict the plan is made again.

A decision is recorded once per (attempt, task rule version): after ``tracestore task``
appends rule version 2, each final attempt gets a decision under version 2 while its
version-1 decision stays as recorded.  The recorded events are made by the same
``ReleaseJudge`` the ``release`` command runs, so a recomputed decision agrees with the
recorded one unless the policy code changed — and then ``recorded_disagreements`` shows
the difference instead of overwriting anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracestore.errors import ExpectedVersionConflict, StoreError
from tracestore.events import (
    AttemptStarted, NewEvent, ReleaseDecided, SemanticJudged, StoredEvent,
    attempt_stream, trace_stream,
)
from tracestore.projections import reasons as R
from tracestore.projections.release import (ReleaseDecision, ReleaseJudge, RuleInForce,
                                            rule_in_force)

if TYPE_CHECKING:
    from tracestore.store.log import EventStore

#: Events read per query while judging from the log (frames of a long answer may be large).
READ_BATCH = 200

#: Plans made again after a trace-stream conflict before giving up (each conflict means
#: another writer changed the trace's rule or bindings in between: rare, never endless).
MAX_REPLANS = 20


class DecisionPlanner:
    """The decisions of one trace that are final but not yet recorded, incrementally.

    ``feed`` the trace's events in position order as they become known (from any
    position on: the planner remembers where it is); ``missing()`` returns the events to
    append.  Judges keep only an undecided attempt's answer text, never the events, and
    an attempt whose decision is recorded drops its judge, so memory is bounded by the
    attempts still open, however long the trace.
    """

    def __init__(self, trace_id: str,
                 trace_events: Sequence[StoredEvent] | None = None) -> None:
        """``trace_events`` None: nothing read yet (``catch_up`` starts with the stream)."""
        self.trace_id = trace_id
        self.stream = trace_stream(trace_id)
        self.reset(trace_events or ())
        self.stale = trace_events is None

    def reset(self, trace_events: Sequence[StoredEvent]) -> None:
        """Start again from position 0 with the trace stream as ``trace_events`` holds it."""
        self.trace_events = [e for e in trace_events if e.stream == self.stream]
        self.trace_version = max((e.version for e in self.trace_events), default=0)
        self.rule = rule_in_force(self.trace_events, self.trace_id)
        self.position = 0
        "The last position fed: catch up with ``after=position``."
        self.stale = False
        "Set when the trace stream moved past ``trace_events``: ``reset`` and read again."
        self.judges: dict[str, ReleaseJudge] = {}
        self.recorded: set[tuple[str, int | None]] = set()
        self.head: int | None = None
        """The trace's ``trace_version`` of the last event fed, when every event of the
        trace up to it has been fed (its writer's own appends said where they follow on:
        ``follow``); None when unknown, and then the log is read to catch up."""

    def feed(self, stored: StoredEvent) -> None:
        if stored.position <= self.position:
            return
        self.position = stored.position
        if stored.stream == self.stream and stored.version > self.trace_version:
            self.stale = True  # a new rule version or binding: every judge must restart
            return
        event = stored.event
        if isinstance(event, ReleaseDecided):
            self.recorded.add((event.attempt_id, event.rule_version))
            if event.rule_version == self.rule.version:
                self.judges.pop(event.attempt_id, None)
        for judge in self.judges.values():
            judge.feed(stored)
        if isinstance(event, AttemptStarted) and event.trace_id == self.trace_id \
                and (event.attempt_id, self.rule.version) not in self.recorded:
            opening = [*self.trace_events, stored]
            self.judges[event.attempt_id] = ReleaseJudge.for_attempt(
                opening, event.attempt_id, self.rule)

    def missing(self) -> list[NewEvent]:
        out: list[NewEvent] = []
        for attempt_id, judge in self.judges.items():
            if judge.decided and (attempt_id, self.rule.version) not in self.recorded:
                out += decision_events(judge.decision(), self.rule, self.trace_id)
        return out


def plan_decisions(events: Iterable[StoredEvent], trace_id: str,
                   trace_events: Sequence[StoredEvent] | None = None) -> list[NewEvent]:
    """The decisions that are final in ``events`` but not yet recorded for their rule version.

    ``trace_events`` are the trace stream's own events (opening, task versions, contract
    bindings: few); when omitted, ``events`` must be a sequence and they are taken from it.
    Otherwise ``events`` may be a generator (a long trace is judged in bounded memory).
    """
    if trace_events is None:
        events = list(events)
        trace_events = [e for e in events if e.stream == trace_stream(trace_id)]
    planner = DecisionPlanner(trace_id, trace_events)
    for stored in events:
        planner.feed(stored)
    return planner.missing()


def decide_attempt(store: EventStore, trace_id: str, attempt_id: str) -> ReleaseDecision | None:
    """``decide_release`` of one attempt over the log read in batches, so the trace's
    events are never all in memory at once (a 100 MB answer's frames would be several
    times its size as events).  None when the attempt is not in the trace."""
    trace_events = store.read(stream=trace_stream(trace_id))
    rule = rule_in_force(trace_events, trace_id)
    judge: ReleaseJudge | None = None
    for stored in store.iter_events(trace_id=trace_id, batch_size=READ_BATCH):
        if judge is not None:
            judge.feed(stored)
        elif isinstance(stored.event, AttemptStarted) and stored.event.attempt_id == attempt_id:
            judge = ReleaseJudge.for_attempt([*trace_events, stored], attempt_id, rule)
    return judge.decision() if judge is not None else None


def decision_id(attempt_id: str, rule_version: int | None, part: str) -> str:
    """The id of an attempt's ``part`` ("judged"/"decided") under a rule version: the same
    decision planned by two writers gets the same ids, and the store keeps it once."""
    from tracestore.ingest.plan import id_prefix  # the write path's (release reads only)

    digest = id_prefix(attempt_id, f"release.decided\x1f{rule_version}")
    return f"{digest}{'7' if part == 'judged' else '6'}{0:011x}"


def decision_events(decision: ReleaseDecision, rule: RuleInForce,
                    trace_id: str) -> list[NewEvent]:
    stream = attempt_stream(decision.attempt_id)
    events: list[tuple[str, Any]] = []
    if decision.judgement is not None and rule.rule is not None:
        j = decision.judgement
        events.append(("judged", SemanticJudged(
            attempt_id=decision.attempt_id, verdict=j.verdict, rule=rule.rule,
            answer_sha256=j.answer_sha256, failed_patterns=j.failed_patterns)))
    events.append(("decided", ReleaseDecided(
        attempt_id=decision.attempt_id, eligible=decision.eligible, status=decision.status,
        reasons=decision.reasons, policy_version=R.POLICY_VERSION,
        decided_at_position=decision.decided_at_position,
        answer_sha256=decision.answer_sha256, rule_version=rule.version)))
    return [NewEvent(stream, e, id=decision_id(decision.attempt_id, rule.version, part),
                     trace_id=trace_id) for part, e in events]


def follows_on(planner: DecisionPlanner, span: tuple[Any, int, int] | None) -> bool:
    """Whether an append's rows (``AppendResult.trace_spans``' entry of the planner's
    trace) come right after what the planner has seen: then nothing lies between."""
    return span is not None and not planner.stale and planner.head == span[1]


def catch_up(store: EventStore, planner: DecisionPlanner) -> None:
    """Feed ``planner`` the trace's events it has not seen (from the start when it is
    stale).  Reads outside any write transaction: writers are not held up.

    A planner that knows it has seen every event of the trace up to its writer's last
    append (``head``) reads nothing: a decision that is final in that prefix is final
    whatever follows, and an event another writer appends after it is read (with the
    decisions it makes final) before this writer's next rows are fed (``feed_written``).
    """
    if planner.head is not None and not planner.stale:
        return
    while True:
        if planner.stale:
            planner.reset(store.read(stream=planner.stream))
        for stored in store.iter_events(trace_id=planner.trace_id, after=planner.position,
                                        batch_size=READ_BATCH):
            planner.feed(stored)
            if planner.stale:
                break
        else:
            return


def feed_written(store: EventStore, planner: DecisionPlanner, written: Sequence[StoredEvent],
                 span: tuple[Any, int, int] | None = None) -> None:
    """Feed ``planner`` the events its writer has just appended, as the writer built them
    (never read back and parsed again); the trace's events before them that the planner
    has not seen yet (another writer's) are read first, so the order stays the log's --
    unless ``span`` (the append's ``trace_spans`` entry of this trace) shows they follow
    on from what the planner has seen."""
    if not written:
        return
    if follows_on(planner, span):
        for stored in written:
            planner.feed(stored)
            if planner.stale:
                planner.head = None
                return
        planner.head = span[2] if span is not None else None
        return
    planner.head = None
    if planner.stale and planner.position == 0:
        planner.reset(store.read(stream=planner.stream))
    for stored in store.iter_events(trace_id=planner.trace_id, after=planner.position,
                                    upto=written[0].position - 1, batch_size=READ_BATCH):
        planner.feed(stored)
        if planner.stale:
            return  # the rule or bindings changed: ``catch_up`` starts again from the log
    for stored in written:
        planner.feed(stored)
        if planner.stale:
            return
    if span is not None:  # the read above reached the rows: all before them are seen
        planner.head = span[2]


def trace_span(result: Any, trace_id: str | None) -> tuple[Any, int, int] | None:
    """``result``'s (an ``AppendResult``) span of ``trace_id``, if it wrote to it."""
    for span in getattr(result, "trace_spans", ()):
        if span[0] == trace_id:
            return span
    return None


def record_decisions(store: EventStore, trace_id: str,
                     planner: DecisionPlanner | None = None) -> list[int]:
    """Append the trace's newly final decisions; their positions.

    Planned from a read outside the write transaction (``planner``, when given, is caught
    up in place, so a live recorder reads each event once), appended in one short
    transaction that expects the trace stream where the plan saw it."""
    planner = planner or DecisionPlanner(trace_id)
    for _ in range(MAX_REPLANS):
        catch_up(store, planner)
        due = planner.missing()
        if not due:
            return []
        try:
            result = store.append(due, expected_versions={planner.stream:
                                                          planner.trace_version})
        except ExpectedVersionConflict:
            planner.stale = True  # the rule or bindings changed meanwhile: plan again
            continue
        # The planner learns its own decisions as appended, not by reading them back
        # (when another writer stored some first, the next catch-up reads what is there).
        if result.skipped_ids:  # another writer stored some first: read what is there
            planner.head = None
        feed_written(store, planner, [] if result.skipped_ids else [
            # recorded_at None: a stand-in the planner reads, not a row (it has no time)
            StoredEvent(position, new.id, new.stream, 0, new.event.type, 0,
                        None,  # type: ignore[arg-type]
                        new.trace_id, new.event, "")
            for position, new in zip(result.positions, due)], trace_span(result, trace_id))
        return list(result.positions)
    raise StoreError(f"the decisions of trace {trace_id!r} could not be recorded: its rule "
                     f"or bindings changed {MAX_REPLANS} times while they were planned",
                     code="decision_conflict", trace_id=trace_id)


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A recorded decision that the running policy recomputes differently."""

    position: int
    recorded: ReleaseDecided
    recomputed: ReleaseDecision

    def to_dict(self) -> dict[str, Any]:
        r = self.recorded
        return {"position": self.position, "policy_version": r.policy_version,
                "rule_version": r.rule_version,
                "recorded": {"status": r.status, "reasons": list(r.reasons),
                             "decided_at_position": r.decided_at_position},
                "recomputed": {"status": self.recomputed.status,
                               "reasons": list(self.recomputed.reasons),
                               "decided_at_position": self.recomputed.decided_at_position}}


def recorded_decisions(events: Sequence[StoredEvent], attempt_id: str) -> list[StoredEvent]:
    return [e for e in events if isinstance(e.event, ReleaseDecided)
            and e.event.attempt_id == attempt_id]


def recorded_disagreements(events: Sequence[StoredEvent], attempt_id: str,
                           recomputed: ReleaseDecision) -> list[Disagreement]:
    """Recorded decisions (same rule version) whose outcome differs from ``recomputed``."""
    found = []
    for stored in recorded_decisions(events, attempt_id):
        r = stored.event
        if r.rule_version != recomputed.rule_version:
            continue  # judged under another rule version: a different question
        if (r.status, tuple(r.reasons), r.decided_at_position) != (
                recomputed.status, recomputed.reasons, recomputed.decided_at_position):
            found.append(Disagreement(stored.position, r, recomputed))
    return found


__all__ = ["DecisionPlanner", "Disagreement", "catch_up", "decide_attempt", "decision_events",
           "decision_id", "feed_written", "follows_on", "trace_span",
           "plan_decisions", "record_decisions",
           "recorded_decisions", "recorded_disagreements"]
