"""Anthropic Messages stream events → observations.

State kept, because the protocol needs it:

* block index → block type (and, for tool blocks, id, name and the ``input_json_delta``
  fragments): deltas and ``content_block_stop`` only carry the index.  Arguments are
  accumulated as strings, never parsed here; the block stop is where they become the
  authoritative ``tool_call_done`` arguments.  A tool block with no (or only empty)
  fragments reports its ``content_block_start`` input serialized compactly (``{}``), which
  is what Anthropic's SDKs also treat as the call's input.
* the ``stop_reason`` of the latest ``message_delta``: Anthropic's native terminal is
  ``message_stop``, which carries no reason, so the terminal observation combines both.

``ping`` may arrive anywhere (keepalive); ``event: error`` after HTTP 200 is an in-band
``error`` observation (``overloaded_error``, ``api_error`` ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

#: content_block_start types that are tool calls made by the model.
TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})

#: Known non-tool block types → normalized block_type.
BLOCK_TYPES = {"text": "text", "thinking": "reasoning", "redacted_thinking": "redacted_reasoning",
               "container_upload": "container_upload", "compaction": "compaction",
               "fallback": "fallback"}

#: Delta types that are known but carry nothing we normalize (kept as raw).
RAW_DELTAS = frozenset({"citations_delta", "compaction_delta"})


@dataclass
class _Block:
    btype: str
    call_id: str | None = None
    name: str | None = None
    initial_input: Any = None
    fragments: list[str] = field(default_factory=list)


class AnthropicMessagesNormalizer(Normalizer):
    """Normalizer for ``anthropic-messages`` (also reused by xAI's Messages-compatible API)."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if native == "[DONE]":
            return [Observation("keepalive", "[DONE]")]  # compatible proxies append it
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        etype = as_str(native.get("type"))
        if etype is None:
            return unknown(event_name or "<untyped>")
        index = as_int(native.get("index"))
        if etype == "ping":
            return [Observation("keepalive", etype)]
        if etype == "error":
            err = as_map(native.get("error")) or {}
            return [Observation("error", etype,
                                error_code=as_str(err.get("type")) or as_str(err.get("code")),
                                message=as_str(err.get("message")))]
        if etype == "message_start":
            message = as_map(native.get("message")) or {}
            out = [Observation("message_start", etype)]
            usage = as_map(message.get("usage"))
            if usage is not None:
                out.append(Observation("usage", etype, usage=usage))
            return out
        if etype == "content_block_start":
            return self._start(etype, native, index)
        if etype == "content_block_delta":
            return self._delta(etype, native, index)
        if etype == "content_block_stop":
            return self._stop(etype, index)
        if etype == "message_delta":
            delta = as_map(native.get("delta")) or {}
            if "stop_reason" in delta:
                self._stop_reason = as_str(delta.get("stop_reason"))
            usage = as_map(native.get("usage"))
            return [Observation("usage", etype, usage=usage) if usage is not None
                    else Observation("raw", etype)]
        if etype == "message_stop":
            return [Observation("terminal", etype, stop_reason=self._stop_reason)]
        return unknown(etype, block=index)

    def _start(self, etype: str, native: Mapping[str, Any], index: int | None) -> list[Observation]:
        block = as_map(native.get("content_block")) or {}
        ctype = as_str(block.get("type"))
        if ctype in TOOL_BLOCKS:
            state = _Block(ctype or "tool_use", as_str(block.get("id")), as_str(block.get("name")),
                           block.get("input"))
            if index is not None:
                self._blocks[index] = state
            return [Observation("tool_call_start", etype, block=index, block_type=ctype,
                                tool_call_id=state.call_id, tool_name=state.name)]
        if ctype in BLOCK_TYPES:
            btype = BLOCK_TYPES[ctype]
        elif ctype is not None and ctype.endswith("_tool_result"):
            btype = ctype  # results of server tools (web search, code execution ...)
        else:
            return unknown(etype, block=index, block_type=ctype)
        if index is not None:
            self._blocks[index] = _Block(btype)
        out = [Observation("block_start", etype, block=index, block_type=btype)]
        # Blocks normally start empty; if one does not, its initial content is not dropped.
        if ctype == "text" and as_str(block.get("text")):
            out.append(Observation("text_delta", etype, block=index, text=block["text"]))
        elif ctype == "thinking" and as_str(block.get("thinking")):
            out.append(Observation("reasoning_delta", etype, block=index, text=block["thinking"]))
        return out

    def _delta(self, etype: str, native: Mapping[str, Any], index: int | None) -> list[Observation]:
        delta = as_map(native.get("delta")) or {}
        dtype = as_str(delta.get("type"))
        if dtype == "text_delta":
            return [Observation("text_delta", etype, block=index, text=as_str(delta.get("text")))]
        if dtype == "thinking_delta":
            return [Observation("reasoning_delta", etype, block=index,
                                text=as_str(delta.get("thinking")))]
        if dtype == "signature_delta":
            return [Observation("raw", etype, block=index, block_type="reasoning",
                                signature=as_str(delta.get("signature")))]
        if dtype == "input_json_delta":
            fragment = as_str(delta.get("partial_json"))
            state = self._blocks.get(index) if index is not None else None
            if state is not None and fragment is not None:
                state.fragments.append(fragment)
            return [Observation("tool_call_delta", etype, block=index,
                                tool_call_id=state.call_id if state else None,
                                tool_name=state.name if state else None, arguments=fragment)]
        if dtype in RAW_DELTAS:
            return [Observation("raw", etype, block=index)]
        return unknown(etype, block=index)

    def _stop(self, etype: str, index: int | None) -> list[Observation]:
        state = self._blocks.pop(index, None) if index is not None else None
        if state is None:
            return [Observation("block_stop", etype, block=index)]
        out: list[Observation] = []
        if state.call_id is not None or state.btype in TOOL_BLOCKS:
            args = "".join(state.fragments)
            if not args and is_map(state.initial_input):
                args = json.dumps(state.initial_input, separators=(",", ":"), ensure_ascii=False)
            out.append(Observation("tool_call_done", etype, block=index, block_type=state.btype,
                                   tool_call_id=state.call_id, tool_name=state.name,
                                   arguments=args))
        out.append(Observation("block_stop", etype, block=index, block_type=state.btype))
        return out


register("anthropic-messages")(AnthropicMessagesNormalizer)
