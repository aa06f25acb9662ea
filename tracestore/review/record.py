"""Record assembly: a template plus one attempt's events become a filled review record.

Each field is, in this order of precedence: the latest reviewer value (an appended
``review.field_set`` event, with who and when), else the derived value (with the positions
it rests on), else exactly ``UNKNOWN``.  A reviewer value never hides the derived one: both
are kept on the field, and when the reviewer's words contradict the derivation the field is
flagged as a conflict.  Nothing here reads a database or a clock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from tracestore.events import StoredEvent
from tracestore.review.context import READS_VERSION, Derived, ReviewContext, build_context
from tracestore.review.derivers import get_conflict_check, get_deriver
from tracestore.review.templates import Template, TemplateField

UNKNOWN: Final = "UNKNOWN"
Source = Literal["derived", "reviewer", "unknown"]
ReviewState = Literal["unreviewed", "in-review", "approved", "stale", "conflict"]
REVIEW_STATES: Final = ("unreviewed", "in-review", "approved", "stale", "conflict")


@dataclass(frozen=True, slots=True)
class Amendment:
    """One reviewer value as recorded (a ``review.field_set`` event)."""

    field: str
    value: str
    reviewer: str
    at: str
    position: int
    evidence: tuple[int, ...]
    key_id: str | None = None
    "The reviewer key that signed the value; None: unsigned."

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.field, "value": self.value, "set_by": self.reviewer,
                "set_at": self.at, "position": self.position, "evidence": list(self.evidence),
                "signed_by_key": self.key_id}


@dataclass(frozen=True, slots=True)
class Approval:
    reviewer: str
    at: str
    position: int
    digest: str | None = None
    "The record digest the approver approved (None: recorded before approvals had one)."
    stale: bool = False
    "The record no longer has that digest (amended, new evidence, rule revised)."
    override_reason: str | None = None
    key_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"reviewer": self.reviewer, "at": self.at, "position": self.position,
                "digest": self.digest, "stale": self.stale,
                "override_reason": self.override_reason, "signed_by_key": self.key_id}


@dataclass(frozen=True, slots=True)
class FieldValue:
    name: str
    label: str
    source: Source
    value: str
    evidence: tuple[int, ...]
    set_by: str | None = None
    set_at: str | None = None
    derived: Derived | None = None
    "The derived value a reviewer value overrides (kept, never hidden)."
    conflict: bool = False

    @property
    def unknown(self) -> bool:
        """UNKNOWN, whether nobody supplied it or a reviewer wrote exactly that."""
        return self.value.strip().upper() == UNKNOWN

    def to_dict(self) -> dict[str, Any]:
        derived = (None if self.derived is None or self.source != "reviewer" else
                   {"value": self.derived.value, "evidence": list(self.derived.evidence)})
        return {"name": self.name, "label": self.label, "value": self.value,
                "source": self.source, "evidence": list(self.evidence), "set_by": self.set_by,
                "set_at": self.set_at, "derived": derived, "conflict": self.conflict}


@dataclass(frozen=True, slots=True)
class ReviewRecord:
    template: Template
    attempt_id: str | None
    "None for a blank record."
    trace_id: str | None
    as_of: int | None
    "The last trace position the record was derived from."
    version: str
    fields: tuple[FieldValue, ...]
    approvals: tuple[Approval, ...] = ()
    history: tuple[Amendment, ...] = ()
    "Every reviewer value of this record, in log order (including superseded ones)."
    orphans: tuple[Amendment, ...] = ()
    "Reviewer values for fields the template no longer has (shown, never dropped)."
    digest: str | None = None
    "sha256 of what an approval binds to (``content_digest``); None for a blank record."

    @property
    def current_approvals(self) -> list[Approval]:
        return [a for a in self.approvals if not a.stale]

    @property
    def review_state(self) -> ReviewState:
        """approved (an approval of the record as it is now) > conflict > stale (only
        approvals of an earlier content) > in-review (values, no approval) > unreviewed."""
        if self.current_approvals:
            return "approved"
        if self.conflicts:
            return "conflict"
        if self.approvals:
            return "stale"
        return "in-review" if self.history else "unreviewed"

    @property
    def unknown(self) -> list[FieldValue]:
        return [f for f in self.fields if f.unknown]

    @property
    def conflicts(self) -> list[FieldValue]:
        return [f for f in self.fields if f.conflict]

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (``tracestore review ATTEMPT --format json``)."""
        return {
            "template": self.template.name, "attempt_id": self.attempt_id,
            "trace_id": self.trace_id, "as_of_position": self.as_of,
            "tracestore_version": self.version,
            "fields": [f.to_dict() for f in self.fields],
            "unknown": [f.name for f in self.unknown],
            "conflicts": [f.name for f in self.conflicts],
            "approvals": [a.to_dict() for a in self.approvals],
            "orphan_values": [a.to_dict() for a in self.orphans],
            "digest": self.digest, "review_state": self.review_state,
        }

    def history_dict(self) -> dict[str, Any]:
        """The JSON contract of ``--history``: every value every field has had."""
        return {"template": self.template.name, "attempt_id": self.attempt_id,
                "history": [a.to_dict() for a in self.history],
                "approvals": [a.to_dict() for a in self.approvals]}


