"""Issue 19: every body of fixtures/wild/ (1,014 public recordings tracestore was not tuned to)
through ``ingest --provider auto`` + ``release`` under an accept-any-text rule, in-process.

Asserted for the whole corpus at once (module-scoped, ~2 s): no internal error (each body is
decoded or refused with a typed code), no body released whose frames carry reasoning or tool
calls, no label contradicting the body's ``index.jsonl`` vendor/api; and, where the official
SDK decoders are importable, tracestore's frames and native payloads equal theirs on the SSE
and event-stream bodies it accepts (whole body, and 1-byte chunking for a sample).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import load_tool

from tracestore.errors import TracestoreError
from tracestore.projections import decide_release
from tracestore.providers.capture import read_capture

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "fixtures" / "wild"
INDEX = [json.loads(line) for line in (WILD / "index.jsonl").read_text("utf-8").splitlines()
         if line.strip()]


def _tool():  # noqa: ANN202 - tools/real_decisions.py as a module
    return load_tool("real_decisions")


@dataclass
class Outcome:
    entry: dict[str, Any]
    api: str | None = None
    status: str | None = None
    refused: str | None = None
    crash: str | None = None
    reading: Any = None


_REASONING_OR_TOOL = {"reasoning_delta", "tool_call_start", "tool_call_delta", "tool_call_done"}


_MARKER_KEYS = {"reasoning_details", "tool_calls", "functionCall", "toolUse",
                "reasoning_content", "reasoning", "thinking", "redactedContent"}
_MARKER_TYPES = {"thinking", "redacted_thinking", "tool_use", "server_tool_use", "reasoning",
                 "function_call", "reasoning.encrypted", "reasoning.text", "reasoning.summary"}


def _native_marker(value: Any) -> bool:
    """Reasoning or a tool call in a native payload itself, whatever the normalizer made of
    it (the reading's observations alone would miss what a normalizer drops)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _MARKER_KEYS and isinstance(item, (str, list)) and item:
                return True
            if key == "type" and item in _MARKER_TYPES:
                return True
            if key == "thought" and item is True:
                return True
            if _native_marker(item):
                return True
    elif isinstance(value, list):
        return any(_native_marker(item) for item in value)
    return False


def _carries_reasoning_or_tools(reading: Any) -> bool:
    if any(_native_marker(frame.native) for frame in reading.frames):
        return True
    for obs in reading.observations:
        block = (obs.block_type or "").lower()
        if obs.kind in _REASONING_OR_TOOL or "reason" in block or "tool" in block:
            return True
    return False


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Outcome], float]:
    tool = _tool()
    started = time.perf_counter()
    out = []
    for entry in INDEX:
        path = WILD / entry["file"]
        o = Outcome(entry)
        try:
            o.api, events = tool._events(path)
            o.status = decide_release(events, "a").status
            o.reading = read_capture(path.read_bytes(), filename=path.name)
        except TracestoreError as exc:
            o.refused = exc.code
        except Exception as exc:  # noqa: BLE001 - the point is to catch any internal error
            o.crash = f"{type(exc).__name__}: {exc}"
        out.append(o)
    return out, time.perf_counter() - started


def test_the_index_lists_every_body() -> None:
    files = {p.relative_to(WILD).as_posix() for p in WILD.rglob("*")
             if p.is_file() and p.name not in ("PROVENANCE.md", "index.jsonl")}
    assert files == {e["file"] for e in INDEX}
    assert len(INDEX) == 1014


def test_no_internal_error_and_every_refusal_is_typed(corpus) -> None:  # noqa: ANN001
    outcomes, seconds = corpus
    assert [(o.entry["file"], o.crash) for o in outcomes if o.crash] == []
    assert all(o.refused or o.status for o in outcomes)
    assert seconds < 30, f"the corpus took {seconds:.1f} s"


def test_nothing_released_with_reasoning_or_tool_calls(corpus) -> None:  # noqa: ANN001
    outcomes, _ = corpus
    bad = [o.entry["file"] for o in outcomes
           if o.status == "released" and _carries_reasoning_or_tools(o.reading)]
    assert bad == []


