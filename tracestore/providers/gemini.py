"""Gemini ``streamGenerateContent`` chunks and Interactions API events → observations.

generateContent (``alt=sse`` frames or JSON-array elements): each chunk is a whole
``GenerateContentResponse``.  Parts map as follows, and none is ever dropped:

* ``text`` with ``thought: true`` → ``reasoning_delta``; other non-empty ``text`` →
  ``text_delta``;
* an empty ``text`` part (Gemini 3 puts the final ``thoughtSignature`` there) → ``raw``
  carrying the signature — dropping it breaks multi-turn tool use;
* ``functionCall{name,args}`` → ``tool_call_start``, ``tool_call_delta`` and
  ``tool_call_done`` at once, arguments ``json.dumps(args)`` (Gemini sends the whole
  object, so one code path serves all providers);
* inline data / code execution parts → ``raw``.  ``thoughtSignature`` is kept on
  whatever observation its part produced.

``usageMetadata`` repeats on every chunk as running totals, so each chunk yields a usage
observation (the last one is authoritative).  ``finishReason`` is the terminal; a
``promptFeedback.blockReason`` without candidates is a terminal too (the prompt was
blocked).  A top-level ``error`` object is an in-band error.

Interactions (``event_type``) events are stateful only for function-call steps, whose
``arguments_delta`` fragments are accumulated until ``step.stop``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from tracestore.providers.base import Normalizer, as_int, as_map, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation, ObservationKind

#: Known non-text parts, checked in this order (a tuple, so the result is deterministic).
RAW_PARTS = ("inlineData", "fileData", "executableCode", "codeExecutionResult", "functionResponse")

#: Interactions step types → block_type.
STEP_TYPES = {"model_output": "text", "thought": "reasoning", "function_call": "tool_use"}


class GeminiNormalizer(Normalizer):
    """Normalizer for ``gemini`` (generateContent chunks and Interactions events)."""

    def __init__(self) -> None:
        # Interactions: step index → (call id, name, fragments)
        self._steps: dict[int, tuple[str | None, str | None, list[str]]] = {}

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if native == "[DONE]":
            return [Observation("keepalive", "[DONE]")]
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        if isinstance(native.get("event_type"), str):
            return self._interaction(native["event_type"], native)
        if "error" in native and is_map(native.get("error")):
            err = native["error"]
            code = as_str(err.get("status"))
            if code is None and as_int(err.get("code")) is not None:
                code = str(err["code"])
            return [Observation("error", "error", error_code=code, message=as_str(err.get("message")))]
        if "candidates" not in native and "promptFeedback" not in native and "usageMetadata" not in native:
            return unknown(event_name or "<not-a-response>")
        return self._chunk(native)

    # -- generateContent ------------------------------------------------------------------

    def _chunk(self, native: Mapping[str, Any]) -> list[Observation]:
        out: list[Observation] = []
        terminals: list[Observation] = []
        candidates = native.get("candidates")
        for position, cand in enumerate(candidates if isinstance(candidates, list) else ()):
            if not is_map(cand):
                out.extend(unknown("candidate"))
                continue
            index = as_int(cand.get("index"))
            block = index if index is not None else position
            content = as_map(cand.get("content")) or {}
            parts = content.get("parts")
            for part in parts if isinstance(parts, list) else ():
                out.extend(self._part(part, block))
            reason = as_str(cand.get("finishReason"))
            if reason is not None:
                terminals.append(Observation("terminal", "finishReason", block=block,
                                             stop_reason=reason,
                                             message=as_str(cand.get("finishMessage"))))
        feedback = as_map(native.get("promptFeedback")) or {}
        block_reason = as_str(feedback.get("blockReason"))
        if block_reason is not None and not candidates:
            terminals.append(Observation("terminal", "promptFeedback", stop_reason=block_reason,
                                         message=as_str(feedback.get("blockReasonMessage"))))
        usage = as_map(native.get("usageMetadata"))
        if usage is not None:
            out.append(Observation("usage", "usageMetadata", usage=usage))
        out.extend(terminals)
        if not out:
            out.append(Observation("raw", "GenerateContentResponse"))
        return out

    @staticmethod
    def _part(part: Any, block: int) -> list[Observation]:
        if not is_map(part):
            return unknown("part", block=block)
        signature = as_str(part.get("thoughtSignature"))
        if "functionCall" in part:
            call = as_map(part.get("functionCall")) or {}
            call_id, name = as_str(call.get("id")), as_str(call.get("name"))
            args = call.get("args", {})
            arguments = json.dumps(args)
            return [
                Observation("tool_call_start", "functionCall", block=block, block_type="tool_use",
                            tool_call_id=call_id, tool_name=name, signature=signature),
                Observation("tool_call_delta", "functionCall", block=block, tool_call_id=call_id,
                            tool_name=name, arguments=arguments),
                Observation("tool_call_done", "functionCall", block=block, tool_call_id=call_id,
                            tool_name=name, arguments=arguments, signature=signature),
            ]
        if "text" in part:
            text = as_str(part.get("text"))
            if not text:
                return [Observation("raw", "text", block=block, signature=signature)]
            kind: ObservationKind = ("reasoning_delta" if part.get("thought") is True
                                     else "text_delta")
            return [Observation(kind, "text", block=block, text=text, signature=signature)]
        for name in RAW_PARTS:
            if name in part:
                return [Observation("raw", name, block=block, signature=signature)]
        if signature is not None:
            return [Observation("raw", "thoughtSignature", block=block, signature=signature)]
        return unknown("part", block=block)

    # -- Interactions ---------------------------------------------------------------------

    def _interaction(self, etype: str, native: Mapping[str, Any]) -> list[Observation]:
        index = as_int(native.get("index"))
        if etype in ("interaction.created", "interaction.start"):
            return [Observation("message_start", etype)]
        if etype == "interaction.status_update":
            return [Observation("keepalive", etype, status=as_str(native.get("status")))]
        if etype in ("interaction.completed", "interaction.complete"):
            interaction = as_map(native.get("interaction")) or {}
            out: list[Observation] = []
            usage = as_map(interaction.get("usage"))
            if usage is not None:
                out.append(Observation("usage", etype, usage=usage))
            out.append(Observation("terminal", etype, status=as_str(interaction.get("status"))))
            return out
        if etype == "error":
            err = as_map(native.get("error")) or {}
            code = err.get("code")
            return [Observation("error", etype,
                                error_code=str(code) if isinstance(code, (str, int)) else None,
                                message=as_str(err.get("message")))]
        if etype in ("step.start", "content.start"):
            step = as_map(native.get("step")) or as_map(native.get("content")) or {}
            stype = as_str(step.get("type"))
            if stype == "function_call":
                call: tuple[str | None, str | None, list[str]] = (
                    as_str(step.get("id")), as_str(step.get("name")), [])
                if index is not None:
                    self._steps[index] = call
                return [Observation("tool_call_start", etype, block=index, block_type="tool_use",
                                    tool_call_id=call[0], tool_name=call[1])]
            if stype in STEP_TYPES or stype in ("text", "thought"):
                btype = STEP_TYPES.get(stype or "", {"text": "text", "thought": "reasoning"}.get(stype or ""))
                return [Observation("block_start", etype, block=index, block_type=btype)]
            return [Observation("block_start", etype, block=index, block_type=stype)]
        if etype in ("step.delta", "content.delta"):
            return self._step_delta(etype, native, index)
        if etype in ("step.stop", "content.stop"):
            out = []
            if index is not None and index in self._steps:
                call_id, name, fragments = self._steps.pop(index)
                out.append(Observation("tool_call_done", etype, block=index, tool_call_id=call_id,
                                       tool_name=name, arguments="".join(fragments)))
            out.append(Observation("block_stop", etype, block=index))
            return out
        return unknown(etype, block=index)

    def _step_delta(self, etype: str, native: Mapping[str, Any], index: int | None) -> list[Observation]:
        delta = as_map(native.get("delta")) or {}
        dtype = as_str(delta.get("type"))
        if dtype == "text":
            return [Observation("text_delta", etype, block=index, text=as_str(delta.get("text")))]
        if dtype == "thought_summary":
            content = as_map(delta.get("content")) or {}
            text = as_str(content.get("text")) or as_str(delta.get("text"))
            return [Observation("reasoning_delta", etype, block=index, text=text)]
        if dtype == "thought_signature":
            return [Observation("raw", etype, block=index, block_type="reasoning",
                                signature=as_str(delta.get("signature")))]
        if dtype == "arguments_delta":
            fragment = as_str(delta.get("arguments"))
            call_id, name, fragments = self._steps.get(index, (None, None, [])) if index is not None \
                else (None, None, [])
            if fragment is not None and index in self._steps:
                fragments.append(fragment)
            return [Observation("tool_call_delta", etype, block=index, tool_call_id=call_id,
                                tool_name=name, arguments=fragment)]
        return unknown(etype, block=index, block_type=dtype)


register("gemini")(GeminiNormalizer)
