"""OpenAI Chat Completions chunks (and compatible providers) → observations.

Covers OpenAI itself plus the compatible dialects seen in captures: DeepSeek
``reasoning_content`` (with usage on the finish chunk), Groq ``reasoning`` + ``channel``
and its ``{"error": …}`` event after HTTP 200, OpenRouter ``reasoning`` /
``reasoning_details`` and its top-level ``error`` chunk, xAI chunks that omit
``finish_reason: null``, gpt-5's trailing ``moderation`` chunk, and the usage chunk with
``choices: []``.

State kept, because the protocol needs it: a tool call's id and name arrive only in its
first fragment; later fragments carry just ``index``.  The normalizer maps
(choice, tool index) → id/name and accumulates the argument fragments, and the choice's
``finish_reason`` chunk is where they become ``tool_call_done`` (chat has no per-call
done event).  ``message_start`` is emitted once, on the first ``role`` (OpenRouter
repeats ``role`` on every chunk).  The terminal is the ``finish_reason`` chunk; the
``[DONE]`` sentinel that follows is only a keepalive-like marker.
"""

from __future__ import annotations

from typing import Any, Mapping

from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

DONE_SENTINEL = "[DONE]"


def chat_error(native_type: str, err: Any) -> Observation:
    """The ``error`` observation for a chat-style ``{"error": …}`` payload.

    ``code`` may be a string (Groq ``tool_use_failed``) or a number (OpenRouter ``400``);
    numbers are rendered as their decimal string, the type is used when no code is sent.
    """
    data = as_map(err)
    if data is None:
        return Observation("error", native_type, message=as_str(err))
    code = data.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        code = str(code)
    return Observation("error", native_type, error_code=as_str(code) or as_str(data.get("type")),
                       message=as_str(data.get("message")))


def _content_parts(native_type: str, block: int, parts: list[Any]) -> list[Observation]:
    """Mistral's ``delta.content`` as a list of parts: ``text`` parts are text, ``thinking``
    parts (their ``thinking`` list of text parts) are reasoning, anything else is a form
    tracestore does not know (dropping them would release the reasoning's answer)."""
    out: list[Observation] = []
    for part in parts:
        kind = as_str(part.get("type")) if is_map(part) else None
        if kind == "text" and is_map(part):
            text = as_str(part.get("text"))
            if text:
                out.append(Observation("text_delta", native_type, block=block, text=text))
        elif kind == "thinking" and is_map(part):
            inner = part.get("thinking")
            pieces = inner if isinstance(inner, list) else [{"text": inner}]
            text = "".join(as_str(p.get("text")) or "" for p in pieces if is_map(p))
            out.append(Observation("reasoning_delta", native_type, block=block, text=text))
        else:
            out.extend(unknown(native_type, block=block))
    return out


class OpenAIChatNormalizer(Normalizer):
    """Normalizer for ``openai-chat`` (also reused by xAI for chat.completion.chunk)."""

    def __init__(self) -> None:
        self._started = False
        # (choice index, tool index) → [id, name, fragments]
        self._calls: dict[tuple[int, int], tuple[str | None, str | None, list[str]]] = {}
        # choice index → its finish_reason, once that choice's finish chunk arrived
        self._finished: dict[int, str] = {}

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if native == DONE_SENTINEL:
            return [Observation("keepalive", DONE_SENTINEL)]
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        choices = native.get("choices")
        if "error" in native and native.get("error") is not None:
            native_type = "error"
        elif isinstance(choices, list) or "usage" in native:
            native_type = as_str(native.get("object")) or "chat.completion.chunk"
        else:
            return unknown(event_name or as_str(native.get("object")) or "<not-a-chunk>")

        out: list[Observation] = []
        if native_type == "error":
            out.append(chat_error(native_type, native.get("error")))
        if isinstance(choices, list):
            for position, choice in enumerate(choices):
                if is_map(choice):
                    out.extend(self._choice(native_type, choice, position))
                else:
                    out.extend(unknown(native_type))
        usage = as_map(native.get("usage"))
        if usage is not None:
            # usage belongs before the finish terminal of the same chunk (DeepSeek style)
            cut = next((i for i, o in enumerate(out) if o.kind in ("tool_call_done", "terminal")),
                       len(out))
            out.insert(cut, Observation("usage", native_type, usage=usage))
        if not out:
            out.append(Observation("raw", native_type))  # role-only, empty, moderation chunks
        return out

    def _choice(self, native_type: str, choice: Mapping[str, Any], position: int) -> list[Observation]:
        index = as_int(choice.get("index"))
        block = index if index is not None else position
        delta = as_map(choice.get("delta")) or {}
        out: list[Observation] = []
        if as_str(delta.get("role")) and not self._started:
            self._started = True
            out.append(Observation("message_start", native_type, block=block))
        reasoning = as_str(delta.get("reasoning_content"))
        if reasoning is None:
            reasoning = as_str(delta.get("reasoning"))
        if reasoning:
            out.append(Observation("reasoning_delta", native_type, block=block, text=reasoning))
        elif isinstance(delta.get("reasoning_details"), list) and delta["reasoning_details"]:
            # OpenRouter's only reasoning may be opaque (``reasoning.encrypted``) details with
            # ``reasoning`` null: reasoning in another form, as a Bedrock redactedContent.
            out.append(Observation("raw", native_type, block=block,
                                   block_type="redacted_reasoning"))
        content = as_str(delta.get("content"))
        if content:
            out.append(Observation("text_delta", native_type, block=block, text=content))
        elif isinstance(delta.get("content"), list):
            out.extend(_content_parts(native_type, block, delta["content"]))
        refusal = as_str(delta.get("refusal"))
        if refusal:
            out.append(Observation("text_delta", native_type, block=block, block_type="refusal",
                                   text=refusal))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position_in_list, call in enumerate(calls):
                out.extend(self._tool_fragment(native_type, block, call, position_in_list))
        finish = as_str(choice.get("finish_reason"))
        if finish is not None and not out and self._finished.get(block) == finish:
            # OpenRouter repeats the finish chunk (the repeat carries the usage): with no new
            # content it is the same ending, not a second answer (the SDK sees one).
            return [Observation("raw", native_type, block=block)]
        if finish is not None:
            self._finished[block] = finish
            for key in sorted(k for k in self._calls if k[0] == block):
                call_id, name, fragments = self._calls.pop(key)
                out.append(Observation("tool_call_done", native_type, block=block,
                                       tool_call_id=call_id, tool_name=name,
                                       arguments="".join(fragments)))
            out.append(Observation("terminal", native_type, block=block, stop_reason=finish))
        return out

    def _tool_fragment(self, native_type: str, block: int, call: Any,
                       position: int) -> list[Observation]:
        if not is_map(call):
            return unknown(native_type, block=block)
        tool_index = as_int(call.get("index"))
        key = (block, tool_index if tool_index is not None else position)
        function = as_map(call.get("function")) or {}
        fragment = as_str(function.get("arguments"))
        out: list[Observation] = []
        if key not in self._calls:
            call_id, name = as_str(call.get("id")), as_str(function.get("name"))
            self._calls[key] = (call_id, name, [])
            out.append(Observation("tool_call_start", native_type, block=block, block_type="tool_use",
                                   tool_call_id=call_id, tool_name=name))
        call_id, name, fragments = self._calls[key]
        if fragment:
            fragments.append(fragment)
            out.append(Observation("tool_call_delta", native_type, block=block, tool_call_id=call_id,
                                   tool_name=name, arguments=fragment))
        return out


register("openai-chat")(OpenAIChatNormalizer)
