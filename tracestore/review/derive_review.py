"""Derivers that judge what happened around the answer: destinations (expected and
actual, with the audit), the evidence the log does not hold, and independent approval.

Destination writes made by tracestore's replay harness follow the policy by construction;
they are reported as such and never presented as an application's readback.
"""

from __future__ import annotations

from typing import Any

from tracestore.agent.codes import AGENT_API
from tracestore.events import ANSWER_DESTINATIONS, CaptureStored, StoredEvent
from tracestore.projections import reasons as R
from tracestore.projections.destinations import PROGRESS_TEXT, DestinationEntry, owed_destinations
from tracestore.review.context import Derived, ReviewContext, deriver, reviewer_key
from tracestore.review.derive_trace import receipts
from tracestore.review.wording import listed, plural, positions


def _expected(ctx: ReviewContext) -> str:
    d = ctx.decision
    if d.eligible:
        return "Expected: the released answer once each in ui, history, export and copy"
    if d.status == R.PENDING:
        return "Expected absent until released (pending)"
    return f"Expected absent ({d.status})"


def _writes(ctx: ReviewContext, source: str | None = None) -> list[tuple[str, DestinationEntry]]:
    held = ctx.destinations
    every = [(d, e) for d in ANSWER_DESTINATIONS for e in held.destinations[d]]
    every += [("progress", e) for e in held.progress]
    return sorted((x for x in every if source is None or x[1].source == source),
                  key=lambda x: x[1].position)


def _actual(ctx: ReviewContext, source: str | None) -> tuple[str, list[int]]:
    """What the destinations hold (optionally only one writer's writes) and the audit."""
    writes = _writes(ctx, source)
    answer = [(d, e) for d, e in writes if d != "progress"]
    progress = [e for d, e in writes if d == "progress"]
    if answer:
        text = listed([f"{d} #{e.position}" for d, e in answer], limit=8)
    else:
        text = "no ui/history/export/copy write"
    fixed = [e.position for e in progress if e.text == PROGRESS_TEXT]
    other = [e.position for e in progress if e.text != PROGRESS_TEXT]
    if fixed:
        text += f", progress fixed text{' only' if not other else ''} ({positions(fixed)})"
    if other:
        text += f", progress shows OTHER TEXT ({positions(other)})"
    writers = sorted({e.source for _, e in writes})
    cited = [e.position for _, e in writes]
    if "application" not in writers:
        # Seed 003's words: no application ran, so the actual destinations were not executed;
        # what the harness wrote by following the policy is shown, never as readback.
        head = "actual UI/history/export/copy NOT EXECUTED (no application write recorded)"
        if writers:
            head += f"; replay harness writes, not readback: {text}"
        return head, cited
    shortfall = "".join(f"; {item}" for item in _shortfall(ctx))
    return f"actual: {text} — written by: {', '.join(writers)}{shortfall}", cited


#: The audit's codes for a destination that holds the answer more often than once.
_AGAIN = (R.DUPLICATE_HISTORY_ENTRY, R.REPEATED_DESTINATION_WRITE)


def _shortfall(ctx: ReviewContext) -> list[str]:
    """Seed 003, per destination: a required one the released answer never
    reached — ``history: MISSING (required by …)`` — and one written more than once —
    ``history: WRITTEN AGAIN at #14 (once expected)`` — from the audit's own violations."""
    mine = [v for v in ctx.report.violations if v.attempt_id == ctx.attempt_id]
    missing = [v.destination for v in mine if v.code == R.MISSING_DESTINATION_WRITE]
    out: list[str] = []
    if missing:
        recorded = {d for a in ctx.report.attempts if a.trace_id == ctx.view.trace_id
                    for d in (*ANSWER_DESTINATIONS, "progress")
                    for e in (a.progress if d == "progress" else a.destinations[d])
                    if e.source == "application"}
        owed = owed_destinations(ctx.view.profile, recorded)
        out += [f"{d}: MISSING ({owed.get(d, 'required')})" for d in dict.fromkeys(missing)]
    again: dict[str, list[int]] = {}
    for v in mine:
        if v.code in _AGAIN:
            again.setdefault(v.destination, []).append(v.position)
    out += [f"{d}: WRITTEN AGAIN at {positions(at)} (once expected)" for d, at in again.items()]
    return out


def _audit(ctx: ReviewContext) -> tuple[str, list[int]]:
    mine = [v for v in ctx.report.violations if v.attempt_id == ctx.attempt_id]
    if not mine:
        return "audit: no violations", []
    return (f"audit: {plural(len(mine), 'violation')}: "
            + listed([f"{v.code} ({v.destination}) at #{v.position}" for v in mine], limit=8),
            [v.position for v in mine])


