"""Wire layer: bytes in, frames out, for every streaming framing tracestore reads.

This is the bottom of the stack (see DESIGN.md): SSE, NDJSON, vercel chunks, streamed
JSON arrays and the AWS binary event stream.  Every decoder is pure and incremental
(``feed(chunk)`` / ``close()``), yields identical frames for any chunk boundaries, holds
at most one incomplete frame, enforces the bounds in ``limits`` and fails only with
``tracestore.errors.WireError`` carrying a stable ``code`` and an absolute ``offset``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracestore.errors import WireError
from tracestore.wire.detect import DETECT_HEAD_BYTES, FRAMINGS, detect_framing, framing_for_path
from tracestore.wire.frames import (EventStreamMessage, Frame, HeaderValue, SSEEvent, TextFrame,
                                    Truncation)
from tracestore.wire.limits import MAX_FRAME_BYTES, MAX_FRAMES_PER_CAPTURE

if TYPE_CHECKING:
    from tracestore.wire.base import Decoder
    from tracestore.wire.chunks import ChunksDecoder
    from tracestore.wire.eventstream import EventStreamDecoder
    from tracestore.wire.jsonarray import JSONArrayDecoder
    from tracestore.wire.ndjson import NDJSONDecoder
    from tracestore.wire.sse import SSEDecoder

# The decoders load on first use: commands that only read stored events (``release``,
# ``events``) import ``tracestore.wire.limits`` through the JSON reader and must not pay
# for every decoder at start-up.  (name -> (module, class), framing -> class name)
_LAZY = {
    "Decoder": "base", "SSEDecoder": "sse", "NDJSONDecoder": "ndjson",
    "ChunksDecoder": "chunks", "JSONArrayDecoder": "jsonarray",
    "EventStreamDecoder": "eventstream",
}
_DECODERS: dict[str, str] = {
    "sse": "SSEDecoder",
    "ndjson": "NDJSONDecoder",
    "chunks": "ChunksDecoder",
    "json-array": "JSONArrayDecoder",
    "aws-eventstream": "EventStreamDecoder",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'tracestore.wire' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tracestore.wire.{home}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def make_decoder(framing: str, **bounds: int) -> Decoder:
    """A fresh decoder for ``framing`` (one of ``FRAMINGS``); bounds are
    ``max_frame_bytes`` / ``max_frames``."""
    try:
        name = _DECODERS[framing]
    except KeyError:
        raise WireError(f"unknown framing {framing!r}; expected one of {', '.join(FRAMINGS)}",
                        code="unknown_framing", offset=0) from None
    cls: type[Decoder] = __getattr__(name)
    return cls(**bounds)


#: Piece size used when a progress callback wants to hear about long decodes.
PROGRESS_CHUNK_BYTES = 1024 * 1024


def decode_bytes(data: bytes, framing: str, chunk_size: int | None = None,
                 progress: Callable[[int], None] | None = None,
                 **bounds: int) -> tuple[list[Frame], Truncation | None]:
    """Decode a whole capture held in memory, fed in ``chunk_size`` pieces (default: one).

    ``progress`` (if given) is called with the number of bytes decoded so far after each
    piece; without an explicit ``chunk_size`` the pieces are then 1 MiB.  Returns the frames
    and the decoder's ``truncation`` (``None`` for a clean end).
    """
    decoder = make_decoder(framing, **bounds)
    frames: list[Frame] = []
    try:
        _feed_all(decoder, data, frames, chunk_size, progress)
    except WireError as exc:
        # As for one feed call: every frame completed before the fault travels on the error.
        exc.frames = frames + exc.frames
        raise
    return frames, decoder.truncation


def _feed_all(decoder: Decoder, data: bytes, frames: list[Frame], chunk_size: int | None,
              progress: Callable[[int], None] | None) -> None:
    if progress is not None and chunk_size is None:
        chunk_size = PROGRESS_CHUNK_BYTES
    if chunk_size is None or chunk_size >= len(data):
        frames.extend(decoder.feed(data))
    else:
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        view = memoryview(data)
        for start in range(0, len(data), chunk_size):
            frames.extend(decoder.feed(bytes(view[start:start + chunk_size])))
            if progress is not None:
                progress(min(start + chunk_size, len(data)))
    frames.extend(decoder.close())
    if progress is not None:
        progress(len(data))


__all__ = [
    "ChunksDecoder", "DETECT_HEAD_BYTES", "Decoder", "EventStreamDecoder", "EventStreamMessage",
    "FRAMINGS", "Frame", "HeaderValue", "JSONArrayDecoder", "MAX_FRAMES_PER_CAPTURE",
    "MAX_FRAME_BYTES", "NDJSONDecoder", "SSEDecoder", "SSEEvent", "TextFrame", "Truncation",
    "WireError", "decode_bytes", "detect_framing", "framing_for_path",
    "make_decoder",
]
