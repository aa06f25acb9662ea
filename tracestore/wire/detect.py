"""Guess a capture's framing from its first bytes.

Captures arrive as files whose HTTP headers were often lost (VCR recorders redact
``content-type``), so ingest needs a best guess from content alone.  The guess is only
ever a default: callers that know the framing pass it explicitly.

Order matters: the binary AWS prelude is checked first (its CRC makes a false positive
practically impossible), then the text framings after an optional BOM and whitespace.
NDJSON and vercel ``.chunks.txt`` files are both "one JSON value per line" and cannot be
told apart by content (a ``[DONE]`` line may never come), so content detection says
``ndjson`` and ``framing_for_path`` uses the ``.chunks.txt`` name to say ``chunks``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from tracestore.errors import WireError
from tracestore.wire.utf8 import UTF8_BOM

#: How many leading bytes ``detect_framing`` looks at.
DETECT_HEAD_BYTES: Final[int] = 4096

FRAMINGS: Final[tuple[str, ...]] = ("aws-eventstream", "sse", "ndjson", "json-array", "chunks")

_SSE_PREFIXES: Final[tuple[bytes, ...]] = (b"data:", b"event:", b"id:", b"retry:", b":")


def _is_aws_prelude(head: bytes) -> bool:
    if len(head) < 12:
        return False
    total: int
    headers_len: int
    prelude_crc: int
    total, headers_len, prelude_crc = struct.unpack_from(">III", head)
    return (zlib.crc32(head[:8]) == prelude_crc and total >= 16
            and headers_len <= total - 16)


def detect_framing(head: bytes) -> str:
    """Return the framing of a capture from its first bytes (up to 4 KiB are used).

    Raises ``WireError(code="unknown_framing", offset=0)`` when nothing matches.
    """
    head = bytes(head[:DETECT_HEAD_BYTES])
    if _is_aws_prelude(head):
        return "aws-eventstream"
    text = head[3:] if head.startswith(UTF8_BOM) else head
    stripped = text.lstrip(b" \t\r\n")
    if stripped.startswith(b"["):
        return "json-array"
    # First non-blank line decides between SSE and line-delimited JSON.
    first = stripped.split(b"\n", 1)[0].split(b"\r", 1)[0]
    if first.startswith(_SSE_PREFIXES):
        return "sse"
    if first.startswith(b"{"):
        return "ndjson"
    raise WireError("cannot recognise the capture's framing from its first bytes",
                    code="unknown_framing", offset=0)


def framing_for_path(path_name: str, head: bytes) -> str:
    """Framing for a capture file: ``*.chunks.txt`` is ``chunks``, else ``detect_framing``."""
    if path_name.lower().endswith(".chunks.txt"):
        return "chunks"
    return detect_framing(head)


__all__ = ["DETECT_HEAD_BYTES", "FRAMINGS", "detect_framing", "framing_for_path"]
