"""Property tests: chunk boundaries never matter, and garbage only ever raises WireError."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracestore.errors import WireError
from tracestore.wire import FRAMINGS, SSEEvent, TextFrame, decode_bytes, make_decoder

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SUFFIX_FRAMING = {".sse": "sse", ".ndjson": "ndjson", ".json": "json-array",
                  ".bin": "aws-eventstream"}
CAPTURES = sorted(
    (p.relative_to(REAL).as_posix(),
     "chunks" if p.name.endswith(".chunks.txt") else SUFFIX_FRAMING[p.suffix])
    for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")
DATA = {name: (REAL / name).read_bytes() for name, _ in CAPTURES}

# Small bounds in some runs so the limit paths are exercised by random input too.
BOUNDS = st.sampled_from([{}, {"max_frame_bytes": 64}, {"max_frames": 3},
                          {"max_frame_bytes": 300, "max_frames": 50}])
FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outcome(data: bytes, framing: str, cuts: list[int], **bounds: int) -> object:
    """Decode with the given cut points; the frames and truncation, or the error."""
    decoder = make_decoder(framing, **bounds)
    frames = []
    try:
        previous = 0
        for cut in sorted(set(cuts)) + [len(data)]:
            frames.extend(decoder.feed(data[previous:cut]))
            previous = cut
        frames.extend(decoder.close())
    except WireError as exc:
        return ("error", exc.code, exc.offset)
    return (frames, decoder.truncation)


def cut_points(size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=size), max_size=40)


@FAST
@given(st.data())
def test_random_boundaries_on_real_captures(data: st.DataObject) -> None:
    name, framing = data.draw(st.sampled_from(CAPTURES))
    raw = DATA[name]
    cuts = data.draw(cut_points(len(raw)))
    assert outcome(raw, framing, cuts) == outcome(raw, framing, [])


@FAST
@given(st.data(), BOUNDS)
def test_mutated_captures_raise_only_wire_errors_identically(data: st.DataObject,
                                                             bounds: dict[str, int]) -> None:
    name, framing = data.draw(st.sampled_from(CAPTURES))
    raw = bytearray(DATA[name][:3000])
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        byte = data.draw(st.integers(0, 255))
        if action == "flip" and raw:
            raw[at] = byte
        elif action == "insert":
            raw[at:at] = bytes([byte])
        elif raw:
            del raw[at]
    mutated = bytes(raw)
    framing = data.draw(st.sampled_from([framing, *FRAMINGS]))
    whole = outcome(mutated, framing, [], **bounds)  # anything but WireError propagates
    cuts = data.draw(cut_points(len(mutated)))
    assert outcome(mutated, framing, cuts, **bounds) == whole


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=600), st.sampled_from(FRAMINGS), BOUNDS, st.data())
def test_random_bytes_raise_only_wire_errors(raw: bytes, framing: str,
                                             bounds: dict[str, int],
                                             data: st.DataObject) -> None:
    whole = outcome(raw, framing, [], **bounds)
    assert outcome(raw, framing, data.draw(cut_points(len(raw))), **bounds) == whole


FIELD_NAMES = st.sampled_from(["data", "event", "id", "retry", "x", ""])
SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",),
                                  blacklist_characters="\r\n"), max_size=12)
LINE = st.one_of(
    st.tuples(FIELD_NAMES, st.sampled_from([": ", ":", ""]), SAFE_TEXT).map(
        lambda t: t[0] + (t[1] if t[1] or not t[2] else ":") + t[2]),
    SAFE_TEXT.map(lambda s: ":" + s),
    st.just(""),
)


@FAST
@given(st.lists(LINE, max_size=25), st.data())
def test_sse_line_endings_do_not_change_events(lines: list[str], data: st.DataObject) -> None:
    text = "".join(line + "\n" for line in lines)
    reference = outcome(text.encode(), "sse", [])
    endings = data.draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]),
                                 min_size=len(lines), max_size=len(lines)))
    for i in range(1, len(lines)):
        # CR then an empty line ended by LF would *be* one CRLF: keep them two line ends.
        if endings[i - 1] == "\r" and not lines[i] and endings[i] == "\n":
            endings[i] = "\r\n"
    mixed = "".join(line + eol for line, eol in zip(lines, endings)).encode()
    result = outcome(mixed, "sse", data.draw(cut_points(len(mixed))))

    def content(result: object) -> object:
        if isinstance(result, tuple) and result and result[0] == "error":
            return result[:2]
        frames, truncation = result  # type: ignore[misc]
        return ([(f.event, f.data, f.id, f.retry, f.event_field_present) for f in frames
                 if isinstance(f, SSEEvent)], truncation is None)

    assert content(result) == content(reference)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=12)
SEPARATORS = st.sampled_from([",", " ,", ",\n", "\n,\r\n", " \t, "])


@FAST
@given(st.lists(JSON_VALUES, max_size=6), st.data())
def test_json_array_elements_round_trip(values: list[object], data: st.DataObject) -> None:
    pretty = data.draw(st.booleans())
    parts = [json.dumps(v, indent=2 if pretty else None, ensure_ascii=data.draw(st.booleans()))
             for v in values]
    separators = [data.draw(SEPARATORS) for _ in parts]
    body = "[" + "".join(p + (s if i < len(parts) - 1 else "") for i, (p, s) in
                         enumerate(zip(parts, separators))) + "\n]"
    raw = body.encode()
    result = outcome(raw, "json-array", data.draw(cut_points(len(raw))))
    assert isinstance(result, tuple) and result[1] is None
    frames = result[0]
    assert [json.loads(f.text) for f in frames if isinstance(f, TextFrame)] == values
    for frame in frames:
        assert raw[frame.offset:frame.offset + frame.length].decode() == frame.text


@FAST
@given(st.lists(JSON_VALUES, max_size=8), st.data())
def test_ndjson_lines_round_trip(values: list[object], data: st.DataObject) -> None:
    eol = data.draw(st.sampled_from(["\n", "\r\n"]))
    raw = "".join(json.dumps(v, ensure_ascii=False) + eol for v in values).encode()
    if data.draw(st.booleans()) and raw:
        raw = raw[:-len(eol)]  # many producers omit the final newline
    frames, truncation = decode_bytes(raw, "ndjson", data.draw(st.sampled_from([None, 1, 5])))
    assert truncation is None
    assert [json.loads(f.text) for f in frames if isinstance(f, TextFrame)] == values
