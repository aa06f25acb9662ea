"""Gemini Live (``BidiGenerateContent``) server messages → observations.

A server message is a flattened union, and one message may carry several members at once
(``serverContent`` with ``turnComplete`` beside ``usageMetadata``): the observations come
in the order content, tool calls, usage, terminal, so a turn's text is complete before its
end.

* ``serverContent.modelTurn.parts[].text`` is answer text (``thought`` parts are
  reasoning); ``inlineData`` parts are audio, kept as bytes in the native payload;
* ``serverContent.outputTranscription.text`` is the transcript of a spoken answer: its
  text.  ``inputTranscription`` is what the user said, not the answer;
* ``toolCall.functionCalls[]`` arrive whole: each is a ``tool_call_start`` and a
  ``tool_call_done`` with its arguments as JSON;
* ``turnComplete`` is the turn's terminal (``turnCompleteReason`` is its stop reason);
  ``generationComplete``, ``interrupted``, ``toolCallCancellation``, ``groundingMetadata``,
  ``setupComplete``, ``goAway`` and ``sessionResumptionUpdate`` are kept ``raw``.  An
  ``interrupted`` turn is the user's barge-in: the ingest places a local Stop there.

Why it is stateful: the first content of a turn is its ``message_start`` (Live has no
event of its own for a turn's beginning).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracestore.providers.base import Normalizer, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

#: Top-level members that are session notices, kept raw.
SESSION_MEMBERS = ("setupComplete", "goAway", "sessionResumptionUpdate",
                   "toolCallCancellation")
#: ``serverContent`` members that carry no answer text, kept raw.
RAW_CONTENT_MEMBERS = ("generationComplete", "interrupted", "groundingMetadata",
                       "inputTranscription", "waitingForInput", "urlContextMetadata")
KNOWN_MEMBERS = frozenset({"serverContent", "toolCall", "usageMetadata", *SESSION_MEMBERS})


def interrupted(native: Any) -> bool:
    """Whether the server says the model's turn was interrupted (the user's barge-in)."""
    content = as_map(native.get("serverContent")) if is_map(native) else None
    return bool(content and content.get("interrupted") is True)


class GeminiLiveNormalizer(Normalizer):
    """Normalizer for ``gemini-live`` (see the module docstring)."""

    def __init__(self) -> None:
        self.in_turn = False

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        out: list[Observation] = []
        content = as_map(native.get("serverContent"))
        calls = as_map(native.get("toolCall"))
        if (content is not None or calls is not None) and not self.in_turn:
            self.in_turn = True
            out.append(Observation("message_start", "serverContent" if content is not None
                                   else "toolCall"))
        for member in SESSION_MEMBERS:
            if member in native:
                out.append(Observation("raw", member))
        if content is not None:
            out += self._content(content)
        if calls is not None:
            out += self._tool_calls(calls)
        usage = as_map(native.get("usageMetadata"))
        if usage is not None:
            out.append(Observation("usage", "usageMetadata", usage=usage))
        if content is not None and content.get("turnComplete") is True:
            self.in_turn = False
            out.append(Observation("terminal", "turnComplete",
                                   stop_reason=as_str(content.get("turnCompleteReason"))))
        others = [key for key in native if key not in KNOWN_MEMBERS]
        if others or not out:
            out += unknown(others[0] if others else "<empty>")
        return out

    @staticmethod
    def _content(content: Mapping[str, Any]) -> list[Observation]:
        out: list[Observation] = []
        turn = as_map(content.get("modelTurn"))
        parts = turn.get("parts") if turn is not None else None
        for part in parts if isinstance(parts, list) else ():
            if not is_map(part):
                out += unknown("modelTurn.parts")
            elif isinstance(part.get("text"), str):
                if part.get("thought") is True:
                    out.append(Observation("reasoning_delta", "modelTurn", text=part["text"]))
                else:
                    out.append(Observation("text_delta", "modelTurn", text=part["text"]))
            elif "inlineData" in part:
                out.append(Observation("raw", "inlineData", block_type="audio"))
            else:
                out += unknown("modelTurn.parts")
        transcript = as_map(content.get("outputTranscription"))
        if transcript is not None:
            out.append(Observation("text_delta", "outputTranscription",
                                   text=as_str(transcript.get("text"))))
        for member in RAW_CONTENT_MEMBERS:
            if member in content:
                out.append(Observation("raw", member))
        return out

    @staticmethod
    def _tool_calls(calls: Mapping[str, Any]) -> list[Observation]:
        out: list[Observation] = []
        listed = calls.get("functionCalls")
        for call in listed if isinstance(listed, list) else ():
            if not is_map(call):
                out += unknown("toolCall.functionCalls")
                continue
            call_id, name = as_str(call.get("id")), as_str(call.get("name"))
            args = call.get("args")
            arguments = json.dumps(args, ensure_ascii=False) if args is not None else None
            out.append(Observation("tool_call_start", "toolCall", block_type="tool_use",
                                   tool_call_id=call_id, tool_name=name))
            out.append(Observation("tool_call_done", "toolCall", tool_call_id=call_id,
                                   tool_name=name, arguments=arguments))
        return out


register("gemini-live")(GeminiLiveNormalizer)
