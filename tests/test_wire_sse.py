"""SSEDecoder: WHATWG event-stream rules, chunk boundaries, truncation, UTF-8 and bounds."""

from __future__ import annotations

import pytest

from tracestore.errors import WireError
from tracestore.wire import SSEDecoder, SSEEvent, Truncation, decode_bytes
from tracestore.wire.limits import MAX_FRAME_BYTES, MAX_FRAMES_PER_CAPTURE


def sse(data: bytes, chunk_size: int | None = None, **bounds: int):
    return decode_bytes(data, "sse", chunk_size, **bounds)


def every_split(data: bytes, **bounds: int):
    """Decode with every single split point and with 1-byte chunks; all must agree."""
    whole = sse(data, **bounds)
    for cut in range(len(data) + 1):
        dec = SSEDecoder(**bounds)
        frames = dec.feed(data[:cut]) + dec.feed(data[cut:]) + dec.close()
        assert (frames, dec.truncation) == whole, cut
    assert sse(data, 1, **bounds) == whole
    return whole


def test_basic_event_with_offsets() -> None:
    data = b"event: ping\ndata: {\"a\":1}\n\ndata: two\n\n"
    frames, trunc = every_split(data)
    assert trunc is None
    assert frames == [
        SSEEvent(0, 27, "ping", '{"a":1}', None, None, True),
        SSEEvent(27, 11, "message", "two", None, None, False),
    ]
    for f in frames:
        assert data[f.offset:f.offset + f.length].endswith(b"\n\n")


def test_multiline_data_joined_with_newline() -> None:
    frames, _ = every_split(b"data: a\ndata:b\ndata\ndata:  c\n\n")
    assert [f.data for f in frames] == ["a\nb\n\n c"]


def test_field_without_colon_and_single_space_rule() -> None:
    frames, _ = every_split(b"event\ndata\n\nevent:x\ndata:  two spaces\n\n")
    assert frames[0].event == "message" and frames[0].event_field_present
    assert frames[0].data == ""
    assert frames[1].event == "x" and frames[1].data == " two spaces"


def test_event_without_data_is_not_dispatched() -> None:
    frames, trunc = every_split(b"event: ping\n\n: only a comment\n\ndata: x\n\n")
    assert [(f.event, f.data) for f in frames] == [("message", "x")]
    assert trunc is None


def test_empty_data_field_is_dispatched() -> None:
    frames, _ = every_split(b"data:\n\n")
    assert frames == [SSEEvent(0, 7, "message", "", None, None, False)]


def test_event_type_resets_between_events() -> None:
    frames, _ = every_split(b"event: a\ndata: 1\n\ndata: 2\n\n")
    assert [f.event for f in frames] == ["a", "message"]


def test_comments_counted_not_dispatched() -> None:
    dec = SSEDecoder()
    frames = dec.feed(b": OPENROUTER PROCESSING\n\n: keep-alive\ndata: x\n\n") + dec.close()
    assert dec.comments == 2
    # A comment inside a block belongs to that block's bytes.
    assert frames == [SSEEvent(25, 22, "message", "x", None, None, False)]


def test_unknown_fields_ignored() -> None:
    frames, _ = every_split(b"foo: bar\ndata: x\nbaz\n\n")
    assert frames == [SSEEvent(0, 22, "message", "x", None, None, False)]


def test_id_persists_and_nul_ids_are_ignored() -> None:
    data = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid\ndata: d\n\n"
    frames, _ = every_split(data)
    assert [f.id for f in frames] == ["1", "1", "1", ""]


def test_retry_digits_only() -> None:
    dec = SSEDecoder()
    data = b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: -1\ndata: c\n\n" \
           b"retry:\ndata: d\n\nretry: \xd9\xa5\ndata: e\n\n"
    frames = dec.feed(data) + dec.close()
    assert [f.retry for f in frames] == [1500, None, None, None, None]
    assert dec.reconnection_time == 1500


