"""OpenTelemetry export: one span per attempt, one span event per frame/Stop/drain/decision.

Spans are built with the official SDK and encoded by the official OTLP encoder, so any
OTLP receiver reads them: ``write_otlp_json`` writes OTLP/JSON lines (the shape the
Collector's file exporter writes), ``send_otlp_http`` posts OTLP/HTTP protobuf to an
endpoint with the SDK's ``OTLPSpanExporter``.

Ids are derived from the log (sha256 of the trace / attempt id), so the same log exports to
the same ids; all attempts of one trace share one OTel trace id and a retry links to the
attempt it retries.  Attribute names follow the GenAI semantic conventions where one exists
(``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.finish_reasons``,
``gen_ai.usage.*``); the rest are ``tracestore.*``.  Times are the application's observed
times when recorded, else the store's recorded-at time; ``tracestore.position`` orders.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Callable

from tracestore.events import StoredEvent
from tracestore.projections import AttemptView, ReleaseDecision, decide_all, project_attempt

#: Our API names → the semantic conventions' ``gen_ai.provider.name`` values.
PROVIDER_NAMES = {
    "openai-responses": "openai", "openai-chat": "openai", "anthropic-messages": "anthropic",
    "bedrock-converse-stream": "aws.bedrock", "gemini": "gcp.gemini", "xai": "x_ai",
}
_USAGE_KEYS = {  # native usage key → GenAI attribute
    "inputTokens": "gen_ai.usage.input_tokens", "outputTokens": "gen_ai.usage.output_tokens",
    "input_tokens": "gen_ai.usage.input_tokens", "output_tokens": "gen_ai.usage.output_tokens",
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "promptTokenCount": "gen_ai.usage.input_tokens",
    "candidatesTokenCount": "gen_ai.usage.output_tokens",
    "prompt_eval_count": "gen_ai.usage.input_tokens", "eval_count": "gen_ai.usage.output_tokens",
}


def _id(kind: str, name: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(f"{kind}:{name}".encode()).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OTel


def _nanos(stored: StoredEvent) -> int:
    import datetime as dt

    observed = getattr(stored.event, "observed_at", None)
    when = stored.recorded_at
    if observed:
        try:
            when = dt.datetime.fromisoformat(observed.replace("Z", "+00:00"))
        except ValueError:
            pass  # an unparseable application time: fall back to the store's
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1_000_000) * 1000


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


def build_spans(events: Sequence[StoredEvent], *, redact: bool = False) -> list[Any]:
    """Finished SDK spans (``ReadableSpan``) for every attempt in ``events``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import tracestore

    ids = _Ids()
    memory = InMemorySpanExporter()
    # A fixed resource (no detectors): the same log always exports the same bytes.
    provider = TracerProvider(resource=Resource({"service.name": "tracestore",
                                                 "service.version": tracestore.__version__}),
                              id_generator=ids)  # type: ignore[arg-type]
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tracestore", tracestore.__version__)
    by_trace: dict[str | None, list[StoredEvent]] = {}
    for stored in events:
        by_trace.setdefault(stored.trace_id, []).append(stored)
    for trace_id, mine in by_trace.items():
        if trace_id is None:
            continue
        for decision in decide_all(mine, trace_id):
            view = project_attempt(mine, decision.attempt_id)
            ids.trace_id = _id("trace", trace_id, 16)
            ids.span_id = _id("attempt", decision.attempt_id, 8)
            _attempt_span(tracer, mine, view, decision, redact)
    provider.shutdown()
    return list(memory.get_finished_spans())


def _attempt_span(tracer: Any, events: Sequence[StoredEvent], view: AttemptView,
                  decision: ReleaseDecision, redact: bool) -> None:
    from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

    from tracestore.export.redact import Redactor

    mine = [e for e in events if e.attempt_id == view.attempt_id]
    redactor = Redactor()
    redactor.learn_all(e.event for e in mine)  # the attempt's model text, for --redact
    texts = _frame_texts(mine)
    links = []
    if view.retry_of:
        links.append(Link(SpanContext(_id("trace", view.trace_id, 16),
                                      _id("attempt", view.retry_of, 8), is_remote=False,
                                      trace_flags=TraceFlags(TraceFlags.SAMPLED)),
                          {"tracestore.link": "retry_of"}))
    span = tracer.start_span(_span_name(mine), start_time=_nanos(mine[0]), links=links,
                             attributes=_span_attributes(mine, view, decision))
    for stored in mine:
        named = _span_event(stored, texts.get(stored.position, set()), redactor, redact)
        if named is not None:
            span.add_event(named[0], named[1], timestamp=_nanos(stored))
    if decision.status == "failed":
        span.set_status(Status(StatusCode.ERROR, ", ".join(decision.reasons)))
    span.end(end_time=max(_nanos(e) for e in mine))


