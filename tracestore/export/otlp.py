"""OpenTelemetry export: one root span per turn, one child span per attempt.

Spans are built with the official SDK and encoded by the official OTLP encoder, so any
OTLP receiver reads them: ``otlp_json_lines`` writes OTLP/JSON lines (the shape the
Collector's file exporter writes); ``otlp_send`` posts OTLP/HTTP protobuf and resolves the
standard ``OTEL_*`` variables.  ``otlp_attrs`` names the span and writes its GenAI /
OpenInference / ``tracestore.*`` attributes; ``otlp_events`` summarizes the frames into span
events without losing any.

Ids are derived from the log (sha256 of the trace / attempt id), so the same log exports to
the same ids; all attempts of one trace share one OTel trace id, hang under the turn's root
span (``turn <trace id>``: status OK only when the turn released an answer and the audit
found no violation) and a retry links to the attempt it retries.  Times are only ever real ones (``real_times``): a live recording's
attempt runs from its start to its drain, with a ``First Token Stream Event`` at the first
text; a file ingest or replay has no timing, so its spans are one instant marked
``tracestore.timing = "not recorded"``.  ``tracestore.position`` orders the events.  Lone surrogates become
U+FFFD before anything is decided, digested or encoded.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from tracestore.text import neutralize
from tracestore.events import StoredEvent
from tracestore.projections import AttemptView, ReleaseDecision, decide_all, project_attempt


def _id(kind: str, name: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(f"{kind}:{name}".encode()).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OTel


def _stamp(when: Any) -> int:
    import datetime as dt

    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1_000_000) * 1000


def _observed(stored: StoredEvent) -> int | None:
    """The application's observed time of the event (``observed_at``), None when absent."""
    import datetime as dt

    observed = getattr(stored.event, "observed_at", None)
    if not observed:
        return None
    try:
        return _stamp(dt.datetime.fromisoformat(observed.replace("Z", "+00:00")))
    except ValueError:
        return None  # an unparseable application time is no time


def real_times(mine: Sequence[StoredEvent]) -> dict[int, int]:
    """Position → the real time of each of the attempt's events that has one.

    A real time is the application's observed time, or -- in a live recording, whose
    frames the store appends chunk by chunk as they arrive (``capture.segment`` events) --
    the store's recorded time.  A file ingest or replay appends everything at once: its
    recorded times are the command's, not the stream's, and count for nothing.

    The log's order is the truth of what came first; the times are two clocks read at
    different moments (a recorder's writer takes an event's observed time while it builds
    a batch, and the store stamps the whole batch when it commits it), so a Stop can read
    a few milliseconds before the frame it followed.  A time earlier than one before it in
    the log is lifted to that one: the span's events never run backwards, and the drain
    never ends the span before its first token."""
    live = any(e.type == "capture.segment" for e in mine)
    out: dict[int, int] = {}
    latest = None
    for stored in mine:
        when = _observed(stored)
        if when is None and live:
            when = _stamp(stored.recorded_at)
        if when is not None:
            latest = when if latest is None else max(latest, when)
            out[stored.position] = latest
    return out


class _Ids:
    """An SDK id generator that hands out the ids chosen for the next span."""

    def __init__(self) -> None:
        self.trace_id = self.span_id = 1

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id

    def is_trace_id_random(self) -> bool:
        return False  # derived from the log, not random (the W3C "random" flag stays off)


#: Span limits: far above what a summarized attempt produces (``otlp_events``), so the SDK
#: drops nothing; ``dropped`` counts anything it did drop, and the CLI reports it.
MAX_EVENTS = 100_000
MAX_ATTRIBUTES = 1_000


def build_spans(events: Sequence[StoredEvent], *, redact: bool = False, content: bool = False,
                resource: dict[str, Any] | None = None) -> list[Any]:
    """Finished SDK spans (``ReadableSpan``) for every attempt in ``events``.

    ``content``: model text, the request's messages and native frames go into the spans
    (opt-in, as the GenAI conventions ask); ``redact`` wins over it: every model text is
    then its ``sha256:`` digest.  ``resource``: the resource attributes (default
    ``service.name=tracestore`` and the version).
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import tracestore
    from tracestore.export.otlp_events import Content

    mode = Content.digest if redact else Content.full if content else Content.none
    ids = _Ids()
    memory = InMemorySpanExporter()
    # A fixed resource (no detectors): the same log always exports the same bytes.
    attrs = resource if resource is not None else {
        "service.name": "tracestore", "service.version": tracestore.__version__}
    limits = SpanLimits(max_events=MAX_EVENTS, max_attributes=MAX_ATTRIBUTES,
                        max_event_attributes=MAX_ATTRIBUTES, max_span_attributes=MAX_ATTRIBUTES)
    provider = TracerProvider(resource=Resource(clean(attrs)), id_generator=ids,  # type: ignore[arg-type]
                              span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tracestore", tracestore.__version__)
    by_trace: dict[str | None, list[StoredEvent]] = {}
    for stored in events:
        by_trace.setdefault(stored.trace_id, []).append(_without_surrogates(stored))
    for trace_id, mine in by_trace.items():
        if trace_id is None:
            continue
        _turn(tracer, ids, trace_id, mine, mode)
    provider.shutdown()
    return list(memory.get_finished_spans())


def dropped(spans: Sequence[Any]) -> int:
    """Events, attributes and links the SDK dropped over its limits (0 when complete)."""
    return sum(s.dropped_events + s.dropped_attributes + s.dropped_links for s in spans)


def clean(value: Any) -> Any:
    """``value`` with lone surrogates (``\\ud800`` from a JSON escape) replaced by U+FFFD:
    protobuf and UTF-8 cannot encode them."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value) if _SURROGATES.search(value) else value
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


