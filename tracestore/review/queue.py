"""The review queue, as rows: what ``attempts`` filters on and ``reviews`` lists.

Pure: one trace's events in, one row per attempt and one per review record out.  The
shell (``tracestore.review.queue_index``) keeps these rows in projection tables, rebuilding a
trace's rows whenever the trace gets new events, so a filter over 100k attempts is one
indexed query instead of 100k decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from tracestore.errors import NotFound
from tracestore.events import AttemptStarted, StoredEvent

#: How an attempt's records combine into one review state (the first that applies).
_ATTEMPT_PRECEDENCE: Final = ("conflict", "stale", "in-review", "approved")


@dataclass(frozen=True, slots=True)
class AttemptRow:
    attempt_id: str
    trace_id: str
    api: str | None
    first_position: int
    started_at: str
    events: int
    status: str
    reasons: tuple[str, ...]
    violations: int
    review_state: str
    violation_codes: tuple[str, ...] = ()
    "Each violation as ``code`` and ``code:destination`` (what ``--violation`` matches)."

    def to_dict(self) -> dict[str, Any]:
        return {"attempt_id": self.attempt_id, "trace_id": self.trace_id, "api": self.api,
                "events": self.events, "first_position": self.first_position,
                "started_at": self.started_at, "status": self.status,
                "first_reason": self.reasons[0] if self.reasons else None,
                "reasons": list(self.reasons), "violations": self.violations,
                "violation_codes": [c for c in self.violation_codes if ":" not in c],
                "review_state": self.review_state}


@dataclass(frozen=True, slots=True)
class ReviewRow:
    template: str
    attempt_id: str
    trace_id: str
    state: str
    digest: str
    last_position: int
    detail: dict[str, Any]
    "Who set what and when, and the approvals (see ``review_detail``)."

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "attempt_id": self.attempt_id,
                "trace_id": self.trace_id, "state": self.state, "digest": self.digest,
                "last_position": self.last_position, **self.detail}


def review_detail(record: Any) -> dict[str, Any]:
    return {
        "values": [{"field": a.field, "value": a.value, "set_by": a.reviewer, "set_at": a.at,
                    "position": a.position, "signed_by_key": a.key_id}
                   for a in record.history],
        "approvals": [a.to_dict() for a in record.approvals],
        "conflicts": [f.name for f in record.conflicts],
    }


def attempt_state(states: Sequence[str]) -> str:
    for state in _ATTEMPT_PRECEDENCE:
        if state in states:
            return state
    return "unreviewed"


def trace_rows(events: Sequence[StoredEvent], trace_id: str,
               ) -> tuple[list[AttemptRow], list[ReviewRow]]:
    """The queue rows of one trace (its events as the log holds them now)."""
    attempts, reviews, _ = trace_projection(events, trace_id)
    return attempts, reviews


def trace_projection(events: Sequence[StoredEvent], trace_id: str,
                     ) -> tuple[list[AttemptRow], list[ReviewRow], Any]:
    """``trace_rows`` and the trace's audit report (``projections.audit`` of the same
    events, as ``audit --json`` computes it), from one judging of the trace."""
    from tracestore.projections import audit
    from tracestore.review.record import fill_record
    from tracestore.review.templates import load_template

    ordered = sorted(events, key=lambda e: e.position)
    report = audit(ordered, trace_id=trace_id)
    starts = [e for e in ordered if isinstance(e.event, AttemptStarted)
              and e.event.trace_id == trace_id]
    if not starts:
        return [], [], report
    decisions = {a.attempt_id: a.decision for a in report.attempts}
    violations: dict[str, int] = {}
    codes: dict[str, list[str]] = {}
    for v in report.violations:
        violations[v.attempt_id] = violations.get(v.attempt_id, 0) + 1
        mine = codes.setdefault(v.attempt_id, [])
        for code in (v.code, f"{v.code}:{v.destination}"):
            if code not in mine:
                mine.append(code)
    counts: dict[str, int] = {}
    records: dict[str, list[tuple[str, int]]] = {}
    for e in ordered:
        if e.stream.startswith("attempt:"):
            aid = e.stream.split(":", 1)[1]
            counts[aid] = counts.get(aid, 0) + 1
        elif e.stream.startswith("review:"):
            _, template, aid = e.stream.split(":", 2)
            slot = records.setdefault(aid, [])
            if template not in [t for t, _ in slot]:
                slot.append((template, e.position))
    attempts, reviews = [], []
    for start in starts:
        aid = start.event.attempt_id
        decision = decisions.get(aid)
        states = []
        for template_name, _ in records.get(aid, []):
            try:
                loaded = load_template(template_name)
            except NotFound:
                continue  # a record of a template this install does not have
            record = fill_record(loaded, ordered, aid, version="")
            last = max([h.position for h in record.history]
                       + [a.position for a in record.approvals])
            reviews.append(ReviewRow(template_name, aid, trace_id, record.review_state,
                                     record.digest or "", last, review_detail(record)))
            states.append(record.review_state)
        attempts.append(AttemptRow(
            aid, trace_id, start.event.api, start.position, start.recorded_at.isoformat(timespec="microseconds"),
            counts.get(aid, 0), decision.status if decision else "pending",
            tuple(decision.reasons) if decision else (), violations.get(aid, 0),
            attempt_state(states), tuple(codes.get(aid, ()))))
    return attempts, reviews, report
