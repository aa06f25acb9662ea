"""The typed library API: open a store, read what a script or a CI gate needs.

    from tracestore import open_store

    with open_store("sqlite:///app.db") as store:
        for attempt in store.attempts(status="held"):
            print(attempt.attempt_id, store.release(attempt.attempt_id).reasons)

A notebook or a gate used to import ``tracestore.store.log`` and
``tracestore.projections.release`` and know how they fit (which events a decision reads,
how the queue index is kept).  ``Store`` is that knowledge in one place; the CLI's read
commands (``attempts``, ``release``, ``audit``, ``verify``) call it too, so a script and the
command line cannot disagree: ``attempts --json`` prints ``Attempt.to_dict()`` and
``release --json`` prints ``Release.to_dict()``.

Every method returns frozen, documented objects -- the dataclasses of the layers below
(``ReleaseDecision``, ``AuditReport``, ``VerifyResult``, ``StoredEvent``, ``ReviewRecord``)
or the ones here.  One write is offered too, ``ingest``: the ingest pipeline, as
``tracestore ingest`` runs it.  Errors are tracestore's typed errors with stable codes
(``attempt_not_found``, ``trace_not_found``, ``no_store``, ``unknown_filter_value`` …).
Nothing heavy is imported until a method needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from tracestore.errors import NotFound

if TYPE_CHECKING:
    from tracestore.events import StoredEvent
    from tracestore.ingest.decisions import Disagreement
    from tracestore.ingest.pipeline import Ingested
    from tracestore.projections.destinations import AuditReport
    from tracestore.projections.envelope import Envelope
    from tracestore.projections.release import ReleaseDecision
    from tracestore.review.record import ReviewRecord
    from tracestore.review.signing import SignatureCheck
    from tracestore.store.log import EventStore
    from tracestore.store.verify import Expected, VerifyResult


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt as the review queue lists it (``tracestore attempts``)."""

    attempt_id: str
    trace_id: str | None
    api: str | None
    "The provider API (``openai-responses`` …) or ``agent-run``."
    events: int
    "Events in the attempt's stream."
    first_position: int
    started_at: str
    "When its ``attempt.started`` was recorded (ISO 8601, UTC)."
    status: str
    "The release status (``released``, ``held``, ``pending`` …)."
    first_reason: str | None
    reasons: tuple[str, ...]
    violations: int
    "Destination-audit violations of the attempt."
    violation_codes: tuple[str, ...]
    review_state: str
    "``unreviewed``, ``in-review``, ``approved``, ``stale`` or ``conflict``."

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Attempt:
        return cls(row["attempt_id"], row["trace_id"], row["api"], row["events"],
                   row["first_position"], row["started_at"], row["status"],
                   row["first_reason"], tuple(row["reasons"]), row["violations"],
                   tuple(row["violation_codes"]), row["review_state"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``tracestore attempts --json`` prints for it."""
        return {"attempt_id": self.attempt_id, "trace_id": self.trace_id, "api": self.api,
                "events": self.events, "first_position": self.first_position,
                "started_at": self.started_at, "status": self.status,
                "first_reason": self.first_reason, "reasons": list(self.reasons),
                "violation_count": self.violations,
                "violation_codes": list(self.violation_codes),
                "review_state": self.review_state,
                # the count's old key ("violations" is a list in audit and replay,
                # docs/json.md), kept for one release
                "violations": self.violations}


@dataclass(frozen=True, slots=True)
class Release:
    """An attempt's release decision, recomputed from its events (``tracestore release``)."""

    decision: ReleaseDecision
    "Status, reasons, the decided position, the answer when eligible, notes, contract."
    envelope: Envelope | None
    "Seed 004's envelope: what a front end may show (None: pending or superseded)."
    disagreements: tuple[Disagreement, ...]
    "Recorded decisions the running policy recomputes differently (shown, never replaced)."

    @property
    def status(self) -> str:
        return self.decision.status

    @property
    def eligible(self) -> bool:
        return self.decision.eligible

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.decision.reasons

    @property
    def answer(self) -> str | None:
        """The answer text, only when it may be released."""
        return self.decision.answer

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``tracestore release ATTEMPT --json`` prints."""
        extra = ({"recorded_disagreements": [d.to_dict() for d in self.disagreements]}
                 if self.disagreements else {})
        return {**self.decision.to_dict(),
                "envelope": self.envelope.to_dict() if self.envelope is not None else None,
                **extra}


@dataclass(frozen=True, slots=True)
class Verification:
    """``verify``: the hash chain and stored captures, then every review signature."""

    chain: VerifyResult
    "Position and reason of the first break, head hash, captures re-hashed, checkpoint."
    reviews: SignatureCheck | None
    "Review signatures checked (None when the chain is already broken)."

    @property
    def ok(self) -> bool:
        return self.chain.ok and (self.reviews is None or self.reviews.ok)


class Store:
    """A tracestore log, read through typed operations.  Use as a context manager (or call
    ``close``); ``log`` is the underlying ``EventStore`` for anything not offered here."""

    def __init__(self, log: EventStore) -> None:
        self.log = log

    @property
    def url(self) -> str:
        return str(self.log.url)

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- attempts ------------------------------------------------------------------------
    def attempts(self, *, status: str | None = None, reason: str | None = None,
                 api: str | None = None, trace: str | None = None, since: str | None = None,
                 until: str | None = None, has_violations: bool | None = None,
                 review_state: str | None = None, violation: str | None = None,
                 ) -> list[Attempt]:
        """Attempts in log order, filtered like ``tracestore attempts`` (a reviewer's queue).

        ``since``/``until`` take an ISO time or an age (``24h``, ``7d``); ``violation`` a
        code, optionally with a destination (``ineligible_text_in_destination:history``).
        An unknown value is ``unknown_filter_value``; an unknown trace ``trace_not_found``.
        The queue index is brought up to date first (not on a read-only store: then the
        queue is computed in memory, and nothing is written)."""
        from tracestore.review import queue_index as qi

        rows = qi.select_attempts(self.log, qi.QueueFilter(
            status=status, reason=reason, api=api, trace=trace, since=since, until=until,
            has_violations=has_violations, review_state=review_state, violation=violation))
        return [Attempt.from_row(row) for row in rows]

    def trace_of(self, attempt_id: str, *, upto: int | None = None,
                 code: str = "attempt_not_found") -> str:
        """The trace an attempt belongs to (``NotFound`` with ``code`` when there is none in
        the log, as of position ``upto``)."""
        from tracestore.events import AttemptStarted

        first = self.log.read(attempt_id=attempt_id, upto=upto, limit=1)
        started = first[0].event if first else None
        if not isinstance(started, AttemptStarted):
            raise NotFound(f"no attempt {attempt_id!r} in the log"
                           + (f" at or before position {upto}" if upto is not None else ""),
                           code=code, attempt_id=attempt_id)
        return started.trace_id

    # -- decisions -----------------------------------------------------------------------
    def release(self, attempt_id: str, *, at: int | None = None) -> Release:
        """The release decision of ``attempt_id`` as of global position ``at`` (default:
        now), with its envelope and any recorded decision it disagrees with."""
        from tracestore.ingest.decisions import recorded_disagreements
        from tracestore.projections.envelope import project_envelope
        from tracestore.projections.release import decide_with_view

        # The attempt's stream plus its trace's events: all a release decision reads
        # (every event of an attempt carries its trace id).
        events = self.log.read(trace_id=self.trace_of(attempt_id, upto=at), upto=at)
        decision, view = decide_with_view(events, attempt_id, upto=at)
        return Release(decision, project_envelope(decision, view),
                       tuple(recorded_disagreements(events, attempt_id, decision)))

    def audit(self, trace_id: str | None = None) -> AuditReport:
        """Which destination holds which answer per attempt, and every violation (one trace,
        or the whole log audited trace by trace: memory holds one trace at a time)."""
        from tracestore.projections import audit, trace_attempts
        from tracestore.projections.destinations import AuditReport

        if trace_id is not None:
            events = self.log.read(trace_id=trace_id)
            if not trace_attempts(events, trace_id):
                raise NotFound(f"no attempts for trace {trace_id!r} in the log",
                               code="trace_not_found", trace_id=trace_id)
            return audit(events, trace_id=trace_id)
        attempts: list[Any] = []
        violations: list[Any] = []
        for trace, events in self.log.iter_traces():
            report = audit(events, trace_id=trace)
            attempts.extend(report.attempts)
            violations.extend(report.violations)
        # Every audit rule compares attempts of one trace: the same as one whole-log audit.
        violations.sort(key=lambda v: v.position)
        return AuditReport(tuple(attempts), tuple(violations))

    def review(self, attempt_id: str, template: str = "trace-review") -> ReviewRecord:
        """The attempt's review record, filled from its trace's events (``to_dict()`` is
        what ``tracestore review ATTEMPT --json`` prints; ``review_state``, ``unknown``)."""
        from tracestore._version import __version__
        from tracestore.review import fill_record, load_template

        spec = load_template(template)
        events = self.log.read(trace_id=self.trace_of(attempt_id))
        return fill_record(spec, events, attempt_id, version=__version__)

    # -- the log -------------------------------------------------------------------------
    def ingest(self, data: bytes, **options: Any) -> Ingested:
        """Record one input (a capture, a decoded projection or an agent-run file) as
        ``tracestore ingest`` does: one transaction with the decisions it makes final.
        ``options`` are ``tracestore.ingest.pipeline.IngestOptions`` fields (``filename``,
        ``attempt_id``, ``trace_id``, ``provider``, ``task``, ``origin`` …)."""
        from tracestore.ingest.pipeline import IngestOptions, ingest_input

        return ingest_input(self.log, data, IngestOptions(**options))

    def events(self, *, attempt: str | None = None, trace: str | None = None, after: int = 0,
               limit: int | None = None) -> list[StoredEvent]:
        """Stored events in global order (one attempt's or trace's), after position
        ``after``, at most ``limit``.  A name not in the log is ``attempt_not_found`` /
        ``trace_not_found``, never an empty list that reads as "no events"."""
        if attempt is not None:
            self.trace_of(attempt)
        if trace is not None and not self.log.read(trace_id=trace, limit=1):
            raise NotFound(f"no trace {trace!r} in the log", code="trace_not_found",
                           trace_id=trace)
        return self.log.read(attempt_id=attempt, trace_id=trace, after=after, limit=limit)

    def verify(self, expected: Expected | None = None, *, jobs: int | None = None,
               ) -> Verification:
        """Recompute the hash chain and re-hash stored captures (and, with ``expected``, a
        signed head the log must extend); then check every review signature.  ``jobs``:
        worker processes walking ranges of the log on PostgreSQL (default: one per CPU on a
        store of 20,000 events or more; SQLite always walks in one pass)."""
        chain = self.log.verify(expected=expected, jobs=jobs)
        return Verification(chain, self.review_signatures() if chain.ok else None)

    def review_signatures(self) -> SignatureCheck:
        """Every review signature against the key registered before it: one pass over the
        registry and review events only, in position order."""
        from sqlalchemy import select

        from tracestore.review.signing import SIGNED_TYPES, check_signatures
        from tracestore.store.reads import _to_stored
        from tracestore.store.schema import events as table

        kinds: Sequence[str] = (*SIGNED_TYPES, "reviewer.added", "store.setting")
        with self.log._reader.connect() as conn:
            rows = conn.execute(select(table).where(table.c.type.in_(kinds))
                                .order_by(table.c.position)).mappings()
            return check_signatures([_to_stored(cast(Mapping[str, Any], row))
                                     for row in rows])


def open_store(url: str | None = None, *, create: bool = False,
               read_only: bool = False) -> Store:
    """Open the store at ``url`` (a SQLAlchemy URL or a SQLite file path; default
    ``$TRACESTORE_DB``, else ``tracestore.db``).

    A store that does not exist is ``no_store`` unless ``create`` (then it is created and
    migrated); ``read_only`` opens SQLite read-only (an archive on a read-only mount)."""
    from tracestore.store.log import EventStore

    return Store(EventStore(url, create=create, read_only=read_only))


__all__ = ["Attempt", "Release", "Store", "Verification", "open_store"]