def test_retry_absurdly_long_is_ignored() -> None:
    frames, _ = sse(b"retry: " + b"9" * 5000 + b"\ndata: a\n\n")
    assert frames[0].retry is None


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    data = eol.join([b"event: e", b"data: 1", b"data: 2", b"", b"data: 3", b"", b""])
    frames, trunc = every_split(data)
    assert [(f.event, f.data) for f in frames] == [("e", "1\n2"), ("message", "3")]
    assert trunc is None
    assert frames[1].offset + frames[1].length == len(data)


def test_mixed_line_endings() -> None:
    data = b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r"
    frames, trunc = every_split(data)
    assert [f.data for f in frames] == ["a\nb\nc", "d"]
    assert frames[0].length == 27 and frames[1].offset == 27
    assert trunc is None


def test_cr_at_chunk_end_then_lf_is_one_line_end() -> None:
    dec = SSEDecoder()
    out = dec.feed(b"data: x\r")
    out += dec.feed(b"\n\r")
    out += dec.feed(b"\n")
    out += dec.close()
    assert out == [SSEEvent(0, 11, "message", "x", None, None, False)]
    assert dec.truncation is None


def test_trailing_cr_at_close_is_a_line_end() -> None:
    frames, trunc = every_split(b"data: x\r\r")
    assert frames == [SSEEvent(0, 9, "message", "x", None, None, False)]
    assert trunc is None


def test_bom_stripped_once() -> None:
    data = b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n"
    frames, _ = every_split(data)
    assert frames[0] == SSEEvent(3, 9, "message", "a", None, None, False)
    # A second BOM is not stripped: it makes an unknown field name, ignored.
    assert len(frames) == 1


def test_non_ascii_offsets_are_bytes() -> None:
    data = "data: ✅ é\n\ndata: 日本\n\n".encode()
    frames, _ = every_split(data)
    assert [f.data for f in frames] == ["✅ é", "日本"]
    assert frames[1].offset == len("data: ✅ é\n\n".encode())


def test_unterminated_event_is_discarded_and_reported() -> None:
    frames, trunc = every_split(b"data: a\n\ndata: b\n")
    assert [f.data for f in frames] == ["a"]
    assert trunc == Truncation(9, 8, "truncated_frame")


def test_partial_line_is_reported() -> None:
    frames, trunc = every_split(b"data: a\n\nevent: x\ndata: {\"par")
    assert [f.data for f in frames] == ["a"]
    assert trunc == Truncation(9, 20, "truncated_frame")


def test_trailing_comment_only_block_is_clean() -> None:
    assert every_split(b"data: a\n\n: bye\n")[1] is None
    assert sse(b"")[1] is None and sse(b"\n\n\n")[1] is None


def test_truncated_utf8_at_end() -> None:
    data = "data: a\n\ndata: ✅".encode()[:-1]
    frames, trunc = every_split(data)
    assert [f.data for f in frames] == ["a"]
    assert trunc == Truncation(9, len(data) - 9, "truncated_utf8")


def test_bom_prefix_only_is_truncated_utf8() -> None:
    assert sse(b"\xef\xbb") == ([], Truncation(0, 2, "truncated_utf8"))


@pytest.mark.parametrize("chunk", [None, 1, 3, 7])
@pytest.mark.parametrize("data, bad", [
    (b"data: ok\n\ndata: a\xffb\n\n", 17),
    (b"data: ok\n\nevent: \xc3(\ndata: x\n\n", 17),
    (b": \x80 comment\n\n", 2),
    (b"data: ok\n\nid: \xed\xa0\x80\ndata: x\n\n", 14),  # an encoded surrogate
    (b"data: ok\n\ndata: \xe2\x9c\n\n", 16),  # truncated char followed by a line end
    (b"data: ok\r\n\r\ndata: x\r\ndata: \xf0\x28\r\n\r\n", 27),
])
def test_invalid_utf8_reports_exact_offset(data: bytes, bad: int, chunk: int | None) -> None:
    with pytest.raises(WireError) as info:
        sse(data, chunk)
    assert info.value.code == "invalid_utf8"
    assert info.value.offset == bad


