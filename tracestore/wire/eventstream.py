"""Incremental decoder for ``application/vnd.amazon.eventstream`` (AWS binary event stream).

Bedrock ConverseStream does not speak SSE: it sends length-prefixed binary messages,
each guarded by two CRC32s.  Message layout (all integers big-endian)::

    total_length u32 | headers_length u32 | prelude_crc u32      (12-byte prelude)
    headers (headers_length bytes: [name_len u8][name][type u8][value] ...)
    payload (total_length - headers_length - 16 bytes)
    message_crc u32  (CRC32 of every preceding byte of the message)

Why it is shaped like this:

* Both CRCs are checked before anything is trusted; a corrupted length must not make us
  wait for (or allocate) gigabytes, so ``total_length`` is checked against
  ``max_frame_bytes`` as soon as the prelude's own CRC verifies.
* Complete messages are parsed straight out of the caller's chunk when nothing is
  buffered (``struct.unpack_from`` and ``zlib.crc32`` on a memoryview: no copies);
  only the unfinished tail is kept, so at most one incomplete message is held.
* Bedrock repeats the same few header blocks (``:event-type``, ``:content-type``,
  ``:message-type``) on every message, so parsed header blocks are memoised by their raw
  bytes in a small bounded cache; each frame still gets its own ``dict``.

Header value types: 0/1 bool, 2 i8, 3 i16, 4 i32, 5 i64, 6 bytes, 7 UTF-8 string, 8
timestamp (kept as int milliseconds since the epoch, like botocore), 9 ``uuid.UUID``.
A duplicate header name is ``invalid_header`` (botocore refuses it too).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import NoReturn

from tracestore.errors import WireError
from tracestore.wire.base import Decoder
from tracestore.wire.frames import EventStreamMessage, Frame, HeaderValue, Truncation
from tracestore.wire.utf8 import TRUNCATED_FRAME, decode_utf8

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
# Fixed-size header value types: type id -> (struct, size).
_FIXED: dict[int, tuple[struct.Struct, int]] = {
    2: (struct.Struct(">b"), 1),
    3: (struct.Struct(">h"), 2),
    4: (struct.Struct(">i"), 4),
    5: (struct.Struct(">q"), 8),
    8: (struct.Struct(">q"), 8),
}
_PRELUDE_LEN = 12
_MIN_MESSAGE = 16
_HEADER_CACHE_MAX = 512

Buffer = bytes | bytearray


class EventStreamDecoder(Decoder):
    """Decode AWS event-stream bytes into ``EventStreamMessage`` frames."""

    framing = "aws-eventstream"

    def __init__(self, **bounds: int) -> None:
        super().__init__(**bounds)
        self._header_cache: dict[bytes, dict[str, HeaderValue]] = {}
        # Text framings strip a BOM; a binary framing must not.
        self._at_start = False
        # Bytes the buffer must hold before parsing can progress: a prelude, or the whole
        # message whose prelude was already checked.  Live chunks (16-64 bytes) mostly end
        # inside a message; they are only appended, not re-parsed and re-checked each time.
        self._wanted = _PRELUDE_LEN

    def _feed(self, chunk: bytes) -> list[Frame]:
        buf = self._buf
        data: Buffer
        if buf:
            buf += chunk
            if len(buf) < self._wanted:
                return self._completed
            data = buf
        else:
            data = chunk  # fast path: parse in place, copy only the tail
        out: list[Frame] = self._completed
        with memoryview(data) as view:
            i = self._messages(data, view, out)
        if data is buf:
            del buf[:i]
        else:
            self._buf = bytearray(data[i:])
        return out

    def _messages(self, data: Buffer, view: memoryview, out: list[Frame]) -> int:
        """Parse every complete message in ``data``; return the index after the last one."""
        n = len(data)
        i = 0
        base = self._pos
        max_bytes = self.max_frame_bytes
        crc32 = zlib.crc32
        unpack_prelude = _PRELUDE.unpack_from
        unpack_u32 = _U32.unpack_from
        cache = self._header_cache
        self._wanted = _PRELUDE_LEN
        while n - i >= _PRELUDE_LEN:
            total, headers_len, prelude_crc = unpack_prelude(data, i)
            if crc32(view[i:i + 8]) != prelude_crc:
                self._fail(base + i, "prelude CRC32 does not match", "prelude_crc_mismatch")
            if total < _MIN_MESSAGE or headers_len > total - _MIN_MESSAGE:
                self._fail(base + i, f"impossible lengths (total {total}, headers "
                           f"{headers_len})", "invalid_prelude")
            if total > max_bytes:
                self._byte_limit(base + i, total)
            end = i + total
            if end > n:
                self._wanted = total  # the rest of this message (its prelude is checked)
                break
            (message_crc,) = unpack_u32(data, end - 4)
            if crc32(view[i + 8:end - 4], prelude_crc) != message_crc:
                self._fail(base + i, "message CRC32 does not match", "message_crc_mismatch")
            headers_end = i + _PRELUDE_LEN + headers_len
            if headers_len:
                raw = bytes(view[i + _PRELUDE_LEN:headers_end])
                cached = cache.get(raw)
                if cached is None:
                    cached = self._parse_headers(raw, base + i + _PRELUDE_LEN)
                    if len(cache) >= _HEADER_CACHE_MAX:
                        cache.clear()  # bounded memory beats a perfect hit rate
                    cache[raw] = cached
                headers = dict(cached)
            else:
                headers = {}
            if self.frame_count + 1 > self.max_frames:
                self._count_limit(base + i)
            self.frame_count += 1
            out.append(EventStreamMessage(base + i, total, headers,
                                          bytes(view[headers_end:end - 4])))
            i = end
        self._pos = base + i
        return i

    def _parse_headers(self, raw: bytes, offset: int) -> dict[str, HeaderValue]:
        """Parse one header block; ``offset`` is the absolute offset of ``raw[0]``."""
        headers: dict[str, HeaderValue] = {}
        n = len(raw)
        j = 0
        while j < n:
            start = j
            name_len = raw[j]
            j += 1
            if j + name_len + 1 > n:
                self._fail(offset + start, "header name runs past the header block",
                           "invalid_header")
            name = decode_utf8(raw[j:j + name_len], offset + j)
            j += name_len
            kind = raw[j]
            j += 1
            value: HeaderValue
            if kind == 0:
                value = True
            elif kind == 1:
                value = False
            elif kind in _FIXED:
                unpacker, size = _FIXED[kind]
                if j + size > n:
                    self._fail(offset + start, f"header {name!r} value is cut short",
                               "invalid_header")
                (value,) = unpacker.unpack_from(raw, j)
                j += size
            elif kind == 6 or kind == 7:
                if j + 2 > n:
                    self._fail(offset + start, f"header {name!r} length is cut short",
                               "invalid_header")
                (size,) = _U16.unpack_from(raw, j)
                j += 2
                if j + size > n:
                    self._fail(offset + start, f"header {name!r} value is cut short",
                               "invalid_header")
                chunk = raw[j:j + size]
                value = chunk if kind == 6 else decode_utf8(chunk, offset + j)
                j += size
            elif kind == 9:
                if j + 16 > n:
                    self._fail(offset + start, f"header {name!r} UUID is cut short",
                               "invalid_header")
                value = uuid.UUID(bytes=raw[j:j + 16])
                j += 16
            else:
                self._fail(offset + start, f"header {name!r} has unknown type {kind}",
                           "invalid_header")
            if name in headers:
                self._fail(offset + start, f"duplicate header {name!r}", "invalid_header")
            headers[name] = value
        return headers

    def _fail(self, offset: int, what: str, code: str) -> NoReturn:
        raise WireError(f"{what} at byte {offset}", code=code, offset=offset)

    def _close(self) -> list[Frame]:
        if self._buf:
            self.truncation = Truncation(self._pos, len(self._buf), TRUNCATED_FRAME)
            self._pos += len(self._buf)
        return []


__all__ = ["EventStreamDecoder"]