def allowed_labels(entry: dict[str, Any]) -> set[str]:
    """The labels a body's index vendor/api admits (empty: it must be refused)."""
    vendor, api, folder = entry["vendor"], entry["api"], entry["file"].split("/")[0]
    if folder == "http-error":  # one JSON error object: its vendor's error shape
        return {"anthropic": {"anthropic-messages"}, "gemini": {"gemini"}}.get(
            vendor, {"openai-chat"})
    by_api = {
        "messages": {"anthropic-messages"}, "responses": {"openai-responses"},
        "chat": {"xai"} if vendor == "xai" else {"openai-chat"},
        "converse-stream": {"bedrock-converse-stream"}, "sse": {"gemini"},
        # Gemini's own JSON array, or its OpenAI-compatible endpoint's chat chunks
        "json-array": {"gemini", "openai-chat"}, "/api/chat": {"ollama"},
        "invoke-with-response-stream": set(), "completions": set(), "chat-native": set(),
    }
    if api in by_api:
        return by_api[api]
    if "gemini" in api or "google" in api:
        return {"gemini"}
    by_vendor = {"anthropic": {"anthropic-messages"}, "google": {"gemini"},
                 "amazon-bedrock": {"bedrock-converse-stream"}, "xai": {"xai"},
                 "cohere": {"cohere-v2"}}
    if vendor == "bedrock":  # "other": Bedrock Mantle's Responses API; InvokeAgent refused
        return {"openai-responses"} if folder == "bedrock-mantle-responses" else set()
    return by_vendor.get(vendor, {"openai-chat", "openai-responses"})


def test_no_label_contradicts_the_index(corpus) -> None:  # noqa: ANN001
    outcomes, _ = corpus
    wrong = [(o.entry["file"], o.api, sorted(allowed_labels(o.entry))) for o in outcomes
             if o.api is not None and o.api not in allowed_labels(o.entry)]
    assert wrong == []
    # what must be refused is refused as unknown_provider, nothing written
    unlabelled = [(o.entry["file"], o.refused) for o in outcomes
                  if not allowed_labels(o.entry) and o.refused != "unknown_provider"]
    assert unlabelled == []


# -- the official SDK decoders on the same bytes --------------------------------------------

def _accepted(outcomes: list[Outcome], framing: str) -> list[Outcome]:
    return [o for o in outcomes if o.reading is not None and o.reading.framing == framing]


def _sdk_sse(data: bytes, chunk: int | None) -> list[tuple[str | None, str]]:
    streaming = pytest.importorskip("openai._streaming")
    decoder = streaming.SSEDecoder()
    pieces = [data] if chunk is None else [data[i:i + chunk] for i in range(0, len(data), chunk)]
    return [(sse.event, sse.data) for sse in decoder.iter_bytes(iter(pieces))]


def _natives(pairs: list[tuple[str | None, str]]) -> list[Any]:
    return [d if d.strip() == "[DONE]" else json.loads(d) for _, d in pairs]


def test_sse_bodies_equal_the_openai_sdk_decoder(corpus) -> None:  # noqa: ANN001
    outcomes, _ = corpus
    accepted = _accepted(outcomes, "sse")
    assert len(accepted) > 500
    mismatches = []
    for o in accepted:
        data = (WILD / o.entry["file"]).read_bytes()
        theirs = [p for p in _sdk_sse(data, None) if p[1] != ""]
        natives = [f.native for f in o.reading.frames]
        if len(natives) != len(theirs) or natives != _natives(theirs):
            mismatches.append(o.entry["file"])
    assert mismatches == []


def test_sse_one_byte_chunking_sample_equals_the_sdk(corpus) -> None:  # noqa: ANN001
    outcomes, _ = corpus
    sample = sorted(_accepted(outcomes, "sse"), key=lambda o: o.entry["size"])[::60][:10]
    for o in sample:
        data = (WILD / o.entry["file"]).read_bytes()
        ours = read_capture(data, filename=Path(o.entry["file"]).name, chunk_size=1)
        theirs = [p for p in _sdk_sse(data, 1) if p[1] != ""]
        assert [f.native for f in ours.frames] == _natives(theirs), o.entry["file"]


def test_event_stream_bodies_equal_botocore(corpus) -> None:  # noqa: ANN001
    eventstream = pytest.importorskip("botocore.eventstream")
    outcomes, _ = corpus
    accepted = _accepted(outcomes, "aws-eventstream")
    assert len(accepted) >= 10
    for o in accepted:
        data = (WILD / o.entry["file"]).read_bytes()
        for chunk in (None, 1) if o.entry["size"] < 20_000 else (None,):
            buffer = eventstream.EventStreamBuffer()
            if chunk is None:
                buffer.add_data(data)
                theirs = list(buffer)
            else:
                theirs = []
                for i in range(len(data)):
                    buffer.add_data(data[i:i + 1])
                    theirs.extend(buffer)
            natives = [{m.headers.get(":event-type") or m.headers.get(":exception-type"):
                        json.loads(m.payload) if m.payload else {}} for m in theirs]
            ours = read_capture(data, filename=Path(o.entry["file"]).name, chunk_size=chunk)
            assert [f.native for f in ours.frames] == natives, o.entry["file"]