_SURROGATES = re.compile("[\ud800-\udfff]")


def inert(value: Any) -> Any:
    """What a span carries: ``clean``, then every control and bidi character shown as an
    escape, as in every other output (``tracestore.text.neutralize``) -- a trace viewer
    draws model text, and an ESC or U+202E there must not act."""
    value = clean(value)
    if isinstance(value, str):
        return neutralize.visible(value, keep="\n\t")
    if isinstance(value, list):
        return [inert(v) for v in value]
    if isinstance(value, dict):
        return {k: inert(v) for k, v in value.items()}
    return value


def _without_surrogates(stored: StoredEvent) -> StoredEvent:
    """The event with every lone surrogate in its strings replaced (itself when none), so
    the decision, the digests and the encoder all see text that UTF-8 can hold."""
    import dataclasses

    event = stored.event
    updates = {}
    for name in type(event).model_fields:
        value = getattr(event, name)
        if isinstance(value, (str, list, tuple, dict)):
            cleaned = clean(value)
            if cleaned != (list(value) if isinstance(value, tuple) else value):
                updates[name] = cleaned
    if not updates:
        return stored
    return dataclasses.replace(stored, event=event.model_copy(update=updates))


def _turn(tracer: Any, ids: _Ids, trace_id: str, mine: Sequence[StoredEvent], mode: Any
          ) -> None:
    """One trace: the attempts' spans as children of one root span that says how the turn
    ended (the released answer, or why there is none, and every audit violation)."""
    from opentelemetry import trace as otel
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from tracestore.projections.destinations import audit

    decisions = decide_all(mine, trace_id)
    if not decisions:
        return
    violations = audit(mine, trace_id=trace_id).violations
    ids.trace_id = _id("trace", trace_id, 16)
    root = SpanContext(ids.trace_id, _id("turn", trace_id, 8), is_remote=False,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent = otel.set_span_in_context(NonRecordingSpan(root))
    times = []
    for decision in decisions:
        view = project_attempt(mine, decision.attempt_id)
        ids.span_id = _id("attempt", decision.attempt_id, 8)
        times.append(_attempt_span(tracer, mine, view, decision, mode, parent))
    ids.span_id = root.span_id
    _turn_span(tracer, trace_id, mine, decisions, violations, times, mode)


def turn_outcome(decisions: Sequence[ReleaseDecision], violations: Sequence[Any]
                 ) -> tuple[ReleaseDecision, str | None]:
    """The attempt that stands for the turn (the released one, else the last opened) and
    the root span's error message (None when the turn released an answer cleanly)."""
    released = next((d for d in decisions if d.status == "released"), None)
    outcome = released or decisions[-1]
    problems = []
    if released is None:
        reason = outcome.reasons[0] if outcome.reasons else "no_reason_recorded"
        problems.append(f"{outcome.status}: {reason}")
    codes = list(dict.fromkeys(v.code for v in violations))
    if codes:
        problems.append("violation: " + ", ".join(codes))
    return outcome, "; ".join(problems) or None


def _turn_span(tracer: Any, trace_id: str, mine: Sequence[StoredEvent],
               decisions: Sequence[ReleaseDecision], violations: Sequence[Any],
               times: Sequence[tuple[int, int]], mode: Any) -> None:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from tracestore.export.otlp_events import Content

    outcome, problem = turn_outcome(decisions, violations)
    released = outcome.status == "released"
    attrs: dict[str, Any] = {
        "openinference.span.kind": "CHAIN", "gen_ai.conversation.id": trace_id,
        "tracestore.trace_id": trace_id, "tracestore.turn.status": outcome.status,
        "tracestore.turn.attempt_id": outcome.attempt_id,
        "tracestore.turn.attempts": len(decisions),
        "tracestore.turn.released": released,
        "tracestore.audit.violations": [v.code for v in violations],
        "metadata": json.dumps({
            "turn_status": outcome.status, "released": released,
            "attempt_id": outcome.attempt_id,
            "violations": [v.code for v in violations]}, ensure_ascii=False),
    }
    if released and mode is Content.full and outcome.answer is not None:
        attrs["output.value"] = outcome.answer
        attrs["output.mime_type"] = "text/plain"
    start = min(s for s, _ in times)
    end = max(e for _, e in times)
    span = tracer.start_span(inert(f"turn {trace_id}"), kind=SpanKind.INTERNAL,
                             start_time=start, attributes=inert(attrs))
    for v in violations:
        span.add_event("tracestore.violation", inert({
            "tracestore.code": v.code, "tracestore.attempt_id": v.attempt_id,
            "tracestore.destination": v.destination, "tracestore.position": v.position}),
            timestamp=start)
    if problem is None:
        span.set_status(Status(StatusCode.OK))
    else:
        span.set_status(Status(StatusCode.ERROR, clean(problem)))
    span.end(end_time=end)


def _attempt_span(tracer: Any, events: Sequence[StoredEvent], view: AttemptView,
                  decision: ReleaseDecision, mode: Any, parent: Any) -> tuple[int, int]:
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    from tracestore.export.otlp_attrs import ERROR_STATUSES, span_attributes, span_name
    from tracestore.export.otlp_events import observe, summarize
    from tracestore.export.redact import Redactor
    from tracestore.projections import reasons as R

    mine = [e for e in events if e.attempt_id == view.attempt_id]
    redactor = Redactor()
    redactor.learn_all(e.event for e in mine)  # the attempt's model text, for --redact
    frames = [e for e in mine if e.type == "frame.received"]
    observed = observe(frames)
    links = []
    if view.retry_of:
        links.append(Link(SpanContext(_id("trace", view.trace_id, 16),
                                      _id("attempt", view.retry_of, 8), is_remote=False,
                                      trace_flags=TraceFlags(TraceFlags.SAMPLED)),
                          {"tracestore.link": "retry_of"}))
    attrs = span_attributes(mine, frames, observed, view, decision, mode, redactor)
    times = real_times(mine)
    first_text = next((f for f in frames if any(
        o.kind == "text_delta" and o.text for o in observed.get(f.position, []))), None)
    if times:
        attrs["tracestore.timing"] = "recorded"
        opened = times.get(mine[0].position) if mine[0].type == "attempt.started" else None
        start = opened if opened is not None else min(times.values())
        drain = next((times[e.position] for e in mine
                      if e.type == "transport.drained" and e.position in times), None)
        framed = [times[f.position] for f in frames if f.position in times]
        end = drain if drain is not None else max(framed or [start])
        first = times.get(first_text.position) if first_text is not None else None
        if first is not None and opened is not None:
            attrs["gen_ai.response.time_to_first_chunk"] = max(first - opened, 0) / 1e9
            attrs["tracestore.time_to_first_token_ms"] = max(first - opened, 0) / 1e6
    else:
        # No real time: one instant (the recording's), never a gap between two commands.
        attrs["tracestore.timing"] = "not recorded"
        start = end = _stamp(mine[0].recorded_at)
        first = None
    span = tracer.start_span(inert(span_name(mine, frames)), context=parent,
                             kind=SpanKind.CLIENT, start_time=start, links=links,
                             attributes=inert(attrs))
    if first is not None:
        # OpenInference's streaming marker (the GenAI conventions define no span event).
        span.add_event("First Token Stream Event", timestamp=first)
    # An event with no real time of its own sits at the last real time before it in the
    # log, so the span's events stay in log order on one clock.
    when = start
    at = {}
    for stored in mine:
        when = times.get(stored.position, when)
        at[stored.position] = when
    for item in summarize(mine, observed, mode, redactor):
        span.add_event(item.name, inert(item.attributes), timestamp=at[item.stored.position])
    if decision.status in ERROR_STATUSES:
        span.set_status(Status(StatusCode.ERROR, clean(
            f"{decision.status}: {', '.join(decision.reasons)}")))
    elif decision.status == R.RELEASED:
        span.set_status(Status(StatusCode.OK))
    end = max(end, start)
    span.end(end_time=end)
    return start, end


def otlp_json_lines(spans: Sequence[Any]) -> str:
    """OTLP/JSON (one ExportTraceServiceRequest per line): hex ids, integer enums."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    if not spans:
        return ""
    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"


def _hex_ids(item: dict[str, Any]) -> None:
    """OTLP/JSON spells ids in hex, where protobuf's JSON mapping would use base64."""
    import base64

    for key in ("traceId", "spanId", "parentSpanId"):
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()
