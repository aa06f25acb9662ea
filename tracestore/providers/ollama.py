"""Ollama native NDJSON (``/api/chat`` and ``/api/generate``) → observations.

Each line is a whole object.  ``/api/chat`` streams ``message.content`` /
``message.thinking`` / ``message.tool_calls``; ``/api/generate`` streams ``response`` (and
``thinking`` when requested).  Think tags a model writes into ``response`` (qwen3's
``<think>`` arrives as ``\\u003cthink\\u003e``) are model text, not a native reasoning
channel, so they stay in ``text_delta``: splitting them would be a guess.

``done: true`` is the native terminal, with ``done_reason`` when sent (it is ``omitempty``
in Ollama, so its absence stays ``None``).  The counters on that line (``eval_count`` …)
are Ollama's accounting; the usage observation carries exactly the counters present,
never zeros.  ``{"error": "…"}`` is Ollama's error after HTTP 200 (no code exists).
Tool calls arrive whole (``arguments`` is an object), so each yields
start/delta/done at once with ``json.dumps(arguments)``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from tracestore.providers.base import Normalizer, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

#: Accounting fields of the final line, in Ollama's own order.
USAGE_FIELDS = ("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
                "eval_count", "eval_duration")


class OllamaNormalizer(Normalizer):
    """Normalizer for ``ollama``; stateless (every line is self-contained)."""

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        if "error" in native:
            err = native.get("error")
            return [Observation("error", "error", message=as_str(err) or as_str(
                (as_map(err) or {}).get("message")))]
        if "done" not in native:
            return unknown("<not-an-ollama-line>")
        if "message" in native:
            native_type = "chat"
            out = self._message(as_map(native.get("message")) or {})
        elif "response" in native:
            native_type = "generate"
            out = []
            if as_str(native.get("thinking")):
                out.append(Observation("reasoning_delta", native_type, text=native["thinking"]))
            if as_str(native.get("response")):
                out.append(Observation("text_delta", native_type, text=native["response"]))
        else:
            native_type = "done" if native.get("done") is True else "<not-an-ollama-line>"
            out = []
        if native.get("done") is True:
            usage = {key: native[key] for key in USAGE_FIELDS if key in native}
            if usage:
                out.append(Observation("usage", native_type, usage=usage))
            out.append(Observation("terminal", native_type,
                                   stop_reason=as_str(native.get("done_reason"))))
        if not out:
            out.append(Observation("raw", native_type))
        return out

    @staticmethod
    def _message(message: Mapping[str, Any]) -> list[Observation]:
        out: list[Observation] = []
        if as_str(message.get("thinking")):
            out.append(Observation("reasoning_delta", "chat", text=message["thinking"]))
        if as_str(message.get("content")):
            out.append(Observation("text_delta", "chat", text=message["content"]))
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = as_map((as_map(call) or {}).get("function"))
            if function is None:
                out.extend(unknown("chat"))
                continue
            call_id = as_str((as_map(call) or {}).get("id"))
            name = as_str(function.get("name"))
            args = function.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args)
            out += [
                Observation("tool_call_start", "chat", block_type="tool_use", tool_call_id=call_id,
                            tool_name=name),
                Observation("tool_call_delta", "chat", tool_call_id=call_id, tool_name=name,
                            arguments=arguments),
                Observation("tool_call_done", "chat", tool_call_id=call_id, tool_name=name,
                            arguments=arguments),
            ]
        return out


register("ollama")(OllamaNormalizer)