@deriver("accepted_destinations")
def accepted_destinations(ctx: ReviewContext) -> Derived:
    """Expected destinations under the decision, next to what they actually hold."""
    actual, cited = _actual(ctx, None)
    audit_text, audit_cited = _audit(ctx)
    return Derived.of(f"{_expected(ctx)}; {actual}; {audit_text}",
                      ctx.decision.decided_at_position, *cited, *audit_cited)


@deriver("expected_destinations")
def expected_destinations(ctx: ReviewContext) -> Derived:
    """Only the expectation (the application record asks for actual readback separately)."""
    d = ctx.decision
    value = _expected(ctx)
    if d.eligible and d.answer_sha256:
        value += f"; answer sha256 {d.answer_sha256}"
    return Derived.of(value, d.decided_at_position or ctx.start.position)


@deriver("actual_destinations")
def actual_destinations(ctx: ReviewContext) -> Derived | None:
    """An application's recorded destination writes and read-backs, and their audit;
    UNKNOWN without either."""
    reads = [e for e in ctx.attempt_events() if e.type == "destination.read_back"]
    if not _writes(ctx, "application") and not reads:
        return None
    if _writes(ctx, "application"):
        actual, cited = _actual(ctx, "application")
        actual = f"A{actual[1:]}"
    else:
        actual, cited = "Actual: no application write recorded", []
    if reads:
        actual += "; read back: " + listed([_read_back(e) for e in reads], limit=8)
    audit_text, audit_cited = _audit(ctx)
    return Derived.of(f"{actual}; {audit_text}", *cited, *(e.position for e in reads),
                      *audit_cited)


def _read_back(stored: StoredEvent) -> str:
    read: Any = stored.event
    held = "empty" if not read.text else plural(len(read.text), "character")
    return f"{read.destination} {held} at #{stored.position}"


@deriver("evidence_gap")
def evidence_gap(ctx: ReviewContext) -> Derived:
    """What the log cannot show for this attempt (absences are facts about the log too)."""
    gaps: list[str] = []
    if not _writes(ctx, "application"):
        gaps.append("application destination readback (only replay-harness writes)"
                    if _writes(ctx) else "any destination write")
    if not any(isinstance(e.event, CaptureStored) or e.event.type == "capture.segment"
               for e in ctx.attempt_events()):
        origin = ctx.trace.origin if ctx.trace and ctx.trace.origin else "origin not recorded"
        gaps.append(f"raw capture bytes ({origin})")
    if ctx.view.stop_position is not None and not receipts(ctx):
        gaps.append(f"a provider receipt for the local Stop at #{ctx.view.stop_position} "
                    "(client abort propagation unproven)")
    if ctx.view.anomalies:
        gaps.append(f"a judgement on {plural(len(ctx.view.anomalies), 'native form')} "
                    "held for review")
    if ctx.view.terminal is not None and ctx.view.usage is None:
        gaps.append("usage metadata")
    if ctx.started.api == AGENT_API:  # an agent run has no transport; its own gaps instead
        from tracestore.review.agent import evidence_gaps

        gaps += evidence_gaps(ctx)
    elif ctx.view.drain is None:
        gaps.append("the end of the transport (no drain observed)")
    if not gaps:  # a gap the log cannot see is still possible: say what was checked
        return Derived.of("None the log can show: application destination writes, raw "
                          "capture bytes, the end of the transport and usage are recorded",
                          ctx.trace_position, ctx.view.stop_position)
    return Derived.of("Not in the log: " + "; ".join(gaps), ctx.trace_position,
                      ctx.view.stop_position)


#: Seed 003's words for a record nobody has approved.
UNASSIGNED = "UNASSIGNED; not approved"


@deriver("independent_reviewer")
def independent_reviewer(ctx: ReviewContext) -> Derived:
    """Who approved this record, whether they stayed independent, and what came after."""
    review = ctx.review_events()
    approvals = [e for e in review if e.event.type == "review.approved"]
    if not approvals:
        # The log holds every approval of this record, so "none" is a fact, not a gap.
        return Derived.of(UNASSIGNED)
    setters = {reviewer_key(e.event.reviewer) for e in review
               if e.event.type == "review.field_set"}
    parts = ["Approved by " + listed([
        f"{e.event.reviewer} at {e.recorded_at.isoformat()} (#{e.position})" for e in approvals])]
    dependent = [e.event.reviewer for e in approvals if reviewer_key(e.event.reviewer) in setters]
    if dependent:
        parts.append(f"NOT independent: {', '.join(dependent)} also set fields")
    else:
        parts.append("no approver set a field of this record")
    last = approvals[-1].position
    later = [e.position for e in review if e.event.type == "review.field_set"
             and e.position > last]
    if later:
        parts.append(f"amended after the last approval at {', '.join(f'#{p}' for p in later)}"
                     f" (approvals cover the record as of #{last})")
    return Derived.of("; ".join(parts), *(e.position for e in approvals), *later)
