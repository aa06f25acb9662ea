"""Issue 14, item 5: a feed that fails keeps what it completed.

When one ``feed()`` call raises, the frames completed earlier in that same call are still
delivered -- on the error, as ``WireError.frames`` -- and the error keeps its absolute
offset.  botocore behaves this way for the AWS event stream (it yields the good message
before raising on the corrupted one); SSE and NDJSON do the same here.
"""

from __future__ import annotations

import pytest

from tracestore.errors import WireError
from tracestore.providers import eventstream_encode as es
from tracestore.wire import decode_bytes, make_decoder


def _fail(framing: str, data: bytes) -> WireError:
    decoder = make_decoder(framing)
    with pytest.raises(WireError) as raised:
        decoder.feed(data)
    with pytest.raises(WireError) as again:  # poisoned: the same error, frames and all
        decoder.feed(b"")
    assert again.value is raised.value
    return raised.value


def test_sse_delivers_the_events_before_a_bad_byte() -> None:
    good = b"data: a\n\nevent: e\ndata: b\n\n"
    error = _fail("sse", good + b"data: \xff\n\n")
    assert [(f.event, f.data) for f in error.frames] == [("message", "a"), ("e", "b")]
    assert (error.code, error.offset) == ("invalid_utf8", len(good) + 6)


def test_sse_delivers_the_events_before_an_oversized_block() -> None:
    decoder = make_decoder("sse", max_frame_bytes=50)
    good = b"data: a\r\n\r\n"
    with pytest.raises(WireError) as raised:
        decoder.feed(good + b"data: " + b"x" * 100 + b"\r\n\r\n")
    assert [f.data for f in raised.value.frames] == ["a"]
    assert (raised.value.code, raised.value.offset) == ("frame_byte_limit", len(good))


def test_ndjson_delivers_the_lines_before_a_bad_line() -> None:
    good = b'{"a":1}\n\n{"b":2}\r\n'
    error = _fail("ndjson", good + b'{"c":"\xfe"}\n{"d":4}\n')
    assert [f.text for f in error.frames] == ['{"a":1}', '{"b":2}']
    assert (error.code, error.offset) == ("invalid_utf8", len(good) + 6)


def test_event_stream_delivers_the_messages_before_a_corrupted_one() -> None:
    first = es.event("messageStart", {"role": "assistant"})
    second = es.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}})
    third = bytearray(es.event("messageStop", {"stopReason": "end_turn"}))
    third[-6] ^= 0x01  # a payload byte: the message CRC no longer matches
    error = _fail("aws-eventstream", first + second + bytes(third))
    assert [f.event_type for f in error.frames] == ["messageStart", "contentBlockDelta"]
    assert error.offset == len(first) + len(second)


def test_botocore_yields_the_same_good_messages_first() -> None:
    from botocore.eventstream import EventStreamBuffer
    from botocore.eventstream import ChecksumMismatch

    first = es.event("messageStart", {"role": "assistant"})
    second = bytearray(es.event("messageStop", {"stopReason": "end_turn"}))
    second[-6] ^= 0x01
    buffer = EventStreamBuffer()
    buffer.add_data(first + bytes(second))
    got = []
    with pytest.raises(ChecksumMismatch):
        for message in buffer:
            got.append(message.headers[":event-type"])
    error = _fail("aws-eventstream", first + bytes(second))
    assert [f.event_type for f in error.frames] == got == ["messageStart"]


@pytest.mark.parametrize("chunk", [None, 1, 5, 64])
def test_whole_buffer_decoding_delivers_every_frame_before_the_error(chunk: int | None) -> None:
    good = b"data: a\n\ndata: b\n\n"
    with pytest.raises(WireError) as raised:
        decode_bytes(good + b"data: \xff\n\n", "sse", chunk_size=chunk)
    assert [f.data for f in raised.value.frames] == ["a", "b"]
    assert raised.value.offset == len(good) + 6


def test_a_clean_error_without_earlier_frames_has_none() -> None:
    error = _fail("ndjson", b"\xff\n")
    assert (error.frames, error.offset) == ([], 0)
