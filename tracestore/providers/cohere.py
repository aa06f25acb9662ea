"""Cohere v2 chat stream events (``POST /v2/chat``, ``stream: true``) → observations.

Every event is an object with ``type`` and, for content, ``index`` (the content block) and
``delta.message``:

* ``message-start``; ``content-start`` opens a block (``content.type`` ``text`` or
  ``thinking``); ``content-delta`` carries ``content.text`` or ``content.thinking``;
  ``content-end`` closes it;
* ``tool-plan-delta`` (``message.tool_plan``: the model's plan before it calls tools, not
  answer text: reasoning), ``tool-call-start`` (``tool_calls`` with ``id`` and
  ``function.name``), ``tool-call-delta`` (``function.arguments`` fragments),
  ``tool-call-end``; ``citation-start`` / ``citation-end`` are kept raw;
* ``message-end`` is the terminal, ``delta.finish_reason`` its stop reason (``COMPLETE``,
  ``MAX_TOKENS``, ``STOP_SEQUENCE``, ``TOOL_CALL``, ``ERROR``, ``TIMEOUT``) and
  ``delta.usage`` its usage.

Why it is stateful: ``tool-call-delta`` and ``tool-call-end`` name only the block index,
and Cohere never repeats the whole arguments, so the call's id, name and argument
fragments are remembered per index to name every tool observation and to give the done
observation the arguments.
"""

from __future__ import annotations

from typing import Any, Mapping

from tracestore.providers.base import (Normalizer, as_int, as_map, as_str, is_map, register,
                                       unknown)
from tracestore.providers.observations import Observation

#: Event types of a Cohere v2 chat stream (detection reads a native's ``type`` against it).
EVENT_TYPES = frozenset({
    "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
    "tool-call-start", "tool-call-delta", "tool-call-end", "citation-start", "citation-end",
    "message-end",
})

_BLOCK_TYPES = {"text": "text", "thinking": "reasoning"}


def _message(native: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map((as_map(native.get("delta")) or {}).get("message")) or {}


class CohereNormalizer(Normalizer):
    """Normalizer for ``cohere-v2``."""

    def __init__(self) -> None:
        # block index → [call id, tool name, argument fragments joined]
        self._calls: dict[int | None, list[str | None]] = {}

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        etype = as_str(native.get("type"))
        if etype is None:
            return unknown(event_name or "<untyped>")
        block = as_int(native.get("index"))
        if etype == "message-start":
            return [Observation("message_start", etype)]
        if etype == "content-start":
            content = as_map(_message(native).get("content")) or {}
            ctype = as_str(content.get("type"))
            return [Observation("block_start", etype, block=block,
                                block_type=_BLOCK_TYPES.get(ctype or "", ctype))]
        if etype == "content-delta":
            content = as_map(_message(native).get("content")) or {}
            if "thinking" in content:
                return [Observation("reasoning_delta", etype, block=block,
                                    text=as_str(content.get("thinking")))]
            if "text" in content:
                return [Observation("text_delta", etype, block=block,
                                    text=as_str(content.get("text")))]
            return unknown(etype, block=block)
        if etype == "content-end":
            return [Observation("block_stop", etype, block=block)]
        if etype == "tool-plan-delta":
            return [Observation("reasoning_delta", etype, block_type="tool_plan",
                                text=as_str(_message(native).get("tool_plan")))]
        if etype.startswith("tool-call-"):
            return self._tool(etype, native, block)
        if etype in ("citation-start", "citation-end"):
            return [Observation("raw", etype, block=block)]
        if etype == "message-end":
            return self._end(etype, native)
        return unknown(etype, block=block)

    def _tool(self, etype: str, native: Mapping[str, Any], block: int | None
              ) -> list[Observation]:
        call = as_map(_message(native).get("tool_calls")) or {}
        function = as_map(call.get("function")) or {}
        if etype == "tool-call-start":
            args = as_str(function.get("arguments")) or ""
            self._calls[block] = [as_str(call.get("id")), as_str(function.get("name")), args]
            call_id, name, _ = self._calls[block]
            return [Observation("tool_call_start", etype, block=block, block_type="tool_use",
                                tool_call_id=call_id, tool_name=name)]
        known = self._calls.setdefault(block, [None, None, ""])
        if etype == "tool-call-delta":
            fragment = as_str(function.get("arguments"))
            known[2] = (known[2] or "") + (fragment or "")
            return [Observation("tool_call_delta", etype, block=block, tool_call_id=known[0],
                                tool_name=known[1], arguments=fragment)]
        if etype == "tool-call-end":
            return [Observation("tool_call_done", etype, block=block, tool_call_id=known[0],
                                tool_name=known[1], arguments=known[2])]
        return unknown(etype, block=block)

    @staticmethod
    def _end(etype: str, native: Mapping[str, Any]) -> list[Observation]:
        delta = as_map(native.get("delta")) or {}
        out: list[Observation] = []
        usage = as_map(delta.get("usage"))
        if usage is not None:
            out.append(Observation("usage", etype, usage=usage))
        error = as_str(delta.get("error"))
        out.append(Observation("terminal", etype, stop_reason=as_str(delta.get("finish_reason")),
                               message=error))
        return out


register("cohere-v2")(CohereNormalizer)
