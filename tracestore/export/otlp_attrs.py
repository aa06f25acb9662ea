"""The attributes of an attempt's span: GenAI semantic conventions, OpenInference, ours.

GenAI (``gen_ai.*``): operation, provider, request/response model, finish reasons, usage,
and with content the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON the
conventions define (the released answer, or the candidate with its release status).
OpenInference (what Phoenix reads): ``openinference.span.kind=LLM``, ``llm.model_name``,
``llm.provider``, token counts, ``metadata`` (the release status, for Phoenix's Info tab
and filters), and with content ``input.value`` / ``output.value``.
Ours (``tracestore.*``): ids, API, the release status, eligibility, reasons, the status's
description, the decided position.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracestore.events import StoredEvent
from tracestore.export.otlp_events import Content
from tracestore.projections import AttemptView, ReleaseDecision

#: Our API names → the semantic conventions' ``gen_ai.provider.name`` values.
PROVIDER_NAMES = {
    "openai-responses": "openai", "openai-chat": "openai", "anthropic-messages": "anthropic",
    "bedrock-converse-stream": "aws.bedrock", "gemini": "gcp.gemini", "xai": "x_ai",
}
#: Attempt outcomes that are a failure of the answer (the span's status is ERROR).  A
#: stopped or superseded attempt is the user's or the application's choice, and a pending
#: one has no outcome yet: their status stays UNSET and ``tracestore.release.status`` says
#: which it is.
ERROR_STATUSES = frozenset({"failed", "interrupted", "limited", "rejected", "held",
                            "incomplete"})
_USAGE_KEYS = {  # native usage key → GenAI attribute
    "inputTokens": "gen_ai.usage.input_tokens", "outputTokens": "gen_ai.usage.output_tokens",
    "input_tokens": "gen_ai.usage.input_tokens", "output_tokens": "gen_ai.usage.output_tokens",
    "prompt_tokens": "gen_ai.usage.input_tokens",
    "completion_tokens": "gen_ai.usage.output_tokens",
    "promptTokenCount": "gen_ai.usage.input_tokens",
    "candidatesTokenCount": "gen_ai.usage.output_tokens",
    "prompt_eval_count": "gen_ai.usage.input_tokens", "eval_count": "gen_ai.usage.output_tokens",
}
_OPENINFERENCE_TOKENS = {"gen_ai.usage.input_tokens": "llm.token_count.prompt",
                         "gen_ai.usage.output_tokens": "llm.token_count.completion"}


def request(events: Sequence[StoredEvent]) -> dict[str, Any]:
    first = events[0]
    return (first.event.request or {}) if first.type == "attempt.started" else {}


def request_model(events: Sequence[StoredEvent]) -> str | None:
    model = request(events).get("model") or request(events).get("modelId")
    return model if isinstance(model, str) else None


def response_model(frames: Sequence[StoredEvent]) -> str | None:
    """The model the provider says answered, read from the frames (OpenAI ``response.model``
    / ``model``, Anthropic ``message.model``, Gemini ``modelVersion``); None when absent."""
    for frame in frames:
        native = frame.event.native
        if not isinstance(native, dict):
            continue
        for holder in (native, native.get("response"), native.get("message")):
            if isinstance(holder, dict):
                for key in ("model", "modelVersion"):
                    if isinstance(holder.get(key), str) and holder[key]:
                        return holder[key]
    return None


def span_name(events: Sequence[StoredEvent], frames: Sequence[StoredEvent]) -> str:
    model = response_model(frames) or request_model(events)
    return f"chat {model}" if model else "chat"


def span_attributes(events: Sequence[StoredEvent], frames: Sequence[StoredEvent],
                    observed: dict[int, list[Any]], view: AttemptView,
                    decision: ReleaseDecision, mode: Content, redactor: Any) -> dict[str, Any]:
    from tracestore.projections.reasons import DESCRIPTIONS

    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "openinference.span.kind": "LLM",
        "tracestore.trace_id": view.trace_id, "tracestore.attempt_id": view.attempt_id,
        "tracestore.api": view.api, "tracestore.release.status": decision.status,
        "tracestore.release.description": DESCRIPTIONS.get(decision.status, decision.status),
        "tracestore.release.eligible": decision.eligible,
        "tracestore.release.reasons": list(decision.reasons),
        "tracestore.release.policy_version": decision.policy_version,
        "tracestore.frames": len(frames),
    }
    if decision.reasons:
        attrs["tracestore.release.first_reason"] = decision.reasons[0]
    if decision.status in ERROR_STATUSES and decision.reasons:
        attrs["error.type"] = decision.reasons[0]
    if decision.decided_at_position is not None:
        attrs["tracestore.release.decided_at_position"] = decision.decided_at_position
    if view.api in PROVIDER_NAMES:
        attrs["gen_ai.provider.name"] = attrs["llm.provider"] = PROVIDER_NAMES[view.api]
    asked, answered = request_model(events), response_model(frames)
    if asked:
        attrs["gen_ai.request.model"] = asked
    if answered:
        attrs["gen_ai.response.model"] = answered
    if answered or asked:
        attrs["llm.model_name"] = answered or asked
    reasons = [r for t in view.terminals if (r := t.stop_reason or t.status)]
    if reasons:
        attrs["gen_ai.response.finish_reasons"] = reasons
    for key, value in (view.usage or {}).items():
        if key in _USAGE_KEYS and isinstance(value, int):
            attrs[_USAGE_KEYS[key]] = value
            attrs[_OPENINFERENCE_TOKENS[_USAGE_KEYS[key]]] = value
    if view.reader:
        attrs["tracestore.reader"] = view.reader
    if view.retry_of:
        attrs["tracestore.retry_of"] = view.retry_of
    # OpenInference metadata: Phoenix shows it on the span's Info tab and filters on it
    # (metadata['release_status'] == 'stopped'), where plain attributes stay a tab away.
    attrs["metadata"] = json.dumps({
        "release_status": decision.status, "release_reasons": list(decision.reasons),
        "attempt_id": view.attempt_id, "retry_of": view.retry_of}, ensure_ascii=False)
    if mode is not Content.none:
        attrs.update(_content(events, view, decision, mode, redactor, reasons))
    return attrs


def _content(events: Sequence[StoredEvent], view: AttemptView, decision: ReleaseDecision,
             mode: Content, redactor: Any, finish: list[str]) -> dict[str, Any]:
    """The answer and the request as the GenAI conventions and OpenInference spell them."""
    released = decision.status == "released" and decision.answer is not None
    answer = decision.answer if released else (decision.decided_text or view.text)
    text = redactor.text(answer) if mode is Content.digest else answer
    output = {"role": "assistant", "parts": [{"type": "text", "content": text}],
              "finish_reason": finish[-1] if finish else decision.status,
              "tracestore.release_status": decision.status}
    attrs: dict[str, Any] = {
        "gen_ai.output.messages": json.dumps([output], ensure_ascii=False),
        "tracestore.output.kind": "released" if released else "candidate",
        "output.value": text or "", "output.mime_type": "text/plain",
    }
    messages = input_messages(request(events))
    if messages:
        if mode is Content.digest:
            for message in messages:
                for part in message["parts"]:
                    if "content" in part:
                        part["content"] = redactor.text(part["content"])
        attrs["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
        attrs["input.value"] = attrs["gen_ai.input.messages"]
        attrs["input.mime_type"] = "application/json"
    return attrs


def input_messages(req: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded request's messages as GenAI ``ChatMessage`` objects ([] when none)."""
    out: list[dict[str, Any]] = []
    for key in ("system", "instructions"):
        if req.get(key):
            out.append({"role": "system", "parts": _parts(req[key])})
    items = req.get("messages") or req.get("contents") or req.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict):
            body = item.get("content", item.get("parts"))
            out.append({"role": str(item.get("role", "user")), "parts": _parts(body)})
    return out


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, str):
            parts.append({"type": "text", "content": item})
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append({"type": "text", "content": item["text"]})
        elif isinstance(item, dict):
            parts.append({"type": str(item.get("type", "unknown"))})
    return parts
