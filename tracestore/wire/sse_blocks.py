"""SSE event-stream interpretation: complete lines and event blocks in, ``SSEEvent`` out.

``SSEDecoder`` (``sse.py``) decides *when* bytes are complete lines or whole blocks; this
module decides what they *mean*, per the WHATWG rules listed in ``sse.py``.  Regions handed
in always end with a line end and start at ``_pos``; state carries over between calls, so a
block may be interpreted across several regions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from tracestore.wire.base import Decoder
from tracestore.wire.frames import Frame, SSEEvent, SSEEventDraft, new_sse_event
from tracestore.wire.utf8 import raise_invalid_utf8

# One token per non-blank line (with its terminator), or per RUN of blank lines: a flood of
# blank lines (50 MB of bare CR) is then one match, not one Python object per line.
# (A character class, not ``(?:\r\n|\r|\n)+``: repeating a group keeps backtracking state
# per repetition, which is memory per blank line again.)
_TOKEN = re.compile(rb"([^\r\n]+)(\r\n|\r|\n)|[\r\n]+")
_COLON = 0x3A
_new = object.__new__


def _mixed_lines(region: bytes) -> Iterator[tuple[bytes, int]]:
    """(line, terminator length) pairs of a region with any line ends, lazily.

    A run of k blank lines yields at most two pairs: the first blank line (which may
    dispatch the open block) and one "blank line" as long as the rest of the run.  After a
    dispatch no block is open, and a blank line with no open block only moves the offset,
    so this is exactly what k separate pairs would do -- in bounded memory and time.
    """
    for match in _TOKEN.finditer(region):
        line = match.group(1)
        if line is not None:
            yield line, len(match.group(2))
            continue
        start, end = match.span()
        first = 2 if region.startswith(b"\r\n", start) else 1
        yield b"", first
        if end - start > first:
            yield b"", end - start - first



class SSEInterpreter(Decoder):
    """Field and block interpretation shared by every feeding path of ``SSEDecoder``."""

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        # Index in _buf up to which it has been searched (for line ends while a CR is about,
        # for a blank line on the LF-only path).
        self._scan = 0
        # _buf ends with a CR that may be the first half of a CRLF.
        self._cr_held = False
        # SSEDecoder.feed may take its LF-only path (see there).
        self._lf_ok = False
        # The event block being assembled (None / empty while between blocks).
        self._block_start: int | None = None
        # None (no data line yet), one str, or a list of str for multi-line data.
        self._data: str | list[str] | None = None
        self._event: str | None = None
        self._retry: int | None = None
        # A non-comment field line was seen in the current block (for truncation reports).
        self._fields = False
        #: The spec's "last event ID" buffer (None until an id field is seen).
        self.last_event_id: str | None = None
        #: The stream's reconnection time from the last valid ``retry`` field.
        self.reconnection_time: int | None = None
        #: Number of complete comment lines (``:`` ...) seen; comments are not frames.
        self.comments = 0

    def _region(self, region: bytes, has_cr: bool, out: list[Frame]) -> None:
        """Interpret complete lines; ``region`` ends with a line end, starts at ``_pos``."""
        # Three line ends in a row means extra blank lines (a flood, or a stray one): the
        # block splitter would make one piece per blank line, so take the path that treats
        # a run of blank lines as one token.
        if not has_cr:
            if region.find(b"\n\n\n") < 0:
                self._blocks(region, b"\n", out)  # LF only: OpenAI, Anthropic
                return
        else:
            crlf = region.count(b"\r\n")
            if (crlf == region.count(b"\r") == region.count(b"\n")
                    and region.find(b"\r\n\r\n\r\n") < 0):
                self._blocks(region, b"\r\n", out)  # CRLF only: Gemini ?alt=sse
                return
        self._lines(_mixed_lines(region), out)  # mixed line ends or blank runs

    def _blocks(self, region: bytes, eol: bytes, out: list[Frame]) -> None:
        """Fast path for a region with one kind of line end.

        Splitting on a double line end yields whole event blocks ("pieces") in one C call,
        so the blank line that dispatches an event costs no loop iteration and offsets
        advance per block, not per line.  The two shapes nearly every real event has,
        ``data: X`` and ``event: E<eol>data: X``, are decoded in one call and cut out of
        the text with ``find``; that is what makes this faster than line-at-a-time
        parsers.  Other pieces take a per-line loop; a piece that is empty or starts with
        a line end holds extra blank lines and goes through ``_lines``, as does the tail
        after the last blank line.
        """
        eol_len = len(eol)
        sep_len = eol_len + eol_len
        inner_max = self.max_frame_bytes - sep_len  # a piece this long still fits the bound
        eol_text = eol.decode("ascii")
        pieces = region.split(eol + eol)
        tail = pieces.pop()
        pos = self._pos
        block_start = self._block_start
        data = self._data
        event = self._event
        retry = self._retry
        max_bytes = self.max_frame_bytes
        max_frames = self.max_frames
        count = self.frame_count
        append = out.append
        last_id = self.last_event_id  # reloaded whenever a slower path may change it
        piece = b""
        try:
            for piece in pieces:
                if block_start is None:
                    # Each shape is built inline, with no shared tail: every bytecode
                    # saved per event shows in the throughput.
                    if piece.startswith(b"data: "):
                        # (find() is ~2x cheaper than the ``in`` operator on bytes.)
                        if piece.find(eol, 6) < 0 and len(piece) <= inner_max:
                            count += 1
                            if count > max_frames:
                                self._count_limit(pos)
                            # new_sse_event inlined (see frames.py)
                            frame = _new(SSEEventDraft)
                            frame.offset = pos
                            frame.length = size = len(piece) + sep_len
                            frame.event = "message"
                            frame.data = piece[6:].decode()  # UTF-8, strict
                            frame.id = last_id
                            frame.retry = None
                            frame.event_field_present = False
                            frame.__class__ = SSEEvent  # type: ignore[assignment]
                            append(frame)  # type: ignore[arg-type]  # an SSEEvent now
                            pos += size
                            continue
                    elif piece.startswith(b"event: ") and len(piece) <= inner_max:
                        # (The bound is checked before decoding, so an over-long block
                        # fails with frame_byte_limit exactly as a chunked feed would.)
                        text = piece.decode()  # UTF-8, strict
                        nl = text.find(eol_text)
                        second = nl + eol_len
                        if (nl > 0 and text.startswith("data: ", second)
                                and text.find(eol_text, second) < 0):
                            count += 1
                            if count > max_frames:
                                self._count_limit(pos)
                            frame = _new(SSEEventDraft)
                            frame.offset = pos
                            frame.length = size = len(piece) + sep_len
                            frame.event = text[7:nl] or "message"
                            frame.data = text[second + 6:]
                            frame.id = last_id
                            frame.retry = None
                            frame.event_field_present = True
                            frame.__class__ = SSEEvent  # type: ignore[assignment]
                            append(frame)  # type: ignore[arg-type]  # an SSEEvent now
                            pos += size
                            continue
                size = len(piece) + sep_len
                start = pos if block_start is None else block_start
                if not piece or piece.startswith(eol) or pos + size - start > max_bytes:
                    # Extra blank lines, or a block over the bound: the line-by-line path
                    # (with our state) checks the bound line by line, in stream order, so
                    # the error is the same one a chunked feed would meet first.
                    self._pos, self._block_start, self.frame_count = pos, block_start, count
                    self._data, self._event, self._retry = data, event, retry
                    self._lines([(line, eol_len) for line in piece.split(eol)]
                                + [(b"", eol_len)], out)
                    pos, block_start, count = self._pos, self._block_start, self.frame_count
                    data, event, retry = self._data, self._event, self._retry
                    last_id = self.last_event_id
                    continue
                block_start = start
                for line in piece.split(eol):
                    data, event, retry = self._field(line, data, event, retry)
                last_id = self.last_event_id
                pos += size  # only now, so that ``pos`` is the piece start on a decode error
                size = pos - block_start
                # The blank line ending the piece dispatches the block (if it had data).
                if data is not None:
                    count += 1
                    if count > max_frames:
                        self._count_limit(block_start)
                    append(new_sse_event(block_start, size, event or "message",
                                         data if type(data) is str else "\n".join(data),
                                         last_id, retry, event is not None))
                block_start = data = event = retry = None
        except UnicodeDecodeError:
            # A piece is decoded in line order, so its first bad byte is the one to report.
            raise_invalid_utf8(piece, pos)
        self._pos, self._block_start, self.frame_count = pos, block_start, count
        self._data, self._event, self._retry = data, event, retry
        if pieces:
            self._fields = False  # every piece ended with its blank line: no open block
        if tail:
            self._lines([(line, eol_len) for line in tail.split(eol)[:-1]], out)

    def _field(self, line: bytes, data: str | list[str] | None, event: str | None,
               retry: int | None) -> tuple[str | list[str] | None, str | None, int | None]:
        """Interpret one non-blank line of the open block; return the new block state.

        Decoding the whole line first validates it (comments and unknown fields too).
        Data lines accumulate as one str, or a list once there are several.
        """
        text = line.decode("utf-8")
        if line[0] == _COLON:
            self.comments += 1  # comments are counted, never dispatched
            return data, event, retry
        self._fields = True
        name, colon, value = text.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            if data is None:
                data = value
            elif isinstance(data, str):
                data = [data, value]
            else:
                data.append(value)
        elif name == "id":
            if "\0" not in value:  # the spec ignores ids containing NUL
                self.last_event_id = value
        elif name == "retry":
            # ASCII digits only, as the spec asks (str.isdigit alone admits others).
            if value.isascii() and value.isdigit():
                try:
                    retry = int(value)
                except ValueError:  # beyond Python's int-from-str digit limit
                    pass
                else:
                    self.reconnection_time = retry
        # Any other field name is ignored (after the UTF-8 validation above).
        return data, event, retry

    def _lines(self, pairs: Iterable[tuple[bytes, int]], out: list[Frame]) -> None:
        """General path: (line, terminator length) pairs, one at a time."""
        pos = self._pos
        block_start = self._block_start
        data = self._data
        event = self._event
        retry = self._retry
        max_bytes = self.max_frame_bytes
        line = b""
        try:
            for line, eol in pairs:
                if not line:
                    # Blank line: dispatch the block (if it had data), then reset it.
                    if block_start is not None:
                        size = pos + eol - block_start
                        if size > max_bytes:
                            self._byte_limit(block_start, size)
                        if data is not None:
                            self.frame_count += 1
                            if self.frame_count > self.max_frames:
                                self._count_limit(block_start)
                            out.append(new_sse_event(
                                block_start, size, event or "message",
                                data if type(data) is str else "\n".join(data),
                                self.last_event_id, retry, event is not None))
                        block_start = data = event = retry = None
                        self._fields = False
                    pos += eol
                    continue
                if block_start is None:
                    block_start = pos
                nxt = pos + len(line) + eol
                if nxt - block_start > max_bytes:
                    self._byte_limit(block_start, nxt - block_start)
                data, event, retry = self._field(line, data, event, retry)
                pos = nxt
        except UnicodeDecodeError:
            raise_invalid_utf8(line, pos)
        self._pos, self._block_start = pos, block_start
        self._data, self._event, self._retry = data, event, retry



__all__ = ["SSEInterpreter"]
