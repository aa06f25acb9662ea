"""What a deriver may look at, and the registry that maps template evidence names to derivers.

A review record must never guess, so every derived value comes from a pure function of
one ``ReviewContext``: the events of the attempt's trace (loaded by the shell), the
projections computed once from them, and the running tracestore version passed in as data.
Derivers never read the database, a file or the clock; the same events and version give
the same record byte for byte.

A deriver returns ``Derived`` (value text plus the event positions it rests on) or ``None``
when the events give no evidence — the record then shows exactly ``UNKNOWN``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracestore.events import (
    AttemptStarted, ReleaseDecided, StoredEvent, TraceOpened, review_stream,
)
from tracestore.projections import (
    AttemptDestinations, AttemptView, AuditReport, ReleaseDecision, audit,
)
from tracestore.errors import NotFound
from tracestore.projections.attempt import find_start
from tracestore.projections.release import decide_with_view


@dataclass(frozen=True, slots=True)
class Derived:
    """A derived field value and the event positions it rests on (sorted, unique)."""

    value: str
    evidence: tuple[int, ...]

    @classmethod
    def of(cls, value: str, *positions: int | None) -> Derived:
        """Build from any positions, dropping ``None`` (an absent fact cites nothing)."""
        return cls(value, tuple(sorted({p for p in positions if p is not None})))


@dataclass(frozen=True, slots=True)
class ReviewContext:
    """One attempt, its trace's events, and the projections every deriver shares."""

    template: str
    attempt_id: str
    events: tuple[StoredEvent, ...]
    version: str
    "The running ``tracestore.__version__`` (data, so derivers stay pure)."
    start: StoredEvent
    trace: TraceOpened | None
    trace_position: int | None
    view: AttemptView
    decision: ReleaseDecision
    report: AuditReport
    destinations: AttemptDestinations
    own: tuple[StoredEvent, ...] | None = None
    "``attempt_events()``, collected once by ``build_context`` (None: filtered on each call)."
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    "Answers computed once per record (``recorded_decision``): none depends on the version."

    @property
    def started(self) -> AttemptStarted:
        return self.start.event

    @property
    def as_of(self) -> int:
        """The last position of the trace the record was derived from."""
        return self.events[-1].position if self.events else 0

    def attempt_events(self) -> list[StoredEvent]:
        """Events about this attempt (any stream but the review records'), in global order.

        Review events are about a record, not the attempt: an approval must not change
        the facts it approved (``record.content_digest``)."""
        if self.own is not None:
            return list(self.own)
        return [e for e in self.events if e.attempt_id == self.attempt_id
                and not e.stream.startswith("review:")]

    def recorded_decision(self) -> StoredEvent | None:
        """The ``release.decided`` event the replay harness recorded, if any."""
        if "recorded_decision" not in self.memo:
            self.memo["recorded_decision"] = next(
                (stored for stored in self.events if isinstance(stored.event, ReleaseDecided)
                 and stored.event.attempt_id == self.attempt_id), None)
        found: StoredEvent | None = self.memo["recorded_decision"]
        return found

    def review_events(self) -> list[StoredEvent]:
        """Amendments and approvals of THIS record (template + attempt), in order."""
        stream = review_stream(self.template, self.attempt_id)
        return [e for e in self.events if e.stream == stream
                and e.event.type in ("review.field_set", "review.approved")]


def find_attempt(events: Sequence[StoredEvent], attempt_id: str) -> StoredEvent:
    """The attempt's ``attempt.started`` event; ``NotFound(attempt_not_found)`` otherwise.

    Wraps the projections' lookup to give reviewers' scripts one stable code.
    """
    try:
        return find_start(events, attempt_id)
    except NotFound as exc:
        raise NotFound(f"no attempt {attempt_id!r} in the log", code="attempt_not_found",
                       attempt_id=attempt_id) from exc


def build_context(events: Sequence[StoredEvent], attempt_id: str, *, template: str,
                  version: str, report: AuditReport | None = None) -> ReviewContext:
    """Run the projections once for ``attempt_id``; ``NotFound`` if it never started.
    ``report`` is the trace's ``audit`` when the caller has it already (the trace page).

    The attempt is folded once: the audit's judge folds it, and its view and decision are
    the record's (``report.views``); a report without views (built by hand) costs one more
    fold, never two."""
    ordered = tuple(sorted(events, key=lambda e: e.position))
    start = find_attempt(ordered, attempt_id)
    trace_id = start.event.trace_id
    trace, trace_position = None, None
    for stored in ordered:
        if isinstance(stored.event, TraceOpened) and stored.event.trace_id == trace_id:
            trace, trace_position = stored.event, stored.position
            break
    if report is None:
        report = audit(ordered, trace_id=trace_id)
    mine = next(a for a in report.attempts if a.attempt_id == attempt_id)
    view = report.views.get(attempt_id)
    if view is None:
        decision, view = decide_with_view(ordered, attempt_id)
    else:
        decision = mine.decision
    own = tuple(e for e in ordered if e.attempt_id == attempt_id
                and not e.stream.startswith("review:"))
    return ReviewContext(
        template=template, attempt_id=attempt_id, events=ordered, version=version,
        start=start, trace=trace, trace_position=trace_position, view=view,
        decision=decision, report=report, destinations=mine, own=own)


def reviewer_key(name: str) -> str:
    """How reviewer names are compared: "Alice", " alice" and "ＡＬＩＣＥ" are one person.

    Independence is the point of approval, so a change of case or width must not make a
    reviewer look like someone else.
    """
    return unicodedata.normalize("NFKC", name).casefold().strip()


Deriver = Callable[[ReviewContext], "Derived | None"]
ConflictCheck = Callable[[str, ReviewContext], bool]

#: Evidence name (as templates spell it) → deriver.  Filled by the ``derive_*`` modules.
DERIVERS: dict[str, Deriver] = {}
#: Evidence name → "does this reviewer value contradict what the events show?"
CONFLICT_CHECKS: dict[str, ConflictCheck] = {}
#: Evidence names whose deriver reads ``ctx.version`` (the running tracestore): the only
#: fields ``fill_record`` derives a second time, with an empty version, for the digest.
READS_VERSION: set[str] = set()


def deriver(name: str, *, reads_version: bool = False) -> Callable[[Deriver], Deriver]:
    """Register a deriver under the evidence name templates use; ``reads_version``: its
    value names the running version (every other deriver must not read ``ctx.version``,
    tests/test_review_once.py checks)."""

    def register(func: Deriver) -> Deriver:
        if name in DERIVERS:
            raise ValueError(f"deriver {name!r} registered twice")
        DERIVERS[name] = func
        if reads_version:
            READS_VERSION.add(name)
        return func

    return register


def conflict_check(name: str) -> Callable[[ConflictCheck], ConflictCheck]:
    """Register how a reviewer value is compared with the derived value of ``name``."""

    def register(func: ConflictCheck) -> ConflictCheck:
        CONFLICT_CHECKS[name] = func
        return func

    return register
