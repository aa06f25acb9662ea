"""The shared skeleton of every wire decoder: bounds, poisoning, and the feed/close contract.

All decoders promise the same things -- incremental ``feed``/``close``, identical frames
whatever the chunk boundaries, bounded buffers, typed errors -- so the bookkeeping lives
here once.  After a ``WireError`` a decoder is poisoned: later calls re-raise the same
error, because continuing after a framing failure would silently resynchronise on
garbage and hand the provider layer frames that never existed.
"""

from __future__ import annotations

from typing import NoReturn

from tracestore.errors import WireError
from tracestore.wire.frames import Frame, Truncation
from tracestore.wire.limits import MAX_FRAME_BYTES, MAX_FRAMES_PER_CAPTURE
from tracestore.wire.utf8 import UTF8_BOM


class Decoder:
    """Base class; subclasses implement ``_feed`` and ``_close``."""

    #: Name of the framing, as accepted by ``make_decoder``.
    framing: str = ""

    def __init__(self, *, max_frame_bytes: int = MAX_FRAME_BYTES,
                 max_frames: int = MAX_FRAMES_PER_CAPTURE) -> None:
        if max_frame_bytes < 1 or max_frames < 0:
            raise ValueError("max_frame_bytes must be >= 1 and max_frames >= 0")
        self.max_frame_bytes = max_frame_bytes
        self.max_frames = max_frames
        #: Frames emitted so far (checked against ``max_frames``).
        self.frame_count = 0
        #: Set by ``close()`` when the input ended inside a frame; ``None`` for a clean end.
        self.truncation: Truncation | None = None
        self._closed = False
        self._error: WireError | None = None
        # Absolute offset of the first byte still held in the subclass's buffer.
        self._pos = 0
        self._buf = bytearray()
        # True until the first bytes have been checked for a UTF-8 BOM.
        self._at_start = True
        # The frames list of the running ``feed`` call (subclasses append to it in stream
        # order), so that a failure can still hand over what was completed before it.
        self._completed: list[Frame] = []

    # -- public contract -------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Frame]:
        """Consume the next bytes; return the frames completed by them (maybe none)."""
        if self._error is not None or self._closed:
            self._check_usable()
        if type(chunk) is not bytes:
            chunk = bytes(chunk)  # accept any bytes-like (bytearray, memoryview) safely
        self._completed = []
        try:
            return self._feed(chunk)
        except WireError as exc:
            # Frames completed earlier in this call travel on the error, as botocore yields
            # the good messages before raising on a corrupted one; the offset stays exact.
            exc.frames = list(self._completed)
            self._error = exc
            raise

    def close(self) -> list[Frame]:
        """Signal end of input; return the last frames and set ``truncation``."""
        self._check_usable()
        try:
            return self._close()
        except WireError as exc:
            self._error = exc
            raise
        finally:
            self._closed = True
            self._buf = bytearray()

    @property
    def bytes_consumed(self) -> int:
        """Absolute offset just past the bytes fully interpreted so far."""
        return self._pos

    # -- helpers for subclasses ------------------------------------------------------

    def _feed(self, chunk: bytes) -> list[Frame]:  # pragma: no cover - abstract
        """Append completed frames to ``self._completed`` as they complete; return it."""
        raise NotImplementedError

    def _close(self) -> list[Frame]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_usable(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise WireError("decoder already closed", code="decoder_closed", offset=self._pos)

    def _strip_bom(self) -> bool:
        """Drop one leading UTF-8 BOM from ``_buf``; False while it cannot be decided yet.

        The BOM may itself arrive split across chunks, so with fewer than three bytes that
        are a BOM prefix we must wait (``close`` treats the leftover as a truncated char).
        """
        buf = self._buf
        if len(buf) < 3 and UTF8_BOM.startswith(buf):
            return False
        if buf.startswith(UTF8_BOM):
            del buf[:3]
            self._pos += 3
        self._at_start = False
        return True

    def _byte_limit(self, offset: int, size: int) -> NoReturn:
        raise WireError(
            f"frame of at least {size} bytes exceeds max_frame_bytes={self.max_frame_bytes}",
            code="frame_byte_limit", offset=offset,
        )

    def _count_limit(self, offset: int) -> NoReturn:
        raise WireError(
            f"more than max_frames={self.max_frames} frames in one capture",
            code="frame_count_limit", offset=offset,
        )


__all__ = ["Decoder"]
