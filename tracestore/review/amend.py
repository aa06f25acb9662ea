"""Reviewer actions as appended events: set a field, approve the record.

Nothing is ever overwritten: a new value is a new ``review.field_set`` event and the
record shows the latest one; ``--history`` shows them all.  Approval exists to get a
second pair of eyes, so it is refused to anyone who set a field of the record, and a
reviewer who approved may not fill fields afterwards.  ``plan_review`` is pure (the shell
calls it inside the write transaction with the events it just read, so two concurrent
reviewers cannot both slip past the independence check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from tracestore.errors import InputError, ReviewError
from tracestore.events import NewEvent, StoredEvent, review_stream
from tracestore.review.context import find_attempt, reviewer_key
from tracestore.review.signing import (
    Registry, key_id, require_unsigned_allowed, sign, signer_name,
)
from tracestore.review.templates import Template

if TYPE_CHECKING:  # events.more_models: defined when a review is first planned or read
    from tracestore.events import ReviewApproved, ReviewFieldSet

#: Longest reviewer value accepted (characters): a record cell, not a document.
MAX_VALUE_CHARS: Final = 4000
#: Longest reviewer name accepted (characters).
MAX_REVIEWER_CHARS: Final = 100
#: Evidence that only ``--approve`` may supply: setting it by hand would fake an approval.
APPROVAL_EVIDENCE: Final = frozenset({"independent_reviewer"})


def parse_assignment(text: str) -> tuple[str, str]:
    """``FIELD=VALUE`` → (field, value); the value may itself contain ``=``."""
    field, sep, value = text.partition("=")
    if not sep or not field.strip():
        raise InputError(f"--set takes FIELD=VALUE, got {text!r}", code="invalid_set")
    return field.strip(), value


def check_reviewer(name: str | None) -> str:
    """A reviewer name: required, printable, bounded (it is shown and compared)."""
    if name is None or not name.strip():
        raise InputError("this action records who did it: pass --reviewer NAME",
                         code="reviewer_required")
    name = name.strip()
    if not name.isprintable() or len(name) > MAX_REVIEWER_CHARS:
        raise InputError(f"reviewer names are printable text of at most {MAX_REVIEWER_CHARS} "
                         "characters", code="invalid_reviewer")
    return name


def check_value(field: str, value: str) -> str:
    if not value.strip():
        raise InputError(f"empty value for {field!r}: a blank is UNKNOWN already; write what "
                         "the evidence shows", code="empty_value", field=field)
    if len(value) > MAX_VALUE_CHARS:
        raise InputError(f"value for {field!r} has {len(value)} characters; the limit is "
                         f"{MAX_VALUE_CHARS}", code="value_too_long", field=field)
    return value


def _check_evidence(evidence: Sequence[int], events: Sequence[StoredEvent]) -> tuple[int, ...]:
    known = {e.position for e in events}
    missing = sorted(set(evidence) - known)
    if missing:
        raise InputError(f"evidence positions {missing} are not events of this trace",
                         code="unknown_evidence", positions=missing)
    return tuple(sorted(set(evidence)))


def _independence(template: Template, attempt_id: str, events: Sequence[StoredEvent],
                  reviewer: str, *, setting: bool, approving: bool,
                  digest: str | None = None, key_id: str | None = None) -> None:
    """Independence by key where reviews are signed (one key is one reviewer, whatever
    name is typed), by normalised name otherwise."""
    stream = review_stream(template.name, attempt_id)
    review = [e.event for e in events if e.stream == stream]
    me = reviewer_key(reviewer)

    def same(e: ReviewApproved | ReviewFieldSet) -> bool:
        return reviewer_key(e.reviewer) == me or (key_id is not None and e.key_id == key_id)

    mine = [e for e in review if e.type == "review.approved" and same(e)]
    approved = bool(mine)
    # A stale approval (the record changed since) does not count: the record needs a new one.
    current = any(e.digest is not None and e.digest == digest for e in mine)
    has_set = any(e.type == "review.field_set" and same(e) for e in review)
    if setting and approved:
        raise ReviewError(f"{reviewer} approved this record; an approver cannot also fill "
                          "it (ask another reviewer)", code="reviewer_not_independent",
                          reviewer=reviewer)
    if approving and (current or (approved and digest is None)):
        raise ReviewError(f"{reviewer} has already approved this record",
                          code="already_approved", reviewer=reviewer)
    if approving and (has_set or setting):
        raise ReviewError(f"{reviewer} set fields of this record; the record needs an "
                          "independent reviewer to approve it", code="reviewer_not_independent",
                          reviewer=reviewer)


def _check_unknown_fields(template: Template, events: Sequence[StoredEvent], attempt_id: str,
                          sets: Sequence[tuple[str, str]], cited: tuple[int, ...]) -> None:
    """A PASS-like value where the events derive nothing (UNKNOWN) must cite evidence.

    Without a derivation there is nothing for a conflict check to compare with, so an
    uncited "PASS" would turn UNKNOWN into a claim on the reviewer's word alone.
    """
    from tracestore.review.conflicts import pass_like
    from tracestore.review.context import build_context
    from tracestore.review.record import derive

    candidates = [(f, v) for f, v in sets if pass_like(v) and not cited
                  and template.field(f).evidence and not template.field(f).reviewer_only]
    if not candidates:
        return
    ctx = build_context(events, attempt_id, template=template.name, version="")
    for field, value in candidates:
        if derive(template.field(field), ctx) is None:
            raise ReviewError(
                f"{field!r} is UNKNOWN from the events, so {value!r} needs the positions "
                "that prove it: pass --evidence POSITION (repeatable)",
                code="evidence_required", field=field)


def _approval_checks(template: Template, events: Sequence[StoredEvent], attempt_id: str,
                     expect_digest: str | None, override_reason: str | None,
                     ) -> tuple[str, list[str], ReviewError | None]:
    """(the digest the approval binds to, the fields in CONFLICT, the refusal if any): a
    record changed since the approver read it, or a CONFLICT without a reason."""
    from tracestore.review.record import fill_record

    record = fill_record(template, events, attempt_id, version="")
    assert record.digest is not None
    conflicts = [f.name for f in record.conflicts]
    refusal = None
    if expect_digest is not None and expect_digest.strip().lower() != record.digest:
        refusal = ReviewError(f"the record changed since it was read: its digest is now "
                              f"{record.digest}, not {expect_digest.strip()}; read it again "
                              "before approving", code="record_changed",
                              digest=record.digest, expected=expect_digest)
    elif conflicts and not (override_reason or "").strip():
        refusal = ReviewError(f"a CONFLICT stands ({', '.join(conflicts)}): resolve it, or "
                              "approve with --override-reason TEXT saying why (it is kept "
                              "in the record)", code="conflict_unresolved", fields=conflicts)
    return record.digest, conflicts, refusal


def _describe_kinds(kinds: Sequence[str]) -> str:
    shown = [k.replace("evidence.attached:", "an attached ") if k.startswith(
        "evidence.attached:") else f"a {k} event" for k in kinds]
    return ", ".join(shown[:-1]) + (" or " if len(shown) > 1 else "") + shown[-1]


def _check_evidence_kinds(template: Template, events: Sequence[StoredEvent],
                          sets: Sequence[tuple[str, str]], cited: tuple[int, ...]) -> None:
    """A PASS-like value must rest on the kind of evidence its field names.

    Seed 003: a local Stop is not evidence of remote cancellation, so
    ``remote_cancellation=PASS --evidence <the Stop>`` is refused, naming what is needed
    (``tracestore evidence ATTEMPT --kind cancellation_receipt --file F`` attaches it)."""
    from tracestore.review.conflicts import pass_like

    by_position = {e.position: e for e in events}
    for field, value in sets:
        spec = template.field(field)
        if spec.pass_evidence is None or not cited or not pass_like(value):
            continue
        for position in cited:
            stored = by_position[position]
            kind = getattr(stored.event, "kind", None) if stored.type == "evidence.attached" \
                else None
            if not spec.accepts(stored.type, kind):
                what = stored.type + (f" ({kind})" if kind else "")
                raise ReviewError(
                    f"{field!r} = {value!r} cites #{position}, a {what}, which cannot prove it: "
                    f"it needs {_describe_kinds(spec.pass_evidence)} (attach one with "
                    "tracestore evidence ATTEMPT --kind KIND --file F, then cite it)",
                    code="evidence_kind_mismatch", field=field, position=position,
                    needed=list(spec.pass_evidence))


def plan_review(template: Template, events: Sequence[StoredEvent], attempt_id: str, *,
                sets: Sequence[tuple[str, str]] = (), approve: bool = False,
                reviewer: str | None = None, evidence: Sequence[int] = (),
                expect_digest: str | None = None, override_reason: str | None = None,
                registry: Registry | None = None, key: Any = None) -> list[NewEvent]:
    """The review events to append for one reviewer action, or a typed refusal.

    ``events`` are the attempt's trace as the log holds it now.  Sets come first, in the
    order given; approval last.  An approval records the digest of the record it approves
    (``record.content_digest``); ``expect_digest`` is the digest the approver read.
    With ``key`` (an Ed25519 private key registered in ``registry``) every event is signed
    and the reviewer is the key's registered name; without one the store must accept
    unsigned reviews (``signing``).
    """
    if not sets and not approve:
        return []
    if override_reason is not None:
        check_value("override_reason", override_reason)
    trace_id = find_attempt(events, attempt_id).event.trace_id  # NotFound for a stranger
    registry = registry or Registry()
    if key is not None:
        name = signer_name(registry, key, None if reviewer is None else check_reviewer(reviewer))
        kid: str | None = key_id(key)
    else:
        name = check_reviewer(reviewer)
        require_unsigned_allowed(registry)
        kid = None
    cited = _check_evidence(evidence, events)
    for field, value in sets:
        spec = template.field(field)
        if spec.evidence in APPROVAL_EVIDENCE:
            raise ReviewError(f"{field!r} is filled by approvals: use --approve",
                              code="field_needs_approval", field=field)
        check_value(field, value)
    _check_evidence_kinds(template, events, sets, cited)
    _check_unknown_fields(template, events, attempt_id, sets, cited)
    overrides: list[Any] = []
    digest, refusal = None, None
    if approve:
        digest, overrides, refusal = _approval_checks(template, events, attempt_id,
                                                      expect_digest, override_reason)
    elif expect_digest is not None:
        from tracestore.review.record import fill_record

        now = fill_record(template, events, attempt_id, version="").digest
        if expect_digest.strip().lower() != now:
            raise ReviewError(f"the record changed since it was read: its digest is now "
                              f"{now}, not {expect_digest.strip()}", code="record_changed",
                              digest=now, expected=expect_digest)
    _independence(template, attempt_id, events, name, setting=bool(sets), approving=approve,
                  digest=digest, key_id=kid)
    if refusal is not None:
        raise refusal
    from tracestore.events import ReviewApproved, ReviewFieldSet

    stream = review_stream(template.name, attempt_id)
    planned = [NewEvent(stream, ReviewFieldSet(attempt_id=attempt_id, template=template.name,
                                               field=f, value=v, reviewer=name, evidence=cited),
                        trace_id=trace_id) for f, v in sets]
    if approve:
        reason = override_reason.strip() if override_reason and overrides else None
        planned.append(NewEvent(stream, ReviewApproved(
            attempt_id=attempt_id, template=template.name, reviewer=name, digest=digest,
            override_reason=reason), trace_id=trace_id))
    if key is not None:
        for new in planned:
            new.event = sign(new.event, key)
    return planned

