"""AWS Bedrock ConverseStream events → observations.

A Bedrock native is a dict with exactly ONE top-level key naming the union member
(``{"contentBlockDelta": {...}}``), which is how the event-stream ``:event-type`` /
``:exception-type`` header and the JSON payload combine; :func:`bedrock_native_from_message`
builds it from a decoded binary message.  Payloads carry a random ``"p"`` padding field
that is ignored here (the caller keeps the native untouched as evidence).

State kept, because the protocol needs it: which block index is a tool use (id, name and
the input fragments, since Bedrock never sends the full input string again — the
``contentBlockStop`` is where the accumulated arguments become authoritative), and the
block type first seen per index so ``block_stop`` can say what closed.
"""

from __future__ import annotations

from typing import Any, Mapping

from tracestore.errors import WireError
from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation
from tracestore.providers.strictjson import strict_loads

#: Event members of the ConverseStreamOutput union (service-2.json).
EVENT_MEMBERS = frozenset({"messageStart", "contentBlockStart", "contentBlockDelta",
                           "contentBlockStop", "messageStop", "metadata"})

#: Modeled exception members; any other ``*Exception`` key is treated the same way.
EXCEPTION_MEMBERS = frozenset({"internalServerException", "modelStreamErrorException",
                               "validationException", "throttlingException",
                               "serviceUnavailableException"})

#: Delta members that are known but carry no text/tool/reasoning content we normalize.
RAW_DELTA_MEMBERS = frozenset({"citation", "toolResult", "image"})


def bedrock_native_from_message(headers: Mapping[str, Any], payload: bytes,
                                *, offset: int | None = None) -> dict[str, Any]:
    """Combine one decoded event-stream message into the one-key native dict.

    ``event`` → ``{event_type: payload}``, ``exception`` → ``{exception_type: payload}``,
    ``error`` (unmodeled, empty payload) → ``{"error": {"code": ..., "message": ...}}``.
    An empty event/exception payload reads as ``{}``; a non-JSON one raises
    ``WireError(code="invalid_json")``.
    """
    message_type = headers.get(":message-type")
    if message_type == "error":
        return {"error": {"code": _header_text(headers, ":error-code", offset),
                          "message": _header_text(headers, ":error-message", offset)}}
    if message_type == "event":
        name = headers.get(":event-type")
    elif message_type == "exception":
        name = headers.get(":exception-type")
    else:
        raise WireError(f"event-stream message type {message_type!r} is not event, exception "
                        "or error", code="unknown_message_type", offset=offset)
    if not isinstance(name, str) or not name:
        raise WireError(f"{message_type} message without a type header", code="missing_header",
                        offset=offset)
    body = strict_loads(payload, offset=offset) if payload else {}
    return {name: body}


