"""Rendering a review record: Markdown for people, JSON for scripts.

The Markdown is a table like seed 003's records (``| Field | Value | Source | Evidence |``)
followed by one summary line naming the UNKNOWN fields and the conflicts, so a reader can
never mistake a blank for a pass.  Every cell goes through ``md_cell``; nothing untrusted
is written raw.  Both renderers are pure: the same record gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracestore.review.escape import json_text, md_cell
from tracestore.review.record import Approval, FieldValue, ReviewRecord

_NONE = "—"


def cite(positions: Iterable[int]) -> str:
    """``#5, #9`` (or a dash when nothing is cited)."""
    text = ", ".join(f"#{p}" for p in positions)
    return text or _NONE


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _value_cell(f: FieldValue) -> str:
    value = md_cell(f.value)
    if f.source != "reviewer" or f.derived is None:
        return value
    derived = f"derived: {md_cell(f.derived.value)}"
    if f.conflict:
        return f"**CONFLICT** — reviewer: {value}<br>{derived}"
    return f"{value}<br>{derived}"


def _source_cell(f: FieldValue) -> str:
    if f.source == "reviewer":
        return f"reviewer {md_cell(f.set_by)}, {md_cell(f.set_at)}"
    return f.source


def _evidence_cell(f: FieldValue) -> str:
    if f.source == "reviewer" and f.derived is not None:
        return f"{cite(f.evidence)}; derived: {cite(f.derived.evidence)}"
    return cite(f.evidence)


def _labels(fields: Sequence[FieldValue]) -> str:
    return "; ".join(md_cell(f.label) for f in fields)


def summary_line(record: ReviewRecord) -> str:
    """``UNKNOWN: 2 of 13 fields (…). Conflicts: 1 (…).`` — one line, always present."""
    unknown, conflicts = record.unknown, record.conflicts
    line = f"UNKNOWN: {len(unknown)} of {len(record.fields)} fields"
    line += f" ({_labels(unknown)})." if unknown else "."
    line += f" Conflicts: {len(conflicts)}"
    line += f" ({_labels(conflicts)})." if conflicts else "."
    return line


def _approval(a: Approval) -> str:
    notes = [f"#{a.position}"]
    if a.stale:
        notes.append("STALE: the record changed after it was approved" if a.digest else
                     "STALE: not bound to the record's content")
    if a.override_reason:
        notes.append(f"overrode a CONFLICT: {md_cell(a.override_reason)}")
    return f"{md_cell(a.reviewer)} at {md_cell(a.at)} ({'; '.join(notes)})"


def _approvals_line(approvals: Sequence[Approval]) -> str:
    if not approvals:
        return "Approvals: none."
    return "Approvals: " + ", ".join(_approval(a) for a in approvals) + "."


def _state_line(record: ReviewRecord) -> str:
    """``Review state: stale · record digest …`` (only once anyone has reviewed)."""
    unsigned = [a.position for a in record.history if a.key_id is None]
    unsigned += [a.position for a in record.approvals if a.key_id is None]
    signed = (f"UNSIGNED reviews at {cite(sorted(unsigned))}" if unsigned
              else "every review signed")
    return (f"Review state: {record.review_state} · {signed} · record digest "
            f"{record.digest}")


def _heading(record: ReviewRecord, what: str) -> list[str]:
    title = md_cell(record.template.title)
    if record.attempt_id is None:
        return [f"# {title} (blank)", "",
                f"Template {md_cell(record.template.name)}: every field is UNKNOWN until "
                "evidence or a reviewer fills it.", ""]
    return [f"# {title}: {what} {md_cell(record.attempt_id)}", "",
            f"Template {md_cell(record.template.name)} · trace {md_cell(record.trace_id)} · "
            f"events up to #{record.as_of} · tracestore {md_cell(record.version)}", ""]


def render_markdown(record: ReviewRecord) -> str:
    """The record as a Markdown document (ends with a newline)."""
    lines = _heading(record, "attempt")
    lines += [md_cell(record.template.description), "",
              _row("Field", "Value", "Source", "Evidence"), _row("---", "---", "---", "---")]
    for f in record.fields:
        lines.append(_row(md_cell(f.label), _value_cell(f), _source_cell(f), _evidence_cell(f)))
    lines += ["", summary_line(record)]
    if record.attempt_id is not None:
        lines.append(_approvals_line(record.approvals))
        if record.review_state != "unreviewed":
            lines.append(_state_line(record))
    if record.orphans:
        lines.append("Reviewer values for fields this template no longer has: " + ", ".join(
            f"{md_cell(a.field)} (#{a.position})" for a in record.orphans) + ".")
    return "\n".join(lines) + "\n"


def render_history_markdown(record: ReviewRecord) -> str:
    """Every value every field has had, oldest first, then the approvals."""
    lines = _heading(record, "history of attempt")
    if not record.history:
        lines.append("No reviewer values recorded.")
    else:
        labels = {f.name: f.label for f in record.template.fields}
        lines += [_row("Field", "Value", "Set by", "Set at", "Position", "Evidence"),
                  _row("---", "---", "---", "---", "---", "---")]
        for a in record.history:
            lines.append(_row(md_cell(labels.get(a.field, a.field)), md_cell(a.value),
                              md_cell(a.reviewer), md_cell(a.at), f"#{a.position}",
                              cite(a.evidence)))
    lines += ["", _approvals_line(record.approvals)]
    return "\n".join(lines) + "\n"


# One line, like every JSON document tracestore writes (docs/json.md); it was indented.
def render_json(record: ReviewRecord) -> str:
    return json_text(record.to_dict(), indent=None) + "\n"


def render_history_json(record: ReviewRecord) -> str:
    return json_text(record.history_dict(), indent=None) + "\n"
