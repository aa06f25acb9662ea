"""A live frame's native, parsed exactly as ``providers.capture.native_of`` parses it,
with the one shared strict decoder (``strict_decoder``) instead of a decoder built per
frame (``json.loads`` with hooks builds one per call: it cost as much as the parse).

Only success takes this path: a frame the shared decoder refuses, or one nesting past
the bound, or starting with a byte-order mark, is parsed again by ``native_of`` itself,
which raises the error it always raised (same code, message and offset).
"""

from __future__ import annotations

from typing import Any

from tracestore.providers.capture import DONE_SENTINEL, native_of
from tracestore.providers.strictjson import strict_decoder, too_deep
from tracestore.wire import SSEEvent, TextFrame
from tracestore.wire.limits import MAX_JSON_DEPTH


def live_native_of(frame: Any) -> tuple[str | None, Any]:
    """(event name, native) of one wire frame, as ``native_of`` returns them."""
    kind = frame.__class__
    if kind is SSEEvent:
        name, text = (frame.event if frame.event_field_present else None), frame.data
    elif kind is TextFrame:
        name, text = None, frame.text
    else:  # an AWS event-stream message: its own reader
        return native_of(frame)
    if text.strip() == DONE_SENTINEL:
        return name, DONE_SENTINEL
    if text.startswith("\ufeff"):  # ``json.loads`` refuses it before parsing
        return native_of(frame)
    try:
        value = strict_decoder().decode(text)
    except (ValueError, RecursionError):
        return native_of(frame)  # refused: the reference says how, at which byte
    if isinstance(value, (dict, list)) and too_deep(text, value, MAX_JSON_DEPTH):
        return native_of(frame)
    return name, value


__all__ = ["live_native_of"]
