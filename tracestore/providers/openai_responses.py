"""OpenAI Responses API stream events → observations.

Why it is stateful at all: ``response.function_call_arguments.delta/.done`` carry only
``item_id``/``output_index``, while the id a caller must answer to (``call_id``) and the
tool name arrive once in ``response.output_item.added``.  The normalizer remembers that
mapping so every tool observation names its call.  Nothing else is remembered.

Terminals are the four ``response.*`` lifecycle ends.  ``response.completed`` (and the
other terminals) also repeat the full output: those texts become ``final_text``
observations for agreement checks and are never to be appended to the deltas.  The
stream ``error`` event is an in-band error; ``response.failed`` is the native terminal
that usually follows it and carries ``response.error`` itself.
"""

from __future__ import annotations

from typing import Any, Mapping

from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

#: Lifecycle ends: event type → the status we report if the payload lacks one.
TERMINAL_TYPES: dict[str, str] = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
    "response.cancelled": "cancelled",
}

#: Progress notices without content.
KEEPALIVE_TYPES = frozenset({"response.in_progress", "response.queued"})

#: Known events that carry nothing a projection needs beyond the native payload itself.
RAW_TYPES = frozenset({
    "response.content_part.added", "response.content_part.done",
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done", "response.reasoning_text.done",
    "response.output_text.annotation.added", "response.audio.delta", "response.audio.done",
    "response.audio.transcript.delta", "response.audio.transcript.done",
})

#: Families of built-in tool progress events (web search, file search, code interpreter …).
RAW_PREFIXES = (
    "response.web_search_call.", "response.file_search_call.",
    "response.code_interpreter_call", "response.image_generation_call.", "response.mcp_",
)

#: Output item types that are tool calls (their ``call_id``/``name`` identify the call).
TOOL_ITEM_TYPES = frozenset({"function_call", "custom_tool_call"})

#: Output item type → block_type for block_start / block_stop.
ITEM_BLOCK_TYPES = {"message": "text", "reasoning": "reasoning"}


#: Delta events whose observation kinds follow from their type alone (see ``kinds``).
_DELTA_KINDS: dict[str, tuple[str, ...]] = {
    "response.output_text.delta": ("text_delta",),
    "response.refusal.delta": ("text_delta",),
    "response.reasoning_summary_text.delta": ("reasoning_delta",),
    "response.reasoning_text.delta": ("reasoning_delta",),
    "response.function_call_arguments.delta": ("tool_call_delta",),
    "response.custom_tool_call_input.delta": ("tool_call_delta",),
}


