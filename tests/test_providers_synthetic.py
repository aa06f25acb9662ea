"""Synthetic captures (documented shapes with no real capture) and the AWS protocol vectors.

The Bedrock ``.bin`` files are rebuilt byte for byte with the package's small event-stream
encoder, which is itself checked against the smithy vectors, so how each synthetic file
was made is executable, not just described in ``fixtures/synthetic/README.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracestore.errors import WireError
from tracestore.providers import Observation as O
from tracestore.providers.capture import read_capture
from tracestore.providers.eventstream_encode import event, exception, stream, unmodeled_error, encode_message
from tracestore.providers.summary import summarize

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
SYN = ROOT / "synthetic"
VECTORS = ROOT / "real" / "aws-eventstream-vectors"
T1 = "The public desk opens Wednesday from 09:00 to 17:00 UTC. "


def _read(path: Path, **kwargs: object):
    return read_capture(path.read_bytes(), filename=path.name, **kwargs)


def _kinds(reading) -> list[list[str]]:
    return [[o.kind for o in f.observations] for f in reading.frames]


def test_readme_lists_every_synthetic_file() -> None:
    readme = (SYN / "README.md").read_text(encoding="utf-8")
    files = sorted(str(p.relative_to(SYN)) for p in SYN.glob("*/*"))
    assert files and all(f"`{name}`" in readme for name in files)


# -- encoder ------------------------------------------------------------------------------

def test_encoder_reproduces_smithy_vectors() -> None:
    assert unmodeled_error("internal-error", "An unknown error occurred.") == (
        VECTORS / "smithy-unmodeled-error-frame.bin").read_bytes()
    assert encode_message({":message-type": "exception", ":exception-type": "error",
                           ":content-type": "application/json"}, b'{"message":"foo"}') == (
        VECTORS / "smithy-exception-frame.bin").read_bytes()


def test_bedrock_synthetic_files_are_rebuilt_exactly() -> None:
    assert (SYN / "bedrock/model-stream-error-exception.bin").read_bytes() == stream([
        event("messageStart", {"p": "abcdefgh", "role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": T1}, "p": "abcd"}),
        event("contentBlockStop", {"contentBlockIndex": 0, "p": "abcdefghijk"}),
        exception("modelStreamErrorException", {"message": "Synthetic stream failure",
                                                "originalStatusCode": 500,
                                                "originalMessage": "Synthetic upstream model error"}),
    ])
    assert (SYN / "bedrock/throttling-exception.bin").read_bytes() == stream([
        event("messageStart", {"p": "abc", "role": "assistant"}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "The public desk"},
                                    "p": "abcdefg"}),
        exception("throttlingException",
                  {"message": "Too many requests, please wait before trying again."}),
    ])


# -- synthetic captures -------------------------------------------------------------------

def test_bedrock_model_stream_error() -> None:
    reading = _read(SYN / "bedrock/model-stream-error-exception.bin")
    assert (reading.provider, reading.framing, reading.terminal_seen) == (
        "bedrock-converse-stream", "aws-eventstream", False)
    assert reading.frames[-1].event_name == "modelStreamErrorException"
    assert reading.frames[-1].native == {"modelStreamErrorException": {
        "message": "Synthetic stream failure", "originalStatusCode": 500,
        "originalMessage": "Synthetic upstream model error"}}
    assert [list(f.observations) for f in reading.frames] == [
        [O("message_start", "messageStart")],
        [O("text_delta", "contentBlockDelta", block=0, text=T1)],
        [O("block_stop", "contentBlockStop", block=0, block_type="text")],
        [O("error", "modelStreamErrorException", error_code="modelStreamErrorException",
           message="Synthetic stream failure")],
    ]


def test_bedrock_throttling() -> None:
    reading = _read(SYN / "bedrock/throttling-exception.bin")
    assert _kinds(reading) == [["message_start"], ["text_delta"], ["error"]]
    assert reading.frames[-1].observations == (
        O("error", "throttlingException", error_code="throttlingException",
          message="Too many requests, please wait before trying again."),)
    assert not reading.terminal_seen


def test_anthropic_overloaded_after_200() -> None:
    reading = _read(SYN / "anthropic/overloaded-error-after-200.sse")
    assert (reading.provider, reading.terminal_seen) == ("anthropic-messages", False)
    assert _kinds(reading) == [["message_start", "usage"], ["block_start"], ["keepalive"],
                               ["text_delta"], ["error"]]
    assert reading.frames[-1].event_name == "error"
    assert reading.frames[-1].observations == (
        O("error", "error", error_code="overloaded_error", message="Overloaded"),)


def test_openai_incomplete_max_output_tokens() -> None:
    reading = _read(SYN / "openai-responses/incomplete-max-output-tokens.sse")
    assert reading.provider == "openai-responses" and reading.terminal_seen
    text = "The public desk opens Wednesday from 09:00"
    assert list(reading.frames[-1].observations) == [
        O("final_text", "response.incomplete", block=0, text=text, sequence=9),
        O("usage", "response.incomplete", usage={
            "input_tokens": 40, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 16,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 56}, sequence=9),
        O("terminal", "response.incomplete", stop_reason="max_output_tokens", status="incomplete",
          sequence=9),
    ]
    assert summarize(reading.observations).text == text
    assert [o.sequence for f in reading.frames for o in f.observations[:1]] == list(range(10))


def test_gemini_max_tokens() -> None:
    reading = _read(SYN / "gemini/sse-max-tokens.sse")
    assert (reading.provider, reading.framing) == ("gemini", "sse")
    summary = summarize(reading.observations)
    assert summary.text == "The public desk opens Wednesday from"
    assert summary.terminal == O("terminal", "finishReason", block=0, stop_reason="MAX_TOKENS")
    assert _kinds(reading) == [["text_delta", "usage"], ["text_delta", "usage", "terminal"]]


def test_gemini_safety_with_empty_candidate() -> None:
    reading = _read(SYN / "gemini/sse-safety.sse")
    assert list(reading.frames[-1].observations) == [
        O("usage", "usageMetadata", usage={"promptTokenCount": 12, "candidatesTokenCount": 2,
                                            "totalTokenCount": 14}),
        O("terminal", "finishReason", block=0, stop_reason="SAFETY"),
    ]
    assert summarize(reading.observations).text == "Here is"


@pytest.mark.parametrize("name", ["bedrock/model-stream-error-exception.bin",
                                  "anthropic/overloaded-error-after-200.sse",
                                  "openai-responses/incomplete-max-output-tokens.sse",
                                  "gemini/sse-safety.sse"])
@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_synthetic_chunking_invariant(name: str, chunk: int) -> None:
    assert _read(SYN / name, chunk_size=chunk) == _read(SYN / name)


# -- AWS protocol vectors -----------------------------------------------------------------

def test_smithy_exception_frame_is_an_error_member() -> None:
    reading = _read(VECTORS / "smithy-exception-frame.bin")
    assert reading.provider == "bedrock-converse-stream"
    (frame,) = reading.frames
    assert frame.native == {"error": {"message": "foo"}}
    assert frame.observations == (O("error", "error", error_code="error", message="foo"),)


def test_smithy_unmodeled_error_frame() -> None:
    (frame,) = _read(VECTORS / "smithy-unmodeled-error-frame.bin").frames
    assert frame.native == {"error": {"code": "internal-error",
                                      "message": "An unknown error occurred."}}
    assert frame.observations == (O("error", "error", error_code="internal-error",
                                     message="An unknown error occurred."),)


def test_botocore_vectors_are_refused() -> None:
    with pytest.raises(WireError) as info:
        _read(VECTORS / "botocore-all-header-types.bin")  # no :message-type header
    assert info.value.code == "unknown_message_type" and info.value.offset == 0
    with pytest.raises(WireError) as info:
        _read(VECTORS / "botocore-corrupted-payload.bin")
    assert info.value.code == "message_crc_mismatch"
