"""Decoder for vercel ``.chunks.txt`` captures: one SSE data payload per line.

The vercel/ai test fixtures (our xAI and OpenAI-error captures) store each SSE event's
``data`` payload on its own line with the ``data:`` framing and the final ``[DONE]``
stripped.  Emitting them as ``SSEEvent(event="message", event_field_present=False)`` lets
providers treat such a capture exactly like a data-only SSE stream, with no special case.

Line rules are NDJSON's (LF ends a line, CR before it tolerated, blank lines skipped,
``length`` includes the line end).  Those files end without a final newline, so an
unterminated last line is emitted when it is complete JSON or the ``[DONE]`` sentinel;
anything else left at the end is reported as ``truncation``.  The SSE ``id`` and
``retry`` of these events are ``None``: the framing that would carry them was not kept.
"""

from __future__ import annotations

from tracestore.wire.frames import Frame, SSEEvent
from tracestore.wire.ndjson import LineDecoder


class ChunksDecoder(LineDecoder):
    """Decode ``.chunks.txt`` bytes into data-only ``SSEEvent`` frames."""

    framing = "chunks"

    def _frame(self, offset: int, length: int, text: str) -> Frame:
        return SSEEvent(offset, length, "message", text, None, None, False)

    def _complete_enough(self, text: str) -> bool:
        return text.strip() == "[DONE]" or super()._complete_enough(text)


__all__ = ["ChunksDecoder"]
