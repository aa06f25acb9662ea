"""JSONArrayDecoder: elements emitted as they close, strings/escapes, errors, truncation."""

from __future__ import annotations

import json

import pytest

from tracestore.errors import WireError
from tracestore.wire import JSONArrayDecoder, TextFrame, Truncation, decode_bytes


def all_splits(data: bytes, **bounds: int):
    whole = decode_bytes(data, "json-array", **bounds)
    for cut in range(len(data) + 1):
        dec = JSONArrayDecoder(**bounds)
        frames = dec.feed(data[:cut]) + dec.feed(data[cut:]) + dec.close()
        assert (frames, dec.truncation) == whole, cut
    assert decode_bytes(data, "json-array", 1, **bounds) == whole
    return whole


def test_gemini_shape() -> None:
    data = b'[{"a": 1}\n,\r\n{"b": {"c": [1, 2]}}\n]'
    frames, trunc = all_splits(data)
    assert frames == [TextFrame(1, 8, '{"a": 1}'), TextFrame(13, 20, '{"b": {"c": [1, 2]}}')]
    assert trunc is None


def test_brackets_quotes_and_escapes_inside_strings() -> None:
    element = r'{"s": "}]\"{[\\", "t": "\\\\\"", "u": "\u00e9"}'
    data = ("[" + element + "]").encode()
    frames, _ = all_splits(data)
    assert [f.text for f in frames] == [element]
    json.loads(frames[0].text)


def test_any_json_value_as_element() -> None:
    data = b'[ 1 , -2.5e3,true,false,null,"x]", [[]] ,{} ]'
    frames, trunc = all_splits(data)
    assert [f.text for f in frames] == ["1", "-2.5e3", "true", "false", "null", '"x]"',
                                        "[[]]", "{}"]
    assert trunc is None


def test_element_emitted_as_soon_as_it_closes() -> None:
    dec = JSONArrayDecoder()
    assert dec.feed(b'[{"a":') == []
    assert dec.feed(b'1}') == [TextFrame(1, 7, '{"a":1}')]
    assert dec.feed(b',2') == []  # a bare number is only complete at its delimiter
    assert dec.feed(b']') == [TextFrame(9, 1, "2")]
    assert dec.close() == [] and dec.truncation is None


def test_empty_array_and_bom() -> None:
    assert all_splits(b"\xef\xbb\xbf [ \r\n ] \n") == ([], None)


@pytest.mark.parametrize("data, offset", [
    (b"{}", 0),
    (b"[{} {}]", 4),
    (b"[{},]", 4),
    (b"[,{}]", 1),
    (b"[{]", 2),
    (b"[[}]", 2),
    (b"[tru]", 1),
    (b"[1x]", 1),
    (b"[@]", 1),
])
def test_invalid_arrays(data: bytes, offset: int) -> None:
    for chunk in (None, 1):
        with pytest.raises(WireError) as info:
            decode_bytes(data, "json-array", chunk)
        assert (info.value.code, info.value.offset) == ("invalid_json_array", offset)


@pytest.mark.parametrize("chunk", [None, 1])
def test_trailing_data(chunk: int | None) -> None:
    with pytest.raises(WireError) as info:
        decode_bytes(b"[{}] \r\n x", "json-array", chunk)
    assert (info.value.code, info.value.offset) == ("trailing_data", 8)
    assert decode_bytes(b"[{}] \r\n ", "json-array", chunk)[1] is None


def test_missing_close_bracket_is_truncation() -> None:
    assert all_splits(b'[{"a":1},\n') == ([TextFrame(1, 7, '{"a":1}')], Truncation(10, 0,
                                                                                  "truncated_frame"))
    frames, trunc = all_splits(b'[{"a":1},{"b":"x')
    assert trunc == Truncation(9, 7, "truncated_frame")
    assert decode_bytes(b"", "json-array") == ([], Truncation(0, 0, "truncated_frame"))
    assert decode_bytes(b"[12", "json-array")[1] == Truncation(1, 2, "truncated_frame")


def test_truncated_utf8_inside_element() -> None:
    data = '[{"a":"✅'.encode()[:-1]
    assert all_splits(data)[1] == Truncation(1, len(data) - 1, "truncated_utf8")


def test_invalid_utf8_offset() -> None:
    for chunk in (None, 1):
        with pytest.raises(WireError) as info:
            decode_bytes(b'[{"a":"x\xff"}]', "json-array", chunk)
        assert (info.value.code, info.value.offset) == ("invalid_utf8", 8)


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_frame_byte_limit(chunk: int | None) -> None:
    data = b'[{"k":"vvvv"},{"k":"vvvv"}]'  # elements of 12 bytes
    assert len(decode_bytes(data, "json-array", chunk, max_frame_bytes=12)[0]) == 2
    with pytest.raises(WireError) as info:
        decode_bytes(data, "json-array", chunk, max_frame_bytes=11)
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 1)


def test_endless_element_stops_at_bound() -> None:
    dec = JSONArrayDecoder(max_frame_bytes=100)
    dec.feed(b'[{"a":"' + b"x" * 90)
    with pytest.raises(WireError) as info:
        dec.feed(b"x" * 10)
    assert (info.value.code, info.value.offset) == ("frame_byte_limit", 1)


def test_frame_count_limit() -> None:
    assert len(decode_bytes(b"[1,2,3]", "json-array", max_frames=3)[0]) == 3
    with pytest.raises(WireError) as info:
        decode_bytes(b"[1,2,3]", "json-array", max_frames=2)
    assert (info.value.code, info.value.offset) == ("frame_count_limit", 5)
