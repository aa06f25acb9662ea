"""Every real capture in fixtures/real decodes, with exact frame counts, for any chunking.

Counts were computed once and cross-checked against independent decoders where one is
installed (httpx-sse for SSE, botocore for the AWS event stream, ``json`` for arrays and
lines); those cross-checks skip cleanly when the optional packages are absent (CI
installs only ``.[test]``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tracestore.errors import WireError
from tracestore.wire import (EventStreamMessage, SSEEvent, TextFrame, decode_bytes,
                             detect_framing, framing_for_path)

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"

#: Exact frame counts per capture (relative path -> count).
COUNTS: dict[str, int] = {
    "anthropic/code-execution-emoji.sse": 35,
    "anthropic/redacted-thinking.sse": 27,
    "anthropic/stop-sequence.sse": 10,
    "anthropic/text-basic.sse": 7,
    "anthropic/thinking-signature.sse": 118,
    "anthropic/thinking-then-tool-use.sse": 13,
    "anthropic/web-search-citations.sse": 120,
    "aws-eventstream-vectors/botocore-all-header-types.bin": 1,
    "aws-eventstream-vectors/smithy-exception-frame.bin": 1,
    "aws-eventstream-vectors/smithy-unmodeled-error-frame.bin": 1,
    "bedrock/claude-3-7-redacted-thinking.bin": 18,
    "bedrock/claude-citations.bin": 18,
    "bedrock/claude-sonnet-4-thinking.bin": 25,
    "bedrock/claude-tool-use.bin": 11,
    "bedrock/gpt-oss-empty-text-delta.bin": 10,
    "bedrock/nova-micro-text.bin": 33,
    "gemini/jsonarray-function-call-finish-message.json": 2,
    "gemini/jsonarray-function-call-thought-signature.json": 2,
    "gemini/jsonarray-thinking-text.json": 3,
    "gemini/sse-function-call-thought-signature.sse": 2,
    "gemini/sse-text.sse": 3,
    "gemini/sse-thinking.sse": 23,
    "ollama/generate-granite-text.ndjson": 64,
    "ollama/generate-qwen3-think-tags.ndjson": 186,
    "openai-chat/deepseek-reasoning-content.sse": 212,
    "openai-chat/groq-error-event-after-200.sse": 95,
    "openai-chat/openrouter-error-chunk-finish-length.sse": 5,
    "openai-chat/text-usage-moderation-gpt-5.sse": 7,
    "openai-chat/tool-call-include-usage-gpt-4o-mini.sse": 9,
    "openai-responses/background-queued.sse": 17,
    "openai-responses/error-insufficient-quota.chunks.txt": 4,
    "openai-responses/function-call-gpt-4o.sse": 11,
    "openai-responses/openrouter-data-only-with-done.sse": 41,
    "openai-responses/reasoning-summary-o3-mini.sse": 676,
    "openai-responses/text-gpt-4o.sse": 15,
    "openai-responses/text-then-function-call-gpt-5.5.sse": 33,
    "xai/chat-reasoning-text.chunks.txt": 344,
    "xai/chat-reasoning-tool-call.chunks.txt": 230,
}
CORRUPTED = "aws-eventstream-vectors/botocore-corrupted-payload.bin"
SUFFIX_FRAMING = {".sse": "sse", ".ndjson": "ndjson", ".json": "json-array",
                  ".bin": "aws-eventstream"}


def framing_of(name: str) -> str:
    return "chunks" if name.endswith(".chunks.txt") else SUFFIX_FRAMING[Path(name).suffix]


def vars_of(frame: object) -> dict[str, object]:
    return {name: getattr(frame, name) for name in frame.__slots__}  # type: ignore[attr-defined]


def read(name: str) -> bytes:
    return (REAL / name).read_bytes()


def test_every_capture_is_listed() -> None:
    on_disk = {p.relative_to(REAL).as_posix() for p in REAL.rglob("*")
               if p.is_file() and p.name != "PROVENANCE.md"}
    assert on_disk == set(COUNTS) | {CORRUPTED}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_capture_decodes_identically_for_any_chunking(name: str) -> None:
    data = read(name)
    framing = framing_of(name)
    frames, truncation = decode_bytes(data, framing)
    assert len(frames) == COUNTS[name]
    assert truncation is None  # every capture ends at a provider terminal
    for chunk in (1, 7, 13, 4096):
        assert decode_bytes(data, framing, chunk) == (frames, truncation), chunk
    # Offsets and lengths point back at the exact bytes, in order, without overlap.
    end = 0
    for frame in frames:
        assert frame.offset >= end and frame.length > 0
        end = frame.offset + frame.length
        assert end <= len(data)
        if framing == "json-array":
            assert isinstance(frame, TextFrame)
            assert json.loads(data[frame.offset:end]) == json.loads(frame.text)
        else:
            # The frame's own bytes decode, alone, to the very same frame content.
            (again,), _ = decode_bytes(data[frame.offset:end], framing)
            assert again.__class__ is frame.__class__
            assert {k: v for k, v in vars_of(again).items() if k != "offset"} == \
                {k: v for k, v in vars_of(frame).items() if k != "offset"}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_framing_detection(name: str) -> None:
    data = read(name)
    assert framing_for_path(name, data[:4096]) == framing_of(name)
    expected = "ndjson" if framing_of(name) == "chunks" else framing_of(name)
    assert detect_framing(data[:4096]) == expected


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_corrupted_payload_vector(chunk: int | None) -> None:
    with pytest.raises(WireError) as info:
        decode_bytes(read(CORRUPTED), "aws-eventstream", chunk)
    assert (info.value.code, info.value.offset) == ("message_crc_mismatch", 0)


def test_botocore_all_header_types() -> None:
    (frame,), _ = decode_bytes(read("aws-eventstream-vectors/botocore-all-header-types.bin"),
                               "aws-eventstream")
    assert isinstance(frame, EventStreamMessage)
    assert frame.headers == {
        "0": True, "1": False, "2": 2, "3": 3, "4": 4, "5": 5, "6": b"bytes", "7": "utf8",
        "8": 8, "9": uuid.UUID(bytes=b"0123456789abcdef"),
    }
    assert frame.payload == b""


def test_smithy_exception_frame() -> None:
    (frame,), _ = decode_bytes(read("aws-eventstream-vectors/smithy-exception-frame.bin"),
                               "aws-eventstream")
    assert isinstance(frame, EventStreamMessage)
    assert frame.message_type == "exception"
    assert frame.exception_type == "error"
    assert frame.content_type == "application/json"
    assert json.loads(frame.payload) == {"message": "foo"}


def test_smithy_unmodeled_error_frame() -> None:
    (frame,), _ = decode_bytes(read("aws-eventstream-vectors/smithy-unmodeled-error-frame.bin"),
                               "aws-eventstream")
    assert isinstance(frame, EventStreamMessage)
    assert frame.message_type == "error"
    assert frame.error_code == "internal-error"
    assert frame.error_message and frame.payload == b""


def test_bedrock_frames_are_events_ending_with_metadata() -> None:
    for name in COUNTS:
        if name.startswith("bedrock/"):
            frames, _ = decode_bytes(read(name), "aws-eventstream")
            assert all(isinstance(f, EventStreamMessage) and f.message_type == "event"
                       for f in frames)
            assert [f.event_type for f in frames[-2:]] == ["messageStop", "metadata"]


def test_emoji_capture_keeps_raw_utf8() -> None:
    frames, _ = decode_bytes(read("anthropic/code-execution-emoji.sse"), "sse", 1)
    assert any("\u2705" in f.data for f in frames if isinstance(f, SSEEvent))


@pytest.mark.parametrize("name", [n for n in sorted(COUNTS) if framing_of(n) == "sse"])
def test_sse_matches_httpx_sse(name: str) -> None:
    decoders = pytest.importorskip("httpx_sse._decoders")
    lines = decoders.SSELineDecoder()
    reference = decoders.SSEDecoder()
    theirs = []
    for line in lines.decode(read(name).decode("utf-8")) + lines.flush():
        event = reference.decode(line)
        if event is not None:
            theirs.append((event.event or "message", event.data, event.id, event.retry))
    frames, _ = decode_bytes(read(name), "sse")
    ours = [(f.event, f.data, f.id or "", f.retry) for f in frames if isinstance(f, SSEEvent)]
    assert ours == theirs


@pytest.mark.parametrize("name", [n for n in sorted(COUNTS) if n.endswith(".bin")])
def test_eventstream_matches_botocore(name: str) -> None:
    eventstream = pytest.importorskip("botocore.eventstream")
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(read(name))
    theirs = [(m.headers, m.payload) for m in buffer]
    frames, _ = decode_bytes(read(name), "aws-eventstream")
    ours = []
    for f in frames:
        assert isinstance(f, EventStreamMessage)
        # botocore keeps UUID headers as raw bytes; we give uuid.UUID.
        ours.append(({k: v.bytes if isinstance(v, uuid.UUID) else v
                      for k, v in f.headers.items()}, f.payload))
    assert ours == theirs


def test_botocore_rejects_corrupted_vector_too() -> None:
    eventstream = pytest.importorskip("botocore.eventstream")
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(read(CORRUPTED))
    with pytest.raises(eventstream.ChecksumMismatch):
        list(buffer)


@pytest.mark.parametrize("name", [n for n in sorted(COUNTS)
                                  if framing_of(n) in ("ndjson", "chunks", "json-array")])
def test_text_framings_match_json(name: str) -> None:
    data = read(name)
    frames, _ = decode_bytes(data, framing_of(name))
    texts = [f.text if isinstance(f, TextFrame) else f.data for f in frames
             if isinstance(f, (TextFrame, SSEEvent))]
    if framing_of(name) == "json-array":
        assert [json.loads(t) for t in texts] == json.loads(data)
    else:
        assert texts == [line.rstrip("\r") for line in data.decode().split("\n") if line.strip()]
