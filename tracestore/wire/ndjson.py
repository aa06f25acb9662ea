"""Incremental newline-delimited JSON (NDJSON) decoder.

Ollama's native API and many home-grown application streams send one JSON value per
``\\n``-terminated line.  This decoder only frames: it returns each line's text and leaves
JSON parsing to the provider layer, which parses anyway and knows what shape to expect.

Rules: lines end at LF; a CR before the LF is tolerated and dropped from ``text``;
blank (whitespace-only) lines are skipped; a frame's ``length`` includes its line end, so
frames and skipped lines tile the input.  The *final* line may lack its LF -- many
producers omit it -- so at ``close`` an unterminated last line is emitted if it parses as
complete JSON; otherwise it is reported as ``truncation`` (``truncated_frame``, or
``truncated_utf8`` when the input stops inside a character).  A value that happens to
be complete JSON when cut (``12`` of ``123``) cannot be told apart; that is NDJSON's own
ambiguity, not ours.

Like SSE, work happens on complete lines in bulk (``bytes.split``) and the partial line
is never rescanned, so cost is linear for any chunking.
"""

from __future__ import annotations

import json

from tracestore.wire.base import Decoder
from tracestore.wire.frames import Frame, TextFrame, Truncation
from tracestore.wire.utf8 import TRUNCATED_UTF8, decode_utf8, raise_invalid_utf8, tail_code

# JSON's insignificant whitespace; a line made only of these is blank.
_JSON_WS = b" \t\r"
_WS_FIRST = frozenset(_JSON_WS)


class LineDecoder(Decoder):
    """LF-delimited lines, one frame per non-blank line; subclasses choose the frame type."""

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        # Index in _buf up to which the partial line is known to hold no LF.
        self._scan = 0

    def _frame(self, offset: int, length: int, text: str) -> Frame:  # pragma: no cover
        raise NotImplementedError

    def _complete_enough(self, text: str) -> bool:
        """Whether an unterminated final line is whole (emit it) rather than cut."""
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return False
        return True

    def _feed(self, chunk: bytes) -> list[Frame]:
        buf = self._buf
        buf += chunk
        if self._at_start and not self._strip_bom():
            return []
        out: list[Frame] = self._completed
        nl = buf.rfind(b"\n", self._scan)
        if nl >= 0:
            region = bytes(buf[:nl + 1])
            del buf[:nl + 1]
            self._lines(region, out)
        self._scan = len(buf)
        if len(buf) > self.max_frame_bytes:
            self._byte_limit(self._pos, len(buf))
        return out

    def _lines(self, region: bytes, out: list[Frame]) -> None:
        lines = region.split(b"\n")
        lines.pop()  # region ends with LF: the last piece is empty
        pos = self._pos
        max_bytes = self.max_frame_bytes
        max_frames = self.max_frames
        count = self.frame_count
        make = self._frame
        line = b""
        try:
            for line in lines:
                size = len(line) + 1
                if size > max_bytes:
                    self._byte_limit(pos, size)
                if not line or (line[0] in _WS_FIRST and not line.strip(_JSON_WS)):
                    pos += size
                    continue
                count += 1
                if count > max_frames:
                    self._count_limit(pos)
                body = line[:-1] if line.endswith(b"\r") else line
                out.append(make(pos, size, body.decode("utf-8")))
                pos += size
        except UnicodeDecodeError:
            raise_invalid_utf8(line, pos)
        self._pos = pos
        self.frame_count = count

    def _close(self) -> list[Frame]:
        self._at_start = False
        partial = bytes(self._buf)
        start = self._pos
        self._pos += len(partial)
        if not partial.strip(_JSON_WS):
            return []
        code = tail_code(partial, start)
        if code == TRUNCATED_UTF8:
            self.truncation = Truncation(start, len(partial), code)
            return []
        body = partial[:-1] if partial.endswith(b"\r") else partial
        text = decode_utf8(body, start)
        if not self._complete_enough(text):
            self.truncation = Truncation(start, len(partial), code)
            return []
        if self.frame_count + 1 > self.max_frames:
            self._count_limit(start)
        self.frame_count += 1
        return [self._frame(start, len(partial), text)]


class NDJSONDecoder(LineDecoder):
    """Decode NDJSON bytes into ``TextFrame`` frames (one per non-blank line)."""

    framing = "ndjson"

    def _frame(self, offset: int, length: int, text: str) -> Frame:
        return TextFrame(offset, length, text)


__all__ = ["LineDecoder", "NDJSONDecoder"]