class OpenAIResponsesNormalizer(Normalizer):
    """Normalizer for ``openai-responses`` (also reused by xAI for ``response.*`` events)."""

    def __init__(self) -> None:
        # item_id → (call_id, name); output_index → item_id (fallback when item_id absent)
        self._calls: dict[str, tuple[str | None, str | None]] = {}
        self._item_at: dict[int, str] = {}

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if native == "[DONE]":
            # OpenRouter's Responses endpoint appends the chat-style sentinel after the terminal.
            return [Observation("keepalive", "[DONE]")]
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        etype = as_str(native.get("type"))
        if etype is None:
            return unknown(event_name or "<untyped>")
        seq = as_int(native.get("sequence_number"))
        block = as_int(native.get("output_index"))

        if etype in TERMINAL_TYPES:
            return self._terminal(etype, native, seq)
        if etype == "error":
            return [self._error(etype, native, seq)]
        if etype == "response.created":
            return [Observation("message_start", etype, sequence=seq)]
        if etype in KEEPALIVE_TYPES:
            return [Observation("keepalive", etype, sequence=seq)]
        if etype == "response.output_text.delta":
            return [Observation("text_delta", etype, block=block, text=as_str(native.get("delta")),
                                sequence=seq)]
        if etype == "response.refusal.delta":
            return [Observation("text_delta", etype, block=block, block_type="refusal",
                                text=as_str(native.get("delta")), sequence=seq)]
        if etype == "response.output_text.done":
            return [Observation("final_text", etype, block=block, text=as_str(native.get("text")),
                                sequence=seq)]
        if etype == "response.refusal.done":
            return [Observation("final_text", etype, block=block, block_type="refusal",
                                text=as_str(native.get("refusal")), sequence=seq)]
        if etype in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [Observation("reasoning_delta", etype, block=block,
                                text=as_str(native.get("delta")), sequence=seq)]
        if etype in ("response.function_call_arguments.delta",
                     "response.custom_tool_call_input.delta"):
            call_id, name = self._call_for(native, block)
            return [Observation("tool_call_delta", etype, block=block, tool_call_id=call_id,
                                tool_name=name, arguments=as_str(native.get("delta")),
                                sequence=seq)]
        if etype in ("response.function_call_arguments.done",
                     "response.custom_tool_call_input.done"):
            call_id, name = self._call_for(native, block)
            args = native.get("arguments") if "arguments" in native else native.get("input")
            return [Observation("tool_call_done", etype, block=block, tool_call_id=call_id,
                                tool_name=as_str(native.get("name")) or name,
                                arguments=as_str(args), sequence=seq)]
        if etype == "response.output_item.added":
            return [self._item_added(etype, native, block, seq)]
        if etype == "response.output_item.done":
            item = as_map(native.get("item")) or {}
            itype = as_str(item.get("type"))
            btype = "tool_use" if itype in TOOL_ITEM_TYPES else ITEM_BLOCK_TYPES.get(itype or "", itype)
            return [Observation("block_stop", etype, block=block, block_type=btype, sequence=seq)]
        if etype in RAW_TYPES or etype.startswith(RAW_PREFIXES):
            return [Observation("raw", etype, block=block, sequence=seq)]
        return unknown(etype, block=block, sequence=seq)

    def kinds(self, native: Any, event_name: str | None = None) -> tuple[str, ...]:
        # Deltas are nearly every frame of an answer; their kinds depend on the type alone
        # and feeding them changes no state, so no Observation is built for them.
        if type(native) is dict:
            kinds = _DELTA_KINDS.get(native.get("type"))  # type: ignore[arg-type]
            if kinds is not None:
                return kinds
        return super().kinds(native, event_name)

    # -- pieces ---------------------------------------------------------------------------

    def _call_for(self, native: Mapping[str, Any], block: int | None) -> tuple[str | None, str | None]:
        item_id = as_str(native.get("item_id"))
        if item_id is None and block is not None:
            item_id = self._item_at.get(block)
        return self._calls.get(item_id or "", (None, None))

    def _item_added(self, etype: str, native: Mapping[str, Any], block: int | None,
                    seq: int | None) -> Observation:
        item = as_map(native.get("item")) or {}
        itype = as_str(item.get("type"))
        item_id = as_str(item.get("id"))
        if item_id is not None and block is not None:
            self._item_at[block] = item_id
        if itype in TOOL_ITEM_TYPES:
            call_id = as_str(item.get("call_id")) or item_id
            name = as_str(item.get("name"))
            if item_id is not None:
                self._calls[item_id] = (call_id, name)
            return Observation("tool_call_start", etype, block=block, block_type="tool_use",
                               tool_call_id=call_id, tool_name=name, sequence=seq)
        btype = ITEM_BLOCK_TYPES.get(itype or "", itype)
        return Observation("block_start", etype, block=block, block_type=btype, sequence=seq)

    @staticmethod
    def _error(etype: str, native: Mapping[str, Any], seq: int | None) -> Observation:
        # Documented shape has code/message at top level; captures nest them in "error".
        err = as_map(native.get("error")) or native
        code = as_str(err.get("code")) or as_str(err.get("type"))
        return Observation("error", etype, error_code=code, message=as_str(err.get("message")),
                           sequence=seq)

    @staticmethod
    def _terminal(etype: str, native: Mapping[str, Any], seq: int | None) -> list[Observation]:
        response = as_map(native.get("response")) or {}
        out: list[Observation] = []
        output = response.get("output")
        if isinstance(output, list):
            for index, item in enumerate(output):
                if not is_map(item) or item.get("type") != "message":
                    continue
                for part in item.get("content") or ():
                    if not is_map(part):
                        continue
                    if part.get("type") == "output_text":
                        out.append(Observation("final_text", etype, block=index,
                                               text=as_str(part.get("text")), sequence=seq))
                    elif part.get("type") == "refusal":
                        out.append(Observation("final_text", etype, block=index,
                                               block_type="refusal",
                                               text=as_str(part.get("refusal")), sequence=seq))
        usage = as_map(response.get("usage"))
        if usage is not None:
            out.append(Observation("usage", etype, usage=usage, sequence=seq))
        details = as_map(response.get("incomplete_details")) or {}
        error = as_map(response.get("error")) or {}
        out.append(Observation(
            "terminal", etype,
            stop_reason=as_str(details.get("reason")),
            status=as_str(response.get("status")) or TERMINAL_TYPES[etype],
            error_code=as_str(error.get("code")) or as_str(error.get("type")),
            message=as_str(error.get("message")),
            sequence=seq))
        return out


register("openai-responses")(OpenAIResponsesNormalizer)