def amendments(review: Sequence[StoredEvent]) -> list[Amendment]:
    return [Amendment(e.event.field, e.event.value, e.event.reviewer, e.recorded_at.isoformat(),
                      e.position, tuple(e.event.evidence), e.event.key_id)
            for e in review if e.event.type == "review.field_set"]


def approvals(review: Sequence[StoredEvent], digest: str | None = None) -> list[Approval]:
    """Approvals of the record; each is stale unless it approved exactly ``digest``."""
    return [Approval(e.event.reviewer, e.recorded_at.isoformat(), e.position, e.event.digest,
                     e.event.digest is None or e.event.digest != digest,
                     e.event.override_reason, e.event.key_id)
            for e in review if e.event.type == "review.approved"]


#: Fields filled by approvals themselves are not part of what an approval approves.
_APPROVAL_EVIDENCE: Final = frozenset({"independent_reviewer"})


def template_version(template: Template) -> str:
    """sha256 of the template as data: rewording or adding a field is a new version."""
    doc = json.dumps(template.to_dict(), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(doc.encode("ascii")).hexdigest()


def content_digest(template: Template, fields: Sequence[FieldValue]) -> str:
    """What an approval binds to: every field's value and evidence (and the derived value a
    reviewer value overrides, with its evidence) and the template version.

    The approval field itself is left out (approving must not change what was approved),
    and so is the running tracestore version (``fill_record`` derives the digest's fields
    with an empty version): upgrading the tool does not stale every approval.
    """
    rows = []
    for f in fields:
        spec = template.field(f.name)
        if spec.evidence in _APPROVAL_EVIDENCE:
            continue
        derived = None if f.derived is None else [f.derived.value, list(f.derived.evidence)]
        rows.append([f.name, f.source, f.value, list(f.evidence), derived])
    doc = {"template": template.name, "template_sha256": template_version(template),
           "fields": rows}
    text = json.dumps(doc, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def derive(field: TemplateField, ctx: ReviewContext) -> Derived | None:
    """The field's derived value, or None; an empty derived text counts as no evidence."""
    func = get_deriver(field.evidence) if field.evidence else None
    derived = func(ctx) if func is not None else None
    return derived if derived is not None and derived.value.strip() else None


def fill_field(field: TemplateField, ctx: ReviewContext, latest: Amendment | None) -> FieldValue:
    return _field_value(field, derive(field, ctx), ctx, latest)


def _field_value(field: TemplateField, derived: Derived | None, ctx: ReviewContext | None,
                 latest: Amendment | None) -> FieldValue:
    """The field from its derived value; ``ctx`` None: no conflict check (the digest's
    copy, where conflicts are not part of what is approved)."""
    if latest is not None:
        check = get_conflict_check(field.evidence) if field.evidence and ctx else None
        conflict = bool(derived is not None and check is not None and ctx is not None
                        and check(latest.value, ctx))
        evidence = tuple(sorted({latest.position, *latest.evidence}))
        return FieldValue(field.name, field.label, "reviewer", latest.value, evidence,
                          latest.reviewer, latest.at, derived, conflict)
    if derived is not None:
        return FieldValue(field.name, field.label, "derived", derived.value, derived.evidence)
    return FieldValue(field.name, field.label, "unknown", UNKNOWN, ())


def fill_record(template: Template, events: Sequence[StoredEvent], attempt_id: str, *,
                version: str, report: Any = None) -> ReviewRecord:
    """The record for ``attempt_id`` from its trace's events (``NotFound`` if absent);
    ``report`` is the trace's audit when the caller computed it already.

    Each field is derived once: the digest binds the fields as derived with an empty
    version, and only the derivers that read the version (``READS_VERSION``) differ there,
    so only those run a second time."""
    ctx = build_context(events, attempt_id, template=template.name, version=version,
                        report=report)
    review = ctx.review_events()
    history = amendments(review)
    latest = {a.field: a for a in history}  # later values replace earlier ones
    names = {f.name for f in template.fields}
    derived = [derive(f, ctx) for f in template.fields]
    fields = tuple(_field_value(f, d, ctx, latest.get(f.name))
                   for f, d in zip(template.fields, derived))
    if version:
        unversioned = dataclasses.replace(ctx, version="")
        bound = tuple(
            _field_value(f, derive(f, unversioned), None, latest.get(f.name))
            if f.evidence in READS_VERSION else field
            for f, field in zip(template.fields, fields))
    else:
        bound = fields
    digest = content_digest(template, bound)
    return ReviewRecord(template, attempt_id, ctx.started.trace_id, ctx.as_of, version, fields,
                        tuple(approvals(review, digest)), tuple(history),
                        tuple(a for a in history if a.field not in names), digest)


def blank_record(template: Template, *, version: str) -> ReviewRecord:
    """The empty record: every field UNKNOWN (a blank is UNKNOWN, never PASS)."""
    fields = tuple(FieldValue(f.name, f.label, "unknown", UNKNOWN, ()) for f in template.fields)
    return ReviewRecord(template, None, None, None, version, fields)
