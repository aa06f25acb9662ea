"""Package surface: framing detection, make_decoder, decode_bytes, frame immutability."""

from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest

from tracestore.errors import InputError, WireError
from tracestore.wire import (FRAMINGS, ChunksDecoder, EventStreamDecoder, JSONArrayDecoder,
                             NDJSONDecoder, SSEDecoder, SSEEvent, TextFrame, decode_bytes,
                             detect_framing, framing_for_path, make_decoder)


def aws_prelude(total: int = 16, headers: int = 0) -> bytes:
    head = struct.pack(">II", total, headers)
    return head + struct.pack(">I", zlib.crc32(head))


@pytest.mark.parametrize("head, framing", [
    (aws_prelude() + b"\x00" * 4, "aws-eventstream"),
    (b"[{", "json-array"),
    (b"\xef\xbb\xbf \r\n [", "json-array"),
    (b"data: {}\n\n", "sse"),
    (b"\n\nevent: x\n", "sse"),
    (b": OPENROUTER PROCESSING\n\n", "sse"),
    (b"id: 1\n", "sse"),
    (b"retry: 10\r\n", "sse"),
    (b'{"model":"x"}\n{"model"', "ndjson"),
    (b'\r\n  {"a":1}', "ndjson"),
])
def test_detect_framing(head: bytes, framing: str) -> None:
    assert detect_framing(head) == framing


@pytest.mark.parametrize("head", [b"", b"   \n", b"hello", b"<html>", aws_prelude()[:11],
                                  b"\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00"])
def test_unknown_framing(head: bytes) -> None:
    with pytest.raises(WireError) as info:
        detect_framing(head)
    assert (info.value.code, info.value.offset) == ("unknown_framing", 0)


def test_framing_for_path() -> None:
    assert framing_for_path("xai/chat.chunks.txt", b'{"a":1}') == "chunks"
    assert framing_for_path("X.CHUNKS.TXT", b"") == "chunks"
    assert framing_for_path("capture.sse", b"data: x\n\n") == "sse"
    assert framing_for_path("capture.ndjson", b'{"a":1}\n') == "ndjson"


def test_make_decoder_and_unknown_name() -> None:
    kinds = {"sse": SSEDecoder, "ndjson": NDJSONDecoder, "chunks": ChunksDecoder,
             "json-array": JSONArrayDecoder, "aws-eventstream": EventStreamDecoder}
    assert set(FRAMINGS) == set(kinds)
    for name, cls in kinds.items():
        decoder = make_decoder(name, max_frame_bytes=10, max_frames=2)
        assert type(decoder) is cls and decoder.framing == name
        assert (decoder.max_frame_bytes, decoder.max_frames) == (10, 2)
    with pytest.raises(WireError) as info:
        make_decoder("xml")
    assert info.value.code == "unknown_framing"


def test_wire_error_is_an_input_error() -> None:
    with pytest.raises(InputError):
        decode_bytes(b"\xff\n", "ndjson")


def test_decode_bytes_chunk_sizes() -> None:
    data = b'{"a":1}\n{"b":2}\n'
    expected = ([TextFrame(0, 8, '{"a":1}'), TextFrame(8, 8, '{"b":2}')], None)
    for chunk in (None, 1, 3, 16, 1000):
        assert decode_bytes(data, "ndjson", chunk) == expected
    with pytest.raises(ValueError):
        decode_bytes(data, "ndjson", 0)


def test_frames_are_frozen_slotted_values() -> None:
    frame = SSEEvent(0, 9, "message", "x", None, None, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.data = "y"  # type: ignore[misc]
    assert not hasattr(frame, "__dict__")
    assert frame == decode_bytes(b"data: x\n\n", "sse")[0][0]
    assert hash(frame) == hash(SSEEvent(0, 9, "message", "x", None, None, False))


@pytest.mark.parametrize("feeds", [
    [b"data: x\n\n"],                      # one whole event per chunk
    [b"data: ", b"x\n\n"],                 # an event completed in the buffer
    [b"data: x\n\ndata: x\n\n"],           # several blocks in one region
    [b"data: x\r\n\r\n"],                  # CRLF
    [b"id: 1\ndata: x\n\n"],               # the per-line path
])
def test_every_sse_path_builds_real_frozen_frames(feeds: list[bytes]) -> None:
    # The decoders build SSEEvent through a draft class and a __class__ swap; the result
    # must be indistinguishable from a constructor-built frame.
    decoder = SSEDecoder()
    frames = [frame for chunk in feeds for frame in decoder.feed(chunk)] + decoder.close()
    frame = frames[0]
    expected = SSEEvent(0, frame.length, "message", "x", frame.id, None, False)
    assert type(frame) is SSEEvent
    assert frame == expected and hash(frame) == hash(expected)
    assert repr(frame) == repr(expected)
    assert dataclasses.astuple(frame) == dataclasses.astuple(expected)
    assert not hasattr(frame, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.data = "y"  # type: ignore[misc]


def test_bytes_consumed_and_close_idempotence_guard() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\ndata: b")
    assert decoder.bytes_consumed == 9
    decoder.close()
    assert decoder.bytes_consumed == 16
    with pytest.raises(WireError) as info:
        decoder.close()
    assert info.value.code == "decoder_closed"
