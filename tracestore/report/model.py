"""The trace report's data: one trace's events turned into lanes, rows and records.

A renderer over the existing projections, not a second copy of them: decisions,
destinations and violations come from ``projections.audit``, attempt facts (Stop, drain,
native terminal) from the attempt views it judged, review records from
``review.fill_record``.  What is new here is only layout: which lane an event belongs to,
what to call it, and which marks it carries.  Pure: events in, a frozen report out.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tracestore.errors import InputError, NotFound
from tracestore.events import StoredEvent, TraceOpened
from tracestore.projections import AuditReport, Violation, audit, trace_attempts
from tracestore.projections.destinations import AttemptDestinations
from tracestore.projections.reasons import DESCRIPTIONS
from tracestore.providers.base import make_normalizer
from tracestore.review.record import ReviewRecord, fill_record
from tracestore.review.templates import Template

#: Row kinds (CSS classes in the page): each is drawn distinctly.
KINDS = ("trace", "open", "frame", "delta", "terminal", "error", "stop", "drain", "semantic",
         "decision", "write", "progress", "review", "segment", "keepalive", "fold", "other")


@dataclass(frozen=True, slots=True)
class Row:
    """One event at its global position, in its lane (0 = the trace itself)."""

    position: int
    lane: int
    kind: str
    label: str
    "A short fixed word (STOP, drain clean, ui …): our vocabulary, never model text."
    text: str | None
    "Untrusted detail (model text, destination text); the template escapes it."
    marks: tuple[str, ...] = ()
    "late (after the attempt's decision), application (a real app's write) …"
    violations: tuple[Violation, ...] = ()
    native: LazyJSON | None = None
    "A frame's native JSON as recorded (pretty-printed when shown, in a closed ``<details>``)."
    block: int | None = None
    "The content block a delta belongs to (runs of one block's deltas fold together)."
    members: tuple[Row, ...] = ()
    "A folded row's rows (deltas of one block, or capture segments and keepalives)."
    last_position: int | None = None
    "A folded row's last position."

    @property
    def count(self) -> int:
        return len(self.members) or 1


@dataclass(frozen=True, slots=True)
class Lane:
    attempt_id: str
    reader: str | None
    api: str
    retry_of: str | None
    audit: AttemptDestinations
    "The attempt's destinations and its release decision (``audit.decision``)."
    stop_position: int | None
    drain_position: int | None
    terminal_position: int | None
    record: ReviewRecord | None
    number: int = 0
    "1 for the trace's first attempt, 2 for the next … (all attempts, shown or not)."
    retry_number: int | None = None
    "The number of the attempt this one retries."
    facts: Any = None
    "``report.facts.AttemptFacts``: request settings, model, usage, timings."

    @property
    def decision(self) -> Any:
        return self.audit.decision

    @property
    def label(self) -> str:
        """What people call the attempt: "attempt 3 (retry of 2)"."""
        retry = f" (retry of {self.retry_number})" if self.retry_number else (
            " (a retry)" if self.retry_of else "")
        return f"attempt {self.number}{retry}"


@dataclass(frozen=True, slots=True)
class TraceReport:
    trace_id: str
    trace: TraceOpened | None
    lanes: tuple[Lane, ...]
    rows: tuple[Row, ...]
    violations: tuple[Violation, ...]
    head_position: int
    descriptions: dict[str, str]
    "Reason code → sentence, for every code the page shows."
    diffs: dict[int, Any] = field(default_factory=dict)
    "Write position → word diff against the released answer (``facts.word_diff``)."
    all_attempts: int = 0
    "Attempts in the trace (the lanes may show fewer)."


def build_report(events: Sequence[StoredEvent], trace_id: str, *,
                 attempts: Sequence[str] | None = None, template: Template | None = None,
                 version: str = "") -> TraceReport:
    """The report of one trace (``attempts`` narrows the lanes; ``template`` adds records).

    Built with the cyclic garbage collector paused: a long attempt's page makes tens of
    thousands of small objects that all stay alive (rows, observations), and each one
    triggers collections that walk every live object again (the trace's events included),
    about a third of the build for 10,000 frames.  Any cycle made meanwhile is collected as
    usual once the report is built (the collector runs again then)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _build(events, trace_id, attempts, template, version)
    finally:
        if paused:
            gc.enable()


def _build(events: Sequence[StoredEvent], trace_id: str, attempts: Sequence[str] | None,
           template: Template | None, version: str) -> TraceReport:
    all_attempts = trace_attempts(events, trace_id)
    if not all_attempts:
        raise NotFound(f"no attempts for trace {trace_id!r} in the log", code="trace_not_found",
                       trace_id=trace_id)
    chosen = list(attempts) if attempts else all_attempts
    for attempt_id in chosen:
        if attempt_id not in all_attempts:
            raise InputError(f"attempt {attempt_id!r} is not part of trace {trace_id!r}",
                             code="attempt_not_in_trace", attempt_id=attempt_id)
    from tracestore.report.facts import attempt_facts, write_diffs
    from tracestore.report.layout import fold_rows

    report = audit(events, trace_id=trace_id, observe=True)
    numbers = {a: i + 1 for i, a in enumerate(all_attempts)}
    by_attempt: dict[str, list[StoredEvent]] = {}
    for stored in events:
        if stored.attempt_id is not None:
            by_attempt.setdefault(stored.attempt_id, []).append(stored)
    built = [_lane(by_attempt.get(a, []), events, a, report, template, version, numbers)
             for a in chosen]
    violations = tuple(v for v in report.violations if v.attempt_id in chosen)
    frames: dict[int, tuple[str, str, str | None, int | None]] = {}
    for _, described in built:
        for position, kind, label, text, block, _usage in described:
            frames[position] = (kind, label, text, block)
    lanes = tuple(replace(lane, facts=attempt_facts(by_attempt.get(lane.attempt_id, []),
                                                    described))
                  for lane, described in built)
    rows = tuple(fold_rows(_rows(events, trace_id, lanes, violations, frames)))
    trace = next((e.event for e in events if isinstance(e.event, TraceOpened)
                  and e.event.trace_id == trace_id), None)
    codes = {c for lane in lanes for c in (*lane.decision.reasons, *lane.decision.notes,
                                           lane.decision.status)}
    codes |= {v.code for v in violations}
    descriptions = {c: DESCRIPTIONS.get(c, "") for c in sorted(codes)}
    head = max((e.position for e in events), default=0)
    return TraceReport(trace_id, trace, lanes, rows, violations, head, descriptions,
                       write_diffs(events, lanes, violations), len(all_attempts))


def _lane(own: Sequence[StoredEvent], events: Sequence[StoredEvent], attempt_id: str,
          report: AuditReport, template: Template | None, version: str,
          numbers: dict[str, int]) -> tuple[Lane, list[FrameRow]]:
    """One attempt's lane and its frames described; ``own`` are the attempt's events,
    ``events`` the trace's."""
    dest = next(a for a in report.attempts if a.attempt_id == attempt_id)
    start = next(e.event for e in own if e.type == "attempt.started")
    drains = [e.position for e in own if e.type == "transport.drained"]
    stops = [e.position for e in own if e.type == "local.stopped"]
    record = (fill_record(template, events, attempt_id, version=version, report=report)
              if template is not None else None)
    described = _frame_rows(own, attempt_id, start.api, report.observed.get(attempt_id))
    terminal = next((row[0] for row in described if row[1] == "terminal"), None)
    return Lane(attempt_id, start.reader, start.api, start.retry_of, dest,
                stops[0] if stops else None, drains[0] if drains else None,
                terminal, record, numbers.get(attempt_id, 0),
                numbers.get(start.retry_of) if start.retry_of else None), described


#: (position, kind, label, text, block, usage) of one frame.
FrameRow = tuple[int, str, str, "str | None", "int | None", Any]


def _frame_rows(events: Sequence[StoredEvent], attempt_id: str, api: str,
                observed: Mapping[int, Any] | None = None) -> list[FrameRow]:
    """The attempt's frames described from the normalizer's observations: the ones the
    audit's fold made (``observed``, when it kept every frame's), else a fresh normalizer's
    (the same, fed the same frames in the same order)."""
    frames = [stored for stored in events
              if stored.type == "frame.received" and stored.attempt_id == attempt_id]
    normalizer = None
    if observed is None or any(stored.position not in observed for stored in frames):
        observed = None
        try:
            normalizer = make_normalizer(api)
        except InputError:
            normalizer = None
    out: list[tuple[int, str, str, str | None, int | None, Any]] = []
    for stored in frames:
        frame = stored.event
        if observed is not None:
            observations = observed[stored.position]
        elif normalizer is not None:
            observations = normalizer.feed(frame.native, frame.event_name)
        else:
            out.append((stored.position, "frame", ", ".join(frame.kinds) or "frame", None,
                        None, None))
            continue
        out.append((stored.position, *_describe_frame(observations)))
    return out


def _describe_frame(observed: Any) -> tuple[str, str, str | None, int | None, Any]:
    """(kind, label, text, block, usage) for one frame, from the observations of the
    normalizer the projections use."""
    if type(observed) is list and len(observed) == 1:  # one text delta: nearly every frame
        obs = observed[0]
        if obs.kind == "text_delta" and obs.usage is None:
            return "delta", "text delta", obs.text or "", obs.block, None
    kind, labels, texts, block, usage = "frame", [], [], None, None
    for obs in observed:
        if obs.usage is not None:
            usage = obs.usage
        if obs.kind in ("text_delta", "final_text", "reasoning_delta"):
            kind = "delta" if kind == "frame" else kind
            labels.append(obs.kind.replace("_", " "))
            texts.append(obs.text or "")
            block = obs.block if block is None else block
        elif obs.kind == "keepalive":
            kind = "keepalive" if kind == "frame" else kind
            labels.append("keepalive")
        elif obs.kind == "raw":
            labels.append(f"{obs.native_type or 'raw'} (nothing to read)")
        elif obs.kind == "terminal":
            kind = "terminal"
            labels.append(f"native end: {obs.stop_reason or obs.status or 'unknown'}")
        elif obs.kind == "error":
            kind = "error"
            labels.append(f"error {obs.error_code or obs.native_type}")
        else:
            labels.append(obs.kind.replace("_", " "))
    return (kind, "; ".join(labels) or "frame", " ".join(texts) if texts else None, block,
            usage)


_FRAME_KINDS = frozenset({"frame", "delta", "terminal", "error"})


def _rows(events: Sequence[StoredEvent], trace_id: str, lanes: Sequence[Lane],
          violations: Sequence[Violation],
          frames: dict[int, tuple[str, str, str | None, int | None]]) -> list[Row]:
    lane_of = {lane.attempt_id: i + 1 for i, lane in enumerate(lanes)}
    grouped: dict[int, list[Violation]] = {}
    for v in violations:
        grouped.setdefault(v.position, []).append(v)
    by_position = {p: tuple(vs) for p, vs in grouped.items()}
    decided = {lane.attempt_id: lane.decision.decided_at_position for lane in lanes}
    rows = []
    for stored in events:
        owner = stored.attempt_id
        if owner is None and stored.trace_id == trace_id:
            lane_index = 0
        elif owner in lane_of:
            lane_index = lane_of[owner]
        else:
            continue
        position = stored.position
        native, block = None, None
        described = frames.get(position)
        if described is not None:
            kind, label, text, block = described
            native = LazyJSON(stored.event.native)
        else:
            kind, label, text = _describe(stored)
        marks: tuple[str, ...] = ()
        after = decided.get(owner or "")
        if (kind in _FRAME_KINDS and after is not None and position > after):
            marks = ("late",)
        elif kind in ("write", "progress") and stored.event.source == "application":
            marks = ("application",)
        rows.append(Row(position, lane_index, kind, label, text, marks,
                        by_position.get(position, ()), native, block))
    return rows


class LazyJSON:
    """A frame's native payload, pretty-printed only if a page shows it (a folded run of
    10,000 frames shows 100)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return _native_json(self.value)


def _native_json(native: Any) -> str:
    """A frame's native payload as people read JSON (non-ASCII kept; the page escapes)."""
    try:
        return json.dumps(native, ensure_ascii=False, indent=1, sort_keys=False)
    except (TypeError, ValueError):
        return repr(native)


def _describe(stored: StoredEvent) -> tuple[str, str, str | None]:
    """(kind, label, text) for every non-frame event."""
    event, kind = stored.event, stored.type
    if kind == "trace.opened":
        return "trace", "trace opened", event.profile
    if kind == "attempt.started":
        retry = f", retry of {event.retry_of}" if event.retry_of else ""
        return "open", f"open {event.api}{retry}", event.reader
    if kind == "local.stopped":
        return "stop", "STOP" + (f" by {event.by}" if event.by else ""), None
    if kind == "transport.drained":
        return "drain", f"drain {event.outcome}", event.detail
    if kind == "semantic.judged":
        return "semantic", f"semantic {event.verdict}", ", ".join(event.failed_patterns) or None
    if kind == "release.decided":
        return "decision", f"decision: {event.status}", ", ".join(event.reasons)
    if kind == "destination.written":
        return ("progress" if event.destination == "progress" else "write",
                event.destination, event.text)
    if kind == "review.field_set":
        return ("review", f"review {event.template}.{event.field} by {event.reviewer}",
                event.value)
    if kind == "review.approved":
        # Names the record it approved: the report may show another template's record,
        # which this approval does not cover.
        return "review", f"{event.template} record approved by {event.reviewer}", None
    if kind == "capture.segment":
        return "segment", f"capture segment {event.framing}", f"{event.size} bytes"
    if kind == "capture.stored":
        return "other", f"capture {event.framing}", f"{event.size} bytes"
    if kind == "model.decision":
        return "other", f"model decision {event.stage}", json.dumps(event.decision)
    return "other", kind, None
