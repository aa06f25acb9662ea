"""EventStreamDecoder: prelude/message CRCs, every header type, errors, bounds, chunking."""

from __future__ import annotations

import struct
import uuid
import zlib

import pytest

from tracestore.errors import WireError
from tracestore.wire import EventStreamDecoder, EventStreamMessage, Truncation, decode_bytes

HeaderSpec = tuple[str, int, object]


def encode_header(name: str, kind: int, value: object) -> bytes:
    """Encode one header the way the AWS event-stream spec lays it out."""
    raw_name = name.encode()
    out = bytes([len(raw_name)]) + raw_name + bytes([kind])
    if kind in (0, 1):
        return out
    formats = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
    if kind in formats:
        return out + struct.pack(formats[kind], value)
    if kind in (6, 7):
        raw = value if isinstance(value, bytes) else str(value).encode()
        return out + struct.pack(">H", len(raw)) + raw
    if kind == 9:
        assert isinstance(value, uuid.UUID)
        return out + value.bytes
    return out + (value if isinstance(value, bytes) else b"")


def encode_message(headers: list[HeaderSpec] | bytes, payload: bytes = b"") -> bytes:
    """One complete message with correct CRCs (headers pre-encoded if given as bytes)."""
    raw_headers = headers if isinstance(headers, bytes) else b"".join(
        encode_header(*h) for h in headers)
    total = 16 + len(raw_headers) + len(payload)
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(kind: str, payload: bytes) -> bytes:
    return encode_message([(":event-type", 7, kind), (":content-type", 7, "application/json"),
                           (":message-type", 7, "event")], payload)


def test_round_trip_and_offsets() -> None:
    a = event("messageStart", b'{"role":"assistant"}')
    b = event("messageStop", b'{"stopReason":"end_turn"}')
    data = a + b
    for chunk in (None, 1, 5, 12, 13, len(a)):
        frames, trunc = decode_bytes(data, "aws-eventstream", chunk)
        assert trunc is None
        assert [(f.offset, f.length) for f in frames] == [(0, len(a)), (len(a), len(b))]
        assert frames[1].event_type == "messageStop"
        assert frames[1].message_type == "event"
        assert frames[1].content_type == "application/json"
        assert frames[1].payload == b'{"stopReason":"end_turn"}'
        assert frames[1].exception_type is None and frames[1].error_code is None


def test_every_header_type() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    specs: list[HeaderSpec] = [("t", 0, None), ("f", 1, None), ("b", 2, -1), ("s", 3, -300),
                               ("i", 4, 70000), ("l", 5, -(2 ** 40)), ("by", 6, b"\x00\xff"),
                               ("st", 7, "é"), ("ts", 8, 1700000000123), ("u", 9, u)]
    (frame,), _ = decode_bytes(encode_message(specs, b"p"), "aws-eventstream")
    assert frame.headers == {"t": True, "f": False, "b": -1, "s": -300, "i": 70000,
                             "l": -(2 ** 40), "by": b"\x00\xff", "st": "é",
                             "ts": 1700000000123, "u": u}
    assert frame.payload == b"p"


def test_empty_message_is_sixteen_bytes() -> None:
    msg = encode_message([], b"")
    assert len(msg) == 16
    assert decode_bytes(msg, "aws-eventstream")[0] == [EventStreamMessage(0, 16, {}, b"")]


def test_headers_are_independent_dicts() -> None:
    data = event("x", b"{}") * 2
    frames, _ = decode_bytes(data, "aws-eventstream")
    frames[0].headers["mutated"] = True  # type: ignore[union-attr]
    assert "mutated" not in frames[1].headers  # type: ignore[union-attr]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_prelude_crc_mismatch(chunk: int | None) -> None:
    good = event("a", b"{}")
    bad = bytearray(event("b", b"{}"))
    bad[9] ^= 0x01
    with pytest.raises(WireError) as info:
        decode_bytes(good + bytes(bad), "aws-eventstream", chunk)
    assert (info.value.code, info.value.offset) == ("prelude_crc_mismatch", len(good))


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_message_crc_mismatch(chunk: int | None) -> None:
    good = event("a", b"{}")
    bad = bytearray(event("b", b'{"x":1}'))
    bad[-6] ^= 0x20
    with pytest.raises(WireError) as info:
        decode_bytes(good + bytes(bad), "aws-eventstream", chunk)
    assert (info.value.code, info.value.offset) == ("message_crc_mismatch", len(good))