def _header_text(headers: Mapping[str, Any], name: str, offset: int | None) -> str | None:
    """A header that becomes part of the native: text, or UTF-8 bytes read as text.

    Any other value (bytes that are not UTF-8, an integer, a timestamp) has no JSON form
    that says exactly what was sent, so it is refused rather than stored converted.
    """
    value = headers.get(name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise WireError(f"event-stream header {name} is not text ({type(value).__name__})",
                    code="invalid_header", offset=offset)


_TEXT_DELTA = ("text_delta",)


class BedrockConverseStreamNormalizer(Normalizer):
    """Normalizer for ``bedrock-converse-stream``."""

    def __init__(self) -> None:
        self._block_types: dict[int, str] = {}
        self._tools: dict[int, tuple[str | None, str | None]] = {}
        self._tool_args: dict[int, list[str]] = {}

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        # A text delta, nearly every frame of an answer: what the general path below
        # returns for it, checked as ``kinds`` checks it (plain dicts only).
        if type(native) is dict and len(native) == 1:
            body = native.get("contentBlockDelta")
            if type(body) is dict:
                delta = body.get("delta")
                if type(delta) is dict and len(delta) == 1:
                    text = delta.get("text")
                    if type(text) is str:
                        index = as_int(body.get("contentBlockIndex"))
                        self._note_type(index, "text")
                        return [Observation("text_delta", "contentBlockDelta", block=index,
                                            text=text)]
        if as_map(native) is None or len(native) != 1:
            return unknown(event_name or "<not-a-union-member>")
        (member, body), = native.items()
        if not isinstance(member, str):
            return unknown("<not-a-union-member>")
        if member in EXCEPTION_MEMBERS or member.endswith("Exception") or member == "error":
            error_data = as_map(body) or {}
            code = member if member != "error" else (as_str(error_data.get("code")) or "error")
            return [Observation("error", member, error_code=code,
                                message=as_str(error_data.get("message")))]
        data = as_map(body)
        if member not in EVENT_MEMBERS or data is None:
            return unknown(member)
        index = as_int(data.get("contentBlockIndex"))
        if member == "messageStart":
            return [Observation("message_start", member)]
        if member == "contentBlockStart":
            return self._start(member, data, index)
        if member == "contentBlockDelta":
            return self._delta(member, data, index)
        if member == "contentBlockStop":
            return self._stop(member, index)
        if member == "messageStop":
            return [Observation("terminal", member, stop_reason=as_str(data.get("stopReason")))]
        # metadata: accounting evidence only; absent usage stays None.
        return [Observation("usage", member, usage=as_map(data.get("usage")))]

    def kinds(self, native: Any, event_name: str | None = None) -> tuple[str, ...]:
        # A text delta is nearly every frame of an answer: its kinds without an Observation,
        # with feed's one side effect on it (the first delta names its block's type).
        if type(native) is dict and len(native) == 1:
            body = native.get("contentBlockDelta")
            if type(body) is dict:
                delta = body.get("delta")
                if type(delta) is dict and len(delta) == 1 and type(delta.get("text")) is str:
                    self._note_type(as_int(body.get("contentBlockIndex")), "text")
                    return _TEXT_DELTA
        return super().kinds(native, event_name)

    def _start(self, member: str, data: Mapping[str, Any], index: int | None) -> list[Observation]:
        start = as_map(data.get("start")) or {}
        tool = as_map(start.get("toolUse"))
        if tool is not None:
            call = (as_str(tool.get("toolUseId")), as_str(tool.get("name")))
            if index is not None:
                self._block_types[index] = "tool_use"
                self._tools[index] = call
                self._tool_args[index] = []
            return [Observation("tool_call_start", member, block=index, block_type="tool_use",
                                tool_call_id=call[0], tool_name=call[1])]
        if len(start) == 1:
            (kind,) = start
            btype = {"toolResult": "tool_result", "image": "image"}.get(kind)
            if btype is not None:
                if index is not None:
                    self._block_types[index] = btype
                return [Observation("block_start", member, block=index, block_type=btype)]
        return unknown(member, block=index)

    def _delta(self, member: str, data: Mapping[str, Any], index: int | None) -> list[Observation]:
        delta = as_map(data.get("delta")) or {}
        if len(delta) != 1:
            return unknown(member, block=index)
        (kind, value), = delta.items()
        if kind == "text" and isinstance(value, str):
            self._note_type(index, "text")
            return [Observation("text_delta", member, block=index, text=value)]
        if kind == "toolUse" and is_map(value):
            fragment = as_str(value.get("input"))
            call_id, name = self._tools.get(index, (None, None)) if index is not None else (None, None)
            if index is not None and fragment is not None:
                self._tool_args.setdefault(index, []).append(fragment)
            return [Observation("tool_call_delta", member, block=index, tool_call_id=call_id,
                                tool_name=name, arguments=fragment)]
        if kind == "reasoningContent" and is_map(value):
            if isinstance(value.get("text"), str) and len(value) == 1:
                self._note_type(index, "reasoning")
                return [Observation("reasoning_delta", member, block=index, text=value["text"])]
            if len(value) == 1 and isinstance(value.get("signature"), str):
                self._note_type(index, "reasoning")
                return [Observation("raw", member, block=index, block_type="reasoning",
                                    signature=value["signature"])]
            if len(value) == 1 and isinstance(value.get("redactedContent"), str):
                self._note_type(index, "redacted_reasoning")
                return [Observation("raw", member, block=index, block_type="redacted_reasoning")]
            return unknown(member, block=index)
        if kind in RAW_DELTA_MEMBERS:
            return [Observation("raw", member, block=index)]
        return unknown(member, block=index)

    def _stop(self, member: str, index: int | None) -> list[Observation]:
        out: list[Observation] = []
        if index is not None and index in self._tools:
            call_id, name = self._tools.pop(index)
            args = "".join(self._tool_args.pop(index, []))
            out.append(Observation("tool_call_done", member, block=index, tool_call_id=call_id,
                                   tool_name=name, arguments=args))
        btype = self._block_types.get(index) if index is not None else None
        out.append(Observation("block_stop", member, block=index, block_type=btype))
        return out

    def _note_type(self, index: int | None, btype: str) -> None:
        # Bedrock sends no contentBlockStart for text/reasoning: the first delta names it.
        if index is not None:
            self._block_types.setdefault(index, btype)


register("bedrock-converse-stream")(BedrockConverseStreamNormalizer)
