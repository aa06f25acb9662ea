"""Incremental decoder for one JSON array streamed element by element.

Gemini's default ``streamGenerateContent`` (no ``alt=sse``) answers ``application/json``
with a single array that grows as the model writes: ``[{...}\\n,\\r\\n{...}\\n]``.  A client
must hand over each element as soon as it closes, not wait for the ``]``.  The same
decoder reads JSON arrays of already-decoded events.

How: between elements only whitespace, ``,`` and the final ``]`` are allowed (anything
else is ``invalid_json_array``; anything but whitespace after the ``]`` is
``trailing_data``).  Inside an element a regex jumps from one structural byte to the
next -- quotes, backslashes, brackets -- tracking string/escape state and a bracket
stack, so braces inside strings (Gemini's ``thoughtSignature`` blobs) never confuse it
and mismatched brackets are caught.  Bare scalars (numbers, ``true``...) end at the next
delimiter and are checked with ``json.loads``.  Containers are checked only structurally;
full JSON parsing belongs to the provider layer.  The scan position is kept between
``feed`` calls, so no byte is scanned twice.

At ``close`` a missing ``]`` is a ``truncation``: inside an element it starts at the
element; between elements it is zero-length at the end of input (nothing unfinished
except the array itself).  An empty input is also a truncation at offset 0.
"""

from __future__ import annotations

import json
import re
from typing import NoReturn

from tracestore.errors import WireError
from tracestore.wire.base import Decoder
from tracestore.wire.frames import Frame, TextFrame, Truncation
from tracestore.wire.utf8 import TRUNCATED_FRAME, decode_utf8, tail_code

_NON_WS = re.compile(rb"[^ \t\r\n]")
_STRUCTURAL = re.compile(rb'["\[\]{}]')
_IN_STRING = re.compile(rb'["\\]')
_SCALAR_END = re.compile(rb"[ \t\r\n,\]]")
_SCALAR_FIRST = frozenset(b"-0123456789tfn")
_CLOSER = {ord("{"): ord("}"), ord("["): ord("]")}
_QUOTE, _BACKSLASH = ord('"'), ord("\\")

# Where we are in the array.
_BEFORE, _FIRST, _VALUE, _ELEMENT, _AFTER, _DONE = range(6)


