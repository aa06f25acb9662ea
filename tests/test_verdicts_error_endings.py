"""Issue 11, item 6: a capture that ends with a native error frame records what the bytes
show — the error was the provider's last word (a terminal of its own), so the drain is
clean and names it, never ``eof — input ended before the native terminal``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracestore.ingest import capture_drain, plan_ingest
from tracestore.providers.app_frames import binding_digest
from tracestore.providers.capture import read_capture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BINDING = binding_digest({"request": "r1"})


def drain_of(relative: str) -> tuple[str, str | None]:
    path = FIXTURES / relative
    return capture_drain(read_capture(path.read_bytes(), filename=path.name))


@pytest.mark.parametrize("capture, detail", [
    ("synthetic/anthropic/overloaded-error-after-200.sse",
     "input ended after the native error frame overloaded_error (frame 4 at byte "),
    ("synthetic/bedrock/model-stream-error-exception.bin",
     "input ended after the native error frame modelStreamErrorException (frame 3 at byte "),
    ("synthetic/bedrock/throttling-exception.bin",
     "input ended after the native error frame throttlingException (frame 2 at byte "),
    ("real/openai-chat/groq-error-event-after-200.sse",
     "input ended after the native error frame tool_use_failed (frame "),
])
def test_an_error_frame_ending_is_recorded_as_such(capture: str, detail: str) -> None:
    outcome, text = drain_of(capture)
    assert outcome == "clean"
    assert text is not None and text.startswith(detail), text


def _frames(*frames: dict[str, object]) -> bytes:
    lines = [json.dumps({"sequence": i + 1, "binding_sha256": BINDING, **f})
             for i, f in enumerate(frames)]
    return ("\n".join(lines) + "\n").encode()


def test_an_app_frames_error_frame_is_a_terminal_of_its_own() -> None:
    data = _frames({"kind": "content_delta", "text": "Hel"},
                   {"kind": "error", "reason": "upstream_timeout"})
    plan = plan_ingest(data, filename="frames.ndjson", attempt_id="a")
    assert (plan.api, plan.drain) == ("app-frames", "clean")
    drained = plan.events[-1].event
    second_line = data.index(b"\n") + 1
    assert drained.detail == ("input ended after the native error frame upstream_timeout "
                              f"(frame 1 at byte {second_line})")


@pytest.mark.parametrize("data", [
    _frames({"kind": "content_delta", "text": "Hel"}),  # no terminal at all
    # a delta flagged sequence_gap ends with a text delta, not an error frame
    _frames({"kind": "content_delta", "text": "Hel"})
    + json.dumps({"sequence": 5, "kind": "content_delta", "binding_sha256": BINDING,
                  "text": "lo"}).encode() + b"\n",
])
def test_input_without_terminal_or_error_frame_is_still_eof(data: bytes) -> None:
    plan = plan_ingest(data, filename="frames.ndjson", attempt_id="a")
    assert plan.drain == "eof"
    assert plan.events[-1].event.detail == "input ended before the native terminal"


def test_an_error_frame_cut_short_is_eof_inside_a_frame() -> None:
    data = (FIXTURES / "synthetic/anthropic/overloaded-error-after-200.sse").read_bytes()
    outcome, text = capture_drain(read_capture(data[:-20], filename="x.sse"))
    assert outcome == "eof" and text is not None and "ended inside a frame" in text
