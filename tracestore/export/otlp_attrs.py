"""The attributes of an attempt's span: GenAI semantic conventions, OpenInference, ours.

GenAI (``gen_ai.*``): operation, provider, conversation (the trace id), request model and
settings, ``gen_ai.request.stream``, response id and model, finish reasons, usage (input,
output, cache read and creation, reasoning), and with content the
``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON the conventions define (the
released answer, or the candidate with its release status).
OpenInference (what Phoenix reads): ``openinference.span.kind=LLM``, ``llm.model_name``,
``llm.provider`` (OpenInference's own values), ``llm.invocation_parameters``, token
counts, ``metadata`` (the release status, for Phoenix's Info tab and filters), and with
content ``input.value`` / ``llm.input_messages.*`` / ``output.value``.
Ours (``tracestore.*``): ids, API, the release status, eligibility, reasons, the status's
description, the decided position.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
                            "incomplete", "refused"})
#: Our API names → OpenInference's own ``llm.provider`` values (its
#: ``OpenInferenceLLMProviderValues``), which are not the ``gen_ai.provider.name`` ones.
OPENINFERENCE_PROVIDERS = {
    "openai-responses": "openai", "openai-chat": "openai", "anthropic-messages": "anthropic",
    "bedrock-converse-stream": "aws", "gemini": "google", "xai": "xai", "ollama": "ollama",
}
#: Request settings → GenAI ``gen_ai.request.*``: the key as each API spells it, at the top
#: of the request or inside its settings object (Bedrock ``inferenceConfig``, Gemini
#: ``generationConfig``, Ollama ``options``).
_REQUEST_KEYS = {
    "temperature": "gen_ai.request.temperature", "top_p": "gen_ai.request.top_p",
    "topP": "gen_ai.request.top_p", "top_k": "gen_ai.request.top_k",
    "topK": "gen_ai.request.top_k", "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens", "maxTokens": "gen_ai.request.max_tokens",
    "maxOutputTokens": "gen_ai.request.max_tokens", "num_predict": "gen_ai.request.max_tokens",
    "stop": "gen_ai.request.stop_sequences", "stop_sequences": "gen_ai.request.stop_sequences",
    "stopSequences": "gen_ai.request.stop_sequences",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "frequencyPenalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "presencePenalty": "gen_ai.request.presence_penalty", "seed": "gen_ai.request.seed",
}
_SETTINGS = ("inferenceConfig", "generationConfig", "options")
#: Request keys that hold what was said (messages, system text, tools): content, never a
#: parameter.
_SAID = frozenset({"messages", "contents", "input", "system", "instructions",
                   "systemInstruction", "prompt", "tools", "toolConfig", "tool_choice",
                   "system_instruction", "prompt_cut"})


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


def response_id(frames: Sequence[StoredEvent]) -> str | None:
    """The provider's id of the answer (OpenAI ``response.id`` / chunk ``id``, Anthropic
    ``message.id``, Gemini ``responseId``); None when the frames carry none."""
    for frame in frames:
        native = frame.event.native
        if not isinstance(native, dict):
            continue
        for holder, key in ((native.get("response"), "id"), (native.get("message"), "id"),
                            (native, "responseId"), (native, "id")):
            if isinstance(holder, dict) and isinstance(holder.get(key), str) and holder[key]:
                return holder[key]
    return None


def span_name(events: Sequence[StoredEvent], frames: Sequence[StoredEvent]) -> str:
    model = response_model(frames) or request_model(events)
    return f"chat {model}" if model else "chat"


def request_attributes(req: dict[str, Any]) -> dict[str, Any]:
    """The recorded request's settings as ``gen_ai.request.*`` and OpenInference's
    ``llm.invocation_parameters`` (a JSON object of every setting; what was said -- the
    messages, system text and tools -- stays out, it is content)."""
    attrs: dict[str, Any] = {}
    holders = [req] + [req[k] for k in _SETTINGS if isinstance(req.get(k), dict)]
    for holder in holders:
        for key, name in _REQUEST_KEYS.items():
            value = holder.get(key)
            if name == "gen_ai.request.stop_sequences":
                value = [value] if isinstance(value, str) else value
                if isinstance(value, list) and all(isinstance(v, str) for v in value):
                    attrs[name] = value
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                attrs[name] = value
    parameters = {k: v for k, v in req.items() if k not in _SAID}
    if parameters:
        attrs["llm.invocation_parameters"] = json.dumps(parameters, ensure_ascii=False,
                                                        sort_keys=True)
    return attrs


def _count(usage: Mapping[str, Any], *paths: str) -> int | None:
    for path in paths:
        value: Any = usage
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def usage_attributes(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """The attempt's usage as GenAI ``gen_ai.usage.*`` and OpenInference
    ``llm.token_count.*``; only counts the usage holds (none is invented).

    The conventions count cached input inside ``input_tokens`` and reasoning inside
    ``output_tokens``: Anthropic and Bedrock report input without the cache, Gemini its
    output without the thoughts, so those are added to the totals here."""
    if not usage:
        return {}
    cache_read = _count(usage, "input_tokens_details.cached_tokens",
                        "prompt_tokens_details.cached_tokens", "cache_read_input_tokens",
                        "cacheReadInputTokens", "cachedContentTokenCount")
    cache_write = _count(usage, "cache_creation_input_tokens", "cacheWriteInputTokens")
    reasoning = _count(usage, "output_tokens_details.reasoning_tokens",
                       "completion_tokens_details.reasoning_tokens", "thoughtsTokenCount")
    tokens_in = _count(usage, "input_tokens", "inputTokens", "prompt_tokens",
                       "promptTokenCount", "prompt_eval_count")
    tokens_out = _count(usage, "output_tokens", "outputTokens", "completion_tokens",
                        "candidatesTokenCount", "eval_count")
    if tokens_in is not None:
        for key in ("cache_read_input_tokens", "cache_creation_input_tokens",
                    "cacheReadInputTokens", "cacheWriteInputTokens"):
            tokens_in += _count(usage, key) or 0
    if tokens_out is not None and "thoughtsTokenCount" in usage:
        tokens_out += _count(usage, "thoughtsTokenCount") or 0
    attrs: dict[str, Any] = {}
    for value, names in (
            (tokens_in, ("gen_ai.usage.input_tokens", "llm.token_count.prompt")),
            (tokens_out, ("gen_ai.usage.output_tokens", "llm.token_count.completion")),
            (cache_read, ("gen_ai.usage.cache_read.input_tokens",
                          "llm.token_count.prompt_details.cache_read")),
            (cache_write, ("gen_ai.usage.cache_creation.input_tokens",
                           "llm.token_count.prompt_details.cache_write")),
            (reasoning, ("gen_ai.usage.reasoning.output_tokens",
                         "llm.token_count.completion_details.reasoning")),
            (_count(usage, "total_tokens", "totalTokens", "totalTokenCount"),
             ("llm.token_count.total",))):
        if value is not None:
            attrs.update(dict.fromkeys(names, value))
    return attrs


def span_attributes(events: Sequence[StoredEvent], frames: Sequence[StoredEvent],
                    observed: dict[int, list[Any]], view: AttemptView,
                    decision: ReleaseDecision, mode: Content, redactor: Any) -> dict[str, Any]:
    from tracestore.projections.reasons import DESCRIPTIONS

    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "openinference.span.kind": "LLM",
        "gen_ai.conversation.id": view.trace_id, "gen_ai.request.stream": True,
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
        attrs["gen_ai.provider.name"] = PROVIDER_NAMES[view.api]
    if view.api in OPENINFERENCE_PROVIDERS:
        attrs["llm.provider"] = OPENINFERENCE_PROVIDERS[view.api]
    attrs.update(request_attributes(request(events)))
    asked, answered = request_model(events), response_model(frames)
    if asked:
        attrs["gen_ai.request.model"] = asked
    if answered:
        attrs["gen_ai.response.model"] = answered
    if answered or asked:
        attrs["llm.model_name"] = answered or asked
    if (answer_id := response_id(frames)) is not None:
        attrs["gen_ai.response.id"] = answer_id
    reasons = [r for t in view.terminals if (r := t.stop_reason or t.status)]
    if reasons:
        attrs["gen_ai.response.finish_reasons"] = reasons
    attrs.update(usage_attributes(view.usage))
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
        for i, message in enumerate(messages):
            prefix = f"llm.input_messages.{i}.message"
            attrs[f"{prefix}.role"] = message["role"]
            attrs[f"{prefix}.content"] = "".join(
                p.get("content", "") for p in message["parts"] if p["type"] == "text")
    return attrs


def input_messages(req: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded request's messages as GenAI ``ChatMessage`` objects ([] when none)."""
    out: list[dict[str, Any]] = []
    for key in ("system", "instructions", "systemInstruction"):
        body = req.get(key)
        if isinstance(body, dict) and "parts" in body:
            body = body["parts"]
        if body:
            out.append({"role": "system", "parts": _parts(body)})
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