class JSONArrayDecoder(Decoder):
    """Decode a streamed JSON array into one ``TextFrame`` per top-level element."""

    framing = "json-array"

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        self._state = _BEFORE
        self._i = 0  # scan index into _buf
        # Element in progress: its start index in _buf, open brackets, string/escape state.
        self._start = 0
        self._stack: list[int] = []
        self._in_string = False
        self._escape = False
        self._scalar = False

    def _bad(self, index: int, what: str, code: str = "invalid_json_array") -> NoReturn:
        raise WireError(f"{what} at byte {self._pos + index}", code=code,
                        offset=self._pos + index)

    def _feed(self, chunk: bytes) -> list[Frame]:
        buf = self._buf
        buf += chunk
        if self._at_start and not self._strip_bom():
            return []
        out: list[Frame] = self._completed
        i = self._i
        n = len(buf)
        while i < n:
            state = self._state
            if state == _ELEMENT:
                # Never scan past the bound: an over-long element fails here with the
                # same error whatever the chunking (a structural error beyond the bound
                # would otherwise win only when the whole input arrives at once).
                start = self._start
                limit = start + self.max_frame_bytes + (1 if self._scalar else 0)
                end = self._scan_element(i, min(n, limit))
                if end < 0:
                    if n - start > self.max_frame_bytes:
                        self._byte_limit(self._pos + start, n - start)
                    i = n
                    break
                self._emit(end, out)
                i = end
                continue
            match = _NON_WS.search(buf, i)
            if match is None:
                i = n
                break
            i = match.start()
            c = buf[i]
            if state == _BEFORE:
                if c != ord("["):
                    self._bad(i, "JSON array expected ('[')")
                self._state = _FIRST
                i += 1
            elif state == _AFTER or (state == _FIRST and c == ord("]")):
                if c == ord(","):
                    self._state = _VALUE
                elif c == ord("]"):
                    self._state = _DONE
                else:
                    self._bad(i, "',' or ']' expected between array elements")
                i += 1
            elif state == _DONE:
                self._bad(i, "data after the closing ']'", "trailing_data")
            else:  # _FIRST or _VALUE: an element starts here
                i = self._begin(i, c)
        # Drop consumed bytes, keeping the element in progress (at most one frame).
        keep_from = self._start if self._state == _ELEMENT else i
        del buf[:keep_from]
        self._pos += keep_from
        self._start = 0
        self._i = i - keep_from
        if self._state == _ELEMENT and len(buf) > self.max_frame_bytes:
            self._byte_limit(self._pos, len(buf))
        return out

    def _begin(self, i: int, c: int) -> int:
        """Classify the element starting at ``i`` by its first byte; return where to scan on."""
        self._state = _ELEMENT
        self._start = i
        self._stack = []
        self._in_string = self._escape = self._scalar = False
        if c in _CLOSER:
            self._stack.append(_CLOSER[c])
        elif c == _QUOTE:
            self._in_string = True
        elif c in _SCALAR_FIRST:
            self._scalar = True
        else:
            self._bad(i, "JSON value expected")
        return i + 1

    def _scan_element(self, i: int, n: int) -> int:
        """Scan the element from ``i`` up to ``n``; its end index, or -1 if unfinished.

        A bare scalar ends *at* its delimiter (exclusive), hence its one-byte longer limit.
        """
        buf = self._buf
        if self._scalar:
            match = _SCALAR_END.search(buf, i, n)
            return -1 if match is None else match.start()
        stack = self._stack
        in_string = self._in_string
        try:
            while True:
                if in_string:
                    if self._escape:
                        if i >= n:
                            return -1
                        i += 1  # the escaped byte, whatever it is
                        self._escape = False
                    match = _IN_STRING.search(buf, i, n)
                    if match is None:
                        return -1
                    k = match.start()
                    if buf[k] == _QUOTE:
                        in_string = False
                        i = k + 1
                        if not stack:
                            return i  # a bare string element
                    elif k + 1 < n:
                        i = k + 2
                    else:
                        self._escape = True
                        return -1
                else:
                    match = _STRUCTURAL.search(buf, i, n)
                    if match is None:
                        return -1
                    k = match.start()
                    c = buf[k]
                    i = k + 1
                    if c == _QUOTE:
                        in_string = True
                    elif c in _CLOSER:
                        stack.append(_CLOSER[c])
                    elif stack.pop() != c:
                        self._bad(k, "mismatched bracket")
                    elif not stack:
                        return i
        finally:
            # The caller resumes at the end of the buffer; the string state must survive.
            self._in_string = in_string

    def _emit(self, end: int, out: list[Frame]) -> None:
        start = self._start
        size = end - start
        offset = self._pos + start
        if size > self.max_frame_bytes:
            self._byte_limit(offset, size)
        raw = bytes(self._buf[start:end])
        text = decode_utf8(raw, offset)
        if self._scalar:
            try:
                json.loads(text)
            except ValueError:
                self._bad(start, "invalid JSON scalar")
        if self.frame_count + 1 > self.max_frames:
            self._count_limit(offset)
        self.frame_count += 1
        out.append(TextFrame(offset, size, text))
        self._state = _AFTER

    def _close(self) -> list[Frame]:
        buf = self._buf
        self._at_start = False
        out: list[Frame] = []
        end_of_input = self._pos + len(buf)
        if self._state == _DONE:
            return out
        if self._state == _ELEMENT:
            partial = bytes(buf[self._start:])
            offset = self._pos + self._start
            self.truncation = Truncation(offset, len(partial), tail_code(partial, offset))
        elif self._state == _BEFORE and buf:
            # Only a BOM prefix can be left here (anything else fails in feed).
            self.truncation = Truncation(self._pos, len(buf), tail_code(bytes(buf), self._pos))
        else:
            self.truncation = Truncation(end_of_input, 0, TRUNCATED_FRAME)
        self._pos = end_of_input
        return out


__all__ = ["JSONArrayDecoder"]