def test_invalid_utf8_in_discarded_partial_line_at_close() -> None:
    with pytest.raises(WireError) as info:
        sse(b"data: a\n\ndata: \xff")
    assert (info.value.code, info.value.offset) == ("invalid_utf8", 15)


def test_error_poisons_decoder() -> None:
    dec = SSEDecoder()
    with pytest.raises(WireError):
        dec.feed(b"data: \xff\n\n")
    with pytest.raises(WireError) as info:
        dec.feed(b"data: fine\n\n")
    assert info.value.code == "invalid_utf8"


def test_feed_after_close_refused() -> None:
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(WireError) as info:
        dec.feed(b"data: x\n\n")
    assert info.value.code == "decoder_closed"


def test_default_bounds() -> None:
    dec = SSEDecoder()
    assert (dec.max_frame_bytes, dec.max_frames) == (MAX_FRAME_BYTES, MAX_FRAMES_PER_CAPTURE)
    assert MAX_FRAME_BYTES == 8 * 1024 * 1024 and MAX_FRAMES_PER_CAPTURE == 1_000_000


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_frame_byte_limit_exact_and_one_over(chunk: int | None) -> None:
    event = b"event: e\ndata: " + b"x" * 20 + b"\n\n"
    frames, _ = sse(event * 2, chunk, max_frame_bytes=len(event))
    assert len(frames) == 2
    with pytest.raises(WireError) as info:
        sse(event * 2, chunk, max_frame_bytes=len(event) - 1)
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 0)


def test_frame_byte_limit_counts_crlf_and_held_cr() -> None:
    event = b"data: abc\r\r"  # 11 bytes, the final CR held until close
    assert len(sse(event, 1, max_frame_bytes=11)[0]) == 1
    with pytest.raises(WireError):
        sse(event, 1, max_frame_bytes=10)


def test_frame_byte_limit_stops_endless_line_early() -> None:
    dec = SSEDecoder(max_frame_bytes=1024)
    dec.feed(b"data: ok\n\n")
    dec.feed(b"data: " + b"y" * 1000)
    with pytest.raises(WireError) as info:
        dec.feed(b"y" * 100)  # no line end yet: the partial line alone passes the bound
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 10)


def test_frame_count_limit_exact_and_one_over() -> None:
    data = b"data: x\n\n" * 3
    assert len(sse(data, max_frames=3)[0]) == 3
    with pytest.raises(WireError) as info:
        sse(data, 2, max_frames=2)
    assert (info.value.code, info.value.offset) == ("frame_count_limit", 18)


def test_invalid_bounds_rejected() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_frame_bytes=0)


@pytest.mark.parametrize("body", [b'data: {"x": 1}\n\ndata: {"y": 2}',
                                  b'data: {"x": 1}\n\ndata: {"y": 2}\n',
                                  b'data: {"x": 1}\r\n\r\nevent: e\r\ndata: {"y": 2}\r\n'])
@pytest.mark.parametrize("sdk", ["anthropic._streaming", "openai._streaming"])
def test_an_event_without_its_blank_line_at_close_is_discarded_as_the_sdks_do(
        body: bytes, sdk: str) -> None:
    """WHATWG: "If the file ends in the middle of an event, before the final empty line,
    the incomplete event is not dispatched."  The official SDKs' decoders agree (seed 002
    says a parser flushes it; none of these does): tracestore reports it as truncation."""
    module = pytest.importorskip(sdk)
    theirs = [event.data for event in module.SSEDecoder().iter_bytes(iter([body]))]
    frames, truncation = sse(body)
    assert [f.data for f in frames] == theirs == ['{"x": 1}']
    assert truncation is not None