def prelude(total: int, headers_len: int) -> bytes:
    head = struct.pack(">II", total, headers_len)
    return head + struct.pack(">I", zlib.crc32(head))


@pytest.mark.parametrize("total, headers_len", [(15, 0), (0, 0), (20, 5), (16, 1)])
def test_invalid_prelude(total: int, headers_len: int) -> None:
    with pytest.raises(WireError) as info:
        decode_bytes(prelude(total, headers_len) + b"\x00" * 8, "aws-eventstream")
    assert (info.value.code, info.value.offset) == ("invalid_prelude", 0)


@pytest.mark.parametrize("raw_headers", [
    b"\x01a\x0a",                 # unknown type 10
    b"\x05ab",                    # name runs past the block
    b"\x01a",                     # no type byte
    b"\x01a\x04\x00\x00",         # i32 cut short
    b"\x01a\x07\x00\x05abc",      # string shorter than its length
    b"\x01a\x09" + b"\x00" * 8,   # uuid cut short
    b"\x01a\x00\x01a\x01",        # duplicate name
])
def test_invalid_header(raw_headers: bytes) -> None:
    msg = encode_message(raw_headers, b"{}")
    with pytest.raises(WireError) as info:
        decode_bytes(event("ok", b"{}") + msg, "aws-eventstream")
    assert info.value.code == "invalid_header"
    assert info.value.offset is not None and info.value.offset >= len(event("ok", b"{}")) + 12


def test_invalid_utf8_header_name() -> None:
    msg = encode_message(b"\x02a\xff\x00", b"")
    with pytest.raises(WireError) as info:
        decode_bytes(msg, "aws-eventstream")
    assert (info.value.code, info.value.offset) == ("invalid_utf8", 14)


def test_truncated_message_at_close() -> None:
    a = event("a", b"{}")
    b = event("b", b"{}")
    frames, trunc = decode_bytes(a + b[:-3], "aws-eventstream", 4)
    assert len(frames) == 1
    assert trunc == Truncation(len(a), len(b) - 3, "truncated_frame")
    assert decode_bytes(a + b[:5], "aws-eventstream")[1] == Truncation(len(a), 5,
                                                                         "truncated_frame")


@pytest.mark.parametrize("chunk", [None, 1, 9])
def test_frame_byte_limit(chunk: int | None) -> None:
    msg = event("a", b"{}")
    assert len(decode_bytes(msg * 2, "aws-eventstream", chunk,
                            max_frame_bytes=len(msg))[0]) == 2
    with pytest.raises(WireError) as info:
        decode_bytes(msg * 2, "aws-eventstream", chunk, max_frame_bytes=len(msg) - 1)
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 0)


def test_huge_declared_length_fails_before_buffering() -> None:
    dec = EventStreamDecoder(max_frame_bytes=1024)
    with pytest.raises(WireError) as info:
        dec.feed(prelude(2 ** 31, 0))  # only 12 bytes seen: no waiting for 2 GiB
    assert info.value.code == "frame_byte_limit"


def test_frame_count_limit() -> None:
    msg = event("a", b"{}")
    assert len(decode_bytes(msg * 3, "aws-eventstream", max_frames=3)[0]) == 3
    with pytest.raises(WireError) as info:
        decode_bytes(msg * 3, "aws-eventstream", 5, max_frames=2)
    assert (info.value.code, info.value.offset) == ("frame_count_limit", 2 * len(msg))


def test_no_bom_stripping_for_binary() -> None:
    # A message whose total length starts with the bytes EF BB BF must not be mangled.
    data = b"\xef\xbb\xbf\x00" + b"\x00" * 8
    with pytest.raises(WireError) as info:
        decode_bytes(data, "aws-eventstream")
    assert (info.value.code, info.value.offset) == ("prelude_crc_mismatch", 0)
