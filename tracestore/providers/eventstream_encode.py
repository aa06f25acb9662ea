"""A minimal AWS event-stream *encoder*, for building synthetic Bedrock captures.

Why it exists: no real capture of an in-stream Bedrock exception was found, so the
synthetic fixtures (``fixtures/synthetic/bedrock/*.bin``) are built from the documented
shape, and tests rebuild them byte for byte to prove how they were made.  Only string
headers (type 7) are supported — that is all Bedrock uses — and both CRCs are computed as
botocore verifies them (prelude CRC over the first 8 bytes; message CRC over everything
before it).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Iterable, Mapping

STRING_HEADER = 7


def encode_headers(headers: Mapping[str, str]) -> bytes:
    """Encode string headers in the given order as ``[len][name][7][u16 len][value]``."""
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
        if len(raw_name) > 255 or len(raw_value) > 0xFFFF:
            raise ValueError("header name or value too long")
        out += bytes([len(raw_name)]) + raw_name + bytes([STRING_HEADER])
        out += struct.pack(">H", len(raw_value)) + raw_value
    return bytes(out)


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One complete message with prelude and message CRC32s."""
    raw_headers = encode_headers(headers)
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def event(event_type: str, body: Mapping[str, Any]) -> bytes:
    """A Bedrock event message (header order as real Bedrock sends it)."""
    return encode_message({":event-type": event_type, ":content-type": "application/json",
                           ":message-type": "event"}, _json(body))


def exception(exception_type: str, body: Mapping[str, Any]) -> bytes:
    """A modeled exception message (``:message-type=exception``)."""
    return encode_message({":exception-type": exception_type, ":content-type": "application/json",
                           ":message-type": "exception"}, _json(body))


def unmodeled_error(code: str, message: str) -> bytes:
    """An unmodeled error message (``:message-type=error``, empty payload)."""
    return encode_message({":message-type": "error", ":error-code": code,
                           ":error-message": message}, b"")


def stream(messages: Iterable[bytes]) -> bytes:
    """Concatenate messages into one capture body."""
    return b"".join(messages)


__all__ = ["encode_headers", "encode_message", "event", "exception", "stream", "unmodeled_error"]
