"""NDJSONDecoder and ChunksDecoder: line rules, the unterminated last line, UTF-8, bounds."""

from __future__ import annotations

import pytest

from tracestore.errors import WireError
from tracestore.wire import (ChunksDecoder, NDJSONDecoder, SSEEvent, TextFrame, Truncation,
                             decode_bytes)


def all_splits(data: bytes, framing: str, **bounds: int):
    whole = decode_bytes(data, framing, **bounds)
    for cut in range(len(data) + 1):
        dec = NDJSONDecoder(**bounds) if framing == "ndjson" else ChunksDecoder(**bounds)
        frames = dec.feed(data[:cut]) + dec.feed(data[cut:]) + dec.close()
        assert (frames, dec.truncation) == whole, cut
    assert decode_bytes(data, framing, 1, **bounds) == whole
    return whole


def test_ndjson_lines_crlf_and_blank_lines() -> None:
    data = b'{"a":1}\n\n  \r\n{"b":2}\r\n[3]\n'
    frames, trunc = all_splits(data, "ndjson")
    assert frames == [TextFrame(0, 8, '{"a":1}'), TextFrame(13, 9, '{"b":2}'),
                      TextFrame(22, 4, "[3]")]
    assert trunc is None
    assert data[13:22] == b'{"b":2}\r\n'


def test_ndjson_unterminated_complete_json_is_emitted() -> None:
    frames, trunc = all_splits(b'{"a":1}\n{"done":true}', "ndjson")
    assert frames[-1] == TextFrame(8, 13, '{"done":true}')
    assert trunc is None


def test_ndjson_unterminated_cut_json_is_truncation() -> None:
    frames, trunc = all_splits(b'{"a":1}\n{"done":tr', "ndjson")
    assert frames == [TextFrame(0, 8, '{"a":1}')]
    assert trunc == Truncation(8, 10, "truncated_frame")


def test_ndjson_trailing_whitespace_is_clean() -> None:
    assert all_splits(b'{"a":1}\n  \r', "ndjson")[1] is None


def test_ndjson_truncated_utf8() -> None:
    data = '{"a":1}\n{"t":"✅'.encode()[:-2]
    frames, trunc = all_splits(data, "ndjson")
    assert trunc == Truncation(8, len(data) - 8, "truncated_utf8")


@pytest.mark.parametrize("chunk", [None, 1, 4])
def test_ndjson_invalid_utf8_offset(chunk: int | None) -> None:
    with pytest.raises(WireError) as info:
        decode_bytes(b'{"a":1}\n{"t":"x\xc3\x28"}\n', "ndjson", chunk)
    assert (info.value.code, info.value.offset) == ("invalid_utf8", 15)


def test_ndjson_bom_stripped() -> None:
    frames, _ = all_splits(b'\xef\xbb\xbf{"a":1}\n', "ndjson")
    assert frames == [TextFrame(3, 8, '{"a":1}')]


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_ndjson_frame_byte_limit(chunk: int | None) -> None:
    line = b'{"k":"' + b"v" * 10 + b'"}\n'  # 19 bytes with its LF
    assert len(decode_bytes(line * 3, "ndjson", chunk, max_frame_bytes=19)[0]) == 3
    with pytest.raises(WireError) as info:
        decode_bytes(line * 3, "ndjson", chunk, max_frame_bytes=18)
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 0)


def test_ndjson_endless_line_stops_at_bound() -> None:
    dec = NDJSONDecoder(max_frame_bytes=64)
    dec.feed(b"{" + b" " * 60)
    with pytest.raises(WireError) as info:
        dec.feed(b"    ")
    assert info.value.code == "frame_byte_limit"


def test_ndjson_frame_count_limit() -> None:
    data = b"1\n2\n3"
    assert len(decode_bytes(data, "ndjson", max_frames=3)[0]) == 3
    with pytest.raises(WireError) as info:
        decode_bytes(data, "ndjson", max_frames=2)
    assert (info.value.code, info.value.offset) == ("frame_count_limit", 4)


def test_chunks_lines_become_data_only_events() -> None:
    data = b'{"a":1}\r\n\n{"b":2}\n[DONE]'
    frames, trunc = all_splits(data, "chunks")
    assert frames == [
        SSEEvent(0, 9, "message", '{"a":1}', None, None, False),
        SSEEvent(10, 8, "message", '{"b":2}', None, None, False),
        SSEEvent(18, 6, "message", "[DONE]", None, None, False),
    ]
    assert trunc is None


def test_chunks_cut_last_line_is_truncation() -> None:
    frames, trunc = all_splits(b'{"a":1}\n{"b":', "chunks")
    assert len(frames) == 1 and trunc == Truncation(8, 5, "truncated_frame")


def test_empty_input_is_clean() -> None:
    assert decode_bytes(b"", "ndjson") == ([], None)
    assert decode_bytes(b"", "chunks") == ([], None)