def _request(events: Sequence[StoredEvent]) -> dict[str, Any]:
    return events[0].event.request or {} if events[0].type == "attempt.started" else {}


def _span_name(events: Sequence[StoredEvent]) -> str:
    model = _request(events).get("model") or _request(events).get("modelId")
    return f"chat {model}" if model else "chat"


def _span_attributes(events: Sequence[StoredEvent], view: AttemptView,
                     decision: ReleaseDecision) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "tracestore.trace_id": view.trace_id, "tracestore.attempt_id": view.attempt_id,
        "tracestore.api": view.api, "tracestore.release.status": decision.status,
        "tracestore.release.eligible": decision.eligible,
        "tracestore.release.reasons": list(decision.reasons),
        "tracestore.release.policy_version": decision.policy_version,
    }
    if decision.decided_at_position is not None:
        attrs["tracestore.release.decided_at_position"] = decision.decided_at_position
    if view.api in PROVIDER_NAMES:
        attrs["gen_ai.provider.name"] = PROVIDER_NAMES[view.api]
    model = _request(events).get("model") or _request(events).get("modelId")
    if isinstance(model, str):
        attrs["gen_ai.request.model"] = model
    reasons = [t.stop_reason or t.status for t in view.terminals if t.stop_reason or t.status]
    if reasons:
        attrs["gen_ai.response.finish_reasons"] = reasons
    for key, value in (view.usage or {}).items():
        if key in _USAGE_KEYS and isinstance(value, int):
            attrs[_USAGE_KEYS[key]] = value
    if view.reader:
        attrs["tracestore.reader"] = view.reader
    if view.retry_of:
        attrs["tracestore.retry_of"] = view.retry_of
    return attrs


def _frame_texts(events: Sequence[StoredEvent]) -> dict[int, set[str]]:
    """Position → the model texts the normalizer reads from that frame."""
    from tracestore.errors import InputError
    from tracestore.providers.base import make_normalizer

    frames = [e for e in events if e.type == "frame.received"]
    try:
        normalizer = make_normalizer(frames[0].event.api) if frames else None
    except InputError:
        normalizer = None
    found: dict[int, set[str]] = {}
    for stored in frames if normalizer is not None else ():
        for obs in normalizer.feed(stored.event.native, stored.event.event_name):
            if obs.text or obs.arguments:
                found.setdefault(stored.position, set()).add(obs.text or obs.arguments)
    return found


def _span_event(stored: StoredEvent, texts: set[str], redactor: Any, redact: bool
                ) -> tuple[str, dict[str, Any]] | None:
    event, kind = stored.event, stored.type
    attrs: dict[str, Any] = {"tracestore.position": stored.position}
    text: Callable[[str], str] = redactor.text if redact else (lambda t: t)
    if kind == "frame.received":
        native = redactor.event(event).native if redact else event.native
        attrs["tracestore.native"] = json.dumps(native, ensure_ascii=False)
        attrs["tracestore.observations"] = list(event.kinds)
        if texts:
            attrs["tracestore.text"] = [text(t) for t in sorted(texts)]
        return "tracestore.frame", attrs
    if kind == "local.stopped":
        return "tracestore.local_stop", {**attrs, "tracestore.by": event.by or ""}
    if kind == "transport.drained":
        return "tracestore.drain", {**attrs, "tracestore.outcome": event.outcome}
    if kind == "release.decided":
        return "tracestore.release_decision", {
            **attrs, "tracestore.release.status": event.status,
            "tracestore.release.eligible": event.eligible,
            "tracestore.release.reasons": list(event.reasons)}
    if kind == "destination.written":
        return "tracestore.destination_write", {
            **attrs, "tracestore.destination": event.destination,
            "tracestore.sha256": event.sha256, "tracestore.source": event.source,
            "tracestore.text": text(event.text) if event.destination != "progress"
            else event.text}
    if kind == "semantic.judged":
        return "tracestore.semantic_judgement", {**attrs, "tracestore.verdict": event.verdict}
    return None


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


def send_otlp_http(spans: Sequence[Any], endpoint: str, *, timeout: float = 10.0) -> bool:
    """Post the spans to an OTLP/HTTP endpoint (``…/v1/traces``); True when accepted."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        return exporter.export(list(spans)) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
