"""Seed 004's streaming FAQ endpoint: ``event: chunk|done|error`` SSE carrying the envelope.

The endpoint validates a structured reply before it streams anything, then sends the
validated text as ``chunk`` events (``{"text": …}``) and exactly one terminal event whose
data is the envelope (``{"schema_version", "state", "text", "code", "retryable",
"result"}``): ``done`` for the ok and empty states, ``error`` otherwise (a failure is a
single error event).  Observations: a chunk is a text delta; ``done`` is the envelope's text
as a final text (checked against the chunks, never appended; not for the ``empty`` state,
whose text is the fixed no-answer message) and a terminal whose status is ``done`` and stop
reason the envelope's state; ``error`` is an error named by the
envelope's code.  The release projection re-judges the envelope's ``result`` against the
trace's contract instead of trusting the endpoint.
"""

from __future__ import annotations

from typing import Any

from tracestore.providers.base import Normalizer, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

ENVELOPE_KEYS = frozenset({"schema_version", "state", "text", "code", "retryable", "result"})
EVENT_NAMES = frozenset({"chunk", "done", "error"})


def is_envelope(native: Any) -> bool:
    return is_map(native) and set(native) == ENVELOPE_KEYS


def is_chunk(native: Any) -> bool:
    return is_map(native) and set(native) == {"text"}


class FaqEndpointNormalizer(Normalizer):
    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if event_name == "chunk" and is_chunk(native):
            return [Observation("text_delta", "chunk", text=as_str(native.get("text")))]
        if event_name == "done" and is_envelope(native):
            terminal = Observation("terminal", "done", status="done",
                                   stop_reason=as_str(native.get("state")))
            if native.get("state") == "empty":  # its text is the fixed NO_ANSWER message,
                return [terminal]               # not an answer: seed 004's empty state
            return [Observation("final_text", "done", text=as_str(native.get("text"))),
                    terminal]
        if event_name == "error" and is_envelope(native):
            code = as_str(native.get("code"))
            return [Observation("error", "error", error_code=code, message=code)]
        return unknown(event_name or "<unnamed>")


register("faq-endpoint")(FaqEndpointNormalizer)
