"""Release decisions as events, for every path that records facts (ingest, recorder, task).

The design asks that a decision be appended when it becomes final, with the policy and
rule versions it used, so the log itself shows what was decided when.  ``plan_decisions``
is pure: the trace's events in (in position order, any batching), the ``semantic.judged``
and ``release.decided`` events still missing out.  ``record_decisions`` runs it inside one
write transaction, so two processes can never both record the same decision.

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
from typing import Any

from tracestore.events import (
    AttemptStarted, NewEvent, ReleaseDecided, SemanticJudged, StoredEvent,
    attempt_stream, trace_stream,
)
from tracestore.projections import reasons as R
from tracestore.projections.release import (ReleaseDecision, ReleaseJudge, RuleInForce,
                                            rule_in_force)

#: Events read per query while judging a trace inside the write transaction.
READ_BATCH = 200


def plan_decisions(events: Iterable[StoredEvent], trace_id: str,
                   trace_events: Sequence[StoredEvent] | None = None) -> list[NewEvent]:
    """The decisions that are final in ``events`` but not yet recorded for their rule version.

    ``trace_events`` are the trace stream's own events (opening, task versions, contract
    bindings: few); when omitted, ``events`` must be a sequence and they are taken from it.
    Otherwise ``events`` may be a generator: judges keep only each attempt's answer text,
    never the events, so a long trace is judged in bounded memory.
    """
    if trace_events is None:
        events = list(events)
        trace_events = [e for e in events if e.stream == trace_stream(trace_id)]
    rule = rule_in_force(trace_events, trace_id)
    judges: dict[str, ReleaseJudge] = {}
    recorded: set[tuple[str, int | None]] = set()
    for stored in events:
        event = stored.event
        if isinstance(event, ReleaseDecided):
            recorded.add((event.attempt_id, event.rule_version))
        for judge in judges.values():
            judge.feed(stored)
        if isinstance(event, AttemptStarted) and event.trace_id == trace_id:
            opening = [*trace_events, stored]
            judges[event.attempt_id] = ReleaseJudge.for_attempt(opening, event.attempt_id, rule)
    out: list[NewEvent] = []
    for attempt_id, judge in judges.items():
        if judge.decided and (attempt_id, rule.version) not in recorded:
            out += decision_events(judge.decision(), rule, trace_id)
    return out


def decision_events(decision: ReleaseDecision, rule: RuleInForce,
                    trace_id: str) -> list[NewEvent]:
    stream = attempt_stream(decision.attempt_id)
    events: list[Any] = []
    if decision.judgement is not None and rule.rule is not None:
        j = decision.judgement
        events.append(SemanticJudged(attempt_id=decision.attempt_id, verdict=j.verdict,
                                     rule=rule.rule, answer_sha256=j.answer_sha256,
                                     failed_patterns=j.failed_patterns))
    events.append(ReleaseDecided(
        attempt_id=decision.attempt_id, eligible=decision.eligible, status=decision.status,
        reasons=decision.reasons, policy_version=R.POLICY_VERSION,
        decided_at_position=decision.decided_at_position,
        answer_sha256=decision.answer_sha256, rule_version=rule.version))
    return [NewEvent(stream, e, trace_id=trace_id) for e in events]


def record_decisions(store: Any, trace_id: str) -> list[int]:
    """Append the trace's newly final decisions in one transaction; their positions."""

    def build(view: Any) -> tuple[list[NewEvent], list[bytes]]:
        trace_events = view.read(stream=trace_stream(trace_id))
        return plan_decisions(_batches(view, trace_id), trace_id, trace_events), []

    return list(store.append_with(build).positions)


def _batches(view: Any, trace_id: str) -> Iterable[StoredEvent]:
    after = 0
    while True:
        batch = view.read(trace_id=trace_id, after=after, limit=READ_BATCH)
        yield from batch
        if len(batch) < READ_BATCH:
            return
        after = batch[-1].position


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


__all__ = ["Disagreement", "decision_events", "plan_decisions", "record_decisions",
           "recorded_decisions", "recorded_disagreements"]
