"""Frame-level faults: a captured SSE stream rewritten into one the provider could have sent
but did not -- an in-stream error, another ending, an event kind the API does not define, a
second text block, a tool-call delta -- each in that provider's own vocabulary.

Pure: the decoded frames and the faults in, the bytes to serve out.  A frame no fault
touches keeps its captured bytes exactly; a rewritten or inserted one is written as
``event:`` (when the API names its events) and one ``data:`` line.  Indices count the
capture's decoded SSE events from 0.

Supported APIs: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages.  A fault
an API has no form for (a second text block in Chat Completions, whose choice carries one
content channel) is refused with ``mock_fault_not_supported`` rather than approximated: a
test against an approximation would prove nothing about the real provider.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracestore.errors import InputError

Ending = Literal["length", "refusal", "unknown"]

CHAT, RESPONSES, MESSAGES = "openai-chat", "openai-responses", "anthropic-messages"

#: The frame faults each API has a native form for.
SUPPORTED: dict[str, frozenset[str]] = {
    CHAT: frozenset({"error_at_frame", "ending", "unknown_event_at_frame", "non_text_delta"}),
    RESPONSES: frozenset({"error_at_frame", "ending", "unknown_event_at_frame",
                          "second_text_block", "non_text_delta"}),
    MESSAGES: frozenset({"error_at_frame", "ending", "unknown_event_at_frame",
                         "second_text_block", "non_text_delta"}),
}

#: The terminal value each ending names, per API.  "unknown" is a value no version of the
#: API defines, so a client (and the release profile) meets an ending it cannot classify.
ENDINGS: dict[str, dict[str, str]] = {
    CHAT: {"length": "length", "refusal": "content_filter", "unknown": "mock_future_reason"},
    RESPONSES: {"length": "max_output_tokens", "refusal": "content_filter",
                "unknown": "mock_future_reason"},
    MESSAGES: {"length": "max_tokens", "refusal": "refusal", "unknown": "mock_future_reason"},
}

#: The code the providers' own in-stream errors carry: theirs, not one of tracestore's.
PROVIDER_ERROR_CODE = "server_error"
ERROR_MESSAGE = "The server had an error while processing your request (a scripted fault)."
SECOND_TEXT = " (a second text block)"
TOOL_NAME, TOOL_ARGUMENTS = "lookup", '{"query": "mock"}'


@dataclass(frozen=True)
class WireFrame:
    """One decoded SSE event of a capture."""

    event: str | None
    "The ``event:`` field when the wire named one."
    data: str
    raw: bytes
    "The event's bytes exactly as captured."


@dataclass(frozen=True)
class FrameFaults:
    error_at_frame: int | None = None
    ending: Ending | None = None
    unknown_event_at_frame: int | None = None
    second_text_block: bool = False
    non_text_delta: bool = False

    def requested(self) -> list[str]:
        names = [name for name in ("error_at_frame", "ending", "unknown_event_at_frame")
                 if getattr(self, name) is not None]
        return names + [name for name in ("second_text_block", "non_text_delta")
                        if getattr(self, name)]


class _Frame:
    """A frame on its way out: its captured bytes until something changes it."""

    def __init__(self, event: str | None, data: Any, raw: bytes | None = None,
                 origin: int | None = None) -> None:
        self.event, self.data, self.raw, self.origin = event, data, raw, origin

    def payload(self) -> dict[str, Any]:
        return self.data if isinstance(self.data, dict) else {}

    def changed(self) -> _Frame:
        self.raw = None
        return self

    def encode(self) -> bytes:
        if self.raw is not None:
            return self.raw
        data = self.data if isinstance(self.data, str) else json.dumps(
            self.data, separators=(",", ":"), ensure_ascii=False)
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {data}\n\n".encode()


def check(api: str | None, framing: str, frame_count: int, faults: FrameFaults) -> None:
    """Refuse, with a typed error, faults the capture's API has no form for or that aim
    past its last frame."""
    wanted = faults.requested()
    if not wanted:
        return
    if framing != "sse" or api not in SUPPORTED:
        raise InputError(f"{', '.join(wanted)}: frame faults need an SSE capture of "
                         f"{', '.join(SUPPORTED)}; this capture is {api or 'unknown'} "
                         f"({framing})", code="mock_fault_not_supported")
    unsupported = [name for name in wanted if name not in SUPPORTED[api]]
    if unsupported:
        raise InputError(f"{', '.join(unsupported)}: {api} has no native form for it",
                         code="mock_fault_not_supported")
    for name in ("error_at_frame", "unknown_event_at_frame"):
        at = getattr(faults, name)
        if at is not None and at >= frame_count:
            raise InputError(f"{name} {at} is past the capture's last frame "
                             f"({frame_count} frames, counted from 0)",
                             code="mock_fault_out_of_range")


def rewrite(api: str, frames: Sequence[WireFrame], faults: FrameFaults) -> bytes:
    """The stream to serve: ``frames`` with ``faults`` applied, as bytes."""
    check(api, "sse", len(frames), faults)
    out = [_Frame(f.event, _parse(f.data), f.raw, n) for n, f in enumerate(frames)]
    if faults.error_at_frame is not None:
        out = out[:faults.error_at_frame] + _error_frames(api, out)
    else:
        # Content inserted before the ending, so it belongs to the answer as streamed.
        if faults.non_text_delta:
            _insert_before_ending(api, out, _TOOL_CALL[api](out))
        if faults.second_text_block:
            _second_text(api, out)
        if faults.ending is not None:
            _set_ending(api, out, ENDINGS[api][faults.ending])
    if faults.unknown_event_at_frame is not None:
        at = faults.unknown_event_at_frame
        if faults.error_at_frame is None or at <= faults.error_at_frame:
            out.insert(_position_of(out, at), _unknown_frame(api, out))
    if api == RESPONSES:
        _renumber(out)
    return b"".join(frame.encode() for frame in out)


def _parse(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data  # "[DONE]" and anything else that is not JSON: passed on as it is


def _position_of(out: list[_Frame], origin: int) -> int:
    """Where the capture's frame ``origin`` now is (or would be, had it been replaced)."""
    for n, frame in enumerate(out):
        if frame.origin == origin:
            return n
    return min(origin, len(out))


def _type(frame: _Frame) -> str:
    value = frame.payload().get("type")
    return value if isinstance(value, str) else ""


def _first(out: list[_Frame], *types: str) -> _Frame | None:
    return next((f for f in out if _type(f) in types), None)


# -- in-stream errors ----------------------------------------------------------------------

def _error_frames(api: str, out: list[_Frame]) -> list[_Frame]:
    if api == MESSAGES:
        return [_Frame("error", {"type": "error", "error": {
            "type": "api_error", "message": ERROR_MESSAGE}})]
    if api == RESPONSES:
        created = _first(out, "response.created", "response.in_progress")
        response = dict(created.payload().get("response") or {}) if created else {}
        response.update(status="failed", error={"code": PROVIDER_ERROR_CODE,
                                                "message": ERROR_MESSAGE},
                        incomplete_details=None)
        return [_Frame("response.failed", {"type": "response.failed", "response": response})]
    # Chat Completions: an error object in place of a chunk, then the usual sentinel.
    return [_Frame(None, {"error": {"message": ERROR_MESSAGE, "type": PROVIDER_ERROR_CODE,
                                    "param": None, "code": PROVIDER_ERROR_CODE}}),
            _Frame(None, "[DONE]")]


# -- endings --------------------------------------------------------------------------------

def _ending_index(api: str, out: list[_Frame]) -> int:
    """Where the stream's ending is: the frame carrying it (or, for Anthropic, the
    ``message_delta`` before ``message_stop``); content is inserted before it."""
    for n, frame in enumerate(out):
        payload = frame.payload()
        if api == MESSAGES and _type(frame) == "message_delta":
            return n
        if api == RESPONSES and _type(frame) in ("response.completed", "response.incomplete",
                                                 "response.failed"):
            return n
        if api == CHAT and any(isinstance(c, dict) and c.get("finish_reason")
                               for c in payload.get("choices") or ()):
            return n
    raise InputError("the capture has no ending to change or to insert content before",
                     code="mock_fault_not_supported")


def _insert_before_ending(api: str, out: list[_Frame], frames: list[_Frame]) -> None:
    at = _ending_index(api, out)
    if api == RESPONSES:
        # Before the message item's done event too, when the new content joins that item.
        at = _message_done_index(out, at) if frames and _type(frames[0]).startswith(
            "response.content_part") else at
    out[at:at] = frames


def _set_ending(api: str, out: list[_Frame], value: str) -> None:
    frame = out[_ending_index(api, out)].changed()
    payload = frame.payload()
    if api == MESSAGES:
        payload.setdefault("delta", {})["stop_reason"] = value
    elif api == CHAT:
        for choice in payload.get("choices") or ():
            if isinstance(choice, dict) and choice.get("finish_reason"):
                choice["finish_reason"] = value
    else:
        response = payload.setdefault("response", {})
        response.update(status="incomplete", incomplete_details={"reason": value})
        payload["type"] = frame.event = "response.incomplete"


# -- inserted content ---------------------------------------------------------------------

def _next_block(out: list[_Frame]) -> int:
    indices = [f.payload().get("index") for f in out if _type(f) == "content_block_start"]
    return max((i for i in indices if isinstance(i, int)), default=-1) + 1


def _messages_tool_call(out: list[_Frame]) -> list[_Frame]:
    index = _next_block(out)
    return [
        _Frame("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {"type": "tool_use",
                                                         "id": "toolu_mock_01",
                                                         "name": TOOL_NAME, "input": {}}}),
        _Frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "input_json_delta",
                                                 "partial_json": TOOL_ARGUMENTS}}),
        _Frame("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _chat_tool_call(out: list[_Frame]) -> list[_Frame]:
    chunk = next((f.payload() for f in out if f.payload().get("choices")), {})
    head = {k: chunk[k] for k in ("id", "object", "created", "model") if k in chunk}

    def delta(call: dict[str, Any]) -> _Frame:
        return _Frame(None, {**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]},
                                                  "finish_reason": None}]})

    return [delta({"index": 0, "id": "call_mock_01", "type": "function",
                   "function": {"name": TOOL_NAME, "arguments": ""}}),
            delta({"index": 0, "function": {"arguments": TOOL_ARGUMENTS}})]


def _responses_items(out: list[_Frame]) -> int:
    return sum(1 for f in out if _type(f) == "response.output_item.added")


def _responses_tool_call(out: list[_Frame]) -> list[_Frame]:
    index = _responses_items(out)
    item = {"type": "function_call", "id": "fc_mock_01", "call_id": "call_mock_01",
            "name": TOOL_NAME, "arguments": "", "status": "in_progress"}
    done = {**item, "arguments": TOOL_ARGUMENTS, "status": "completed"}
    frames = [
        _Frame("response.output_item.added", {"type": "response.output_item.added",
                                              "output_index": index, "item": item}),
        _Frame("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "item_id": item["id"],
            "output_index": index, "delta": TOOL_ARGUMENTS}),
        _Frame("response.function_call_arguments.done", {
            "type": "response.function_call_arguments.done", "item_id": item["id"],
            "output_index": index, "arguments": TOOL_ARGUMENTS}),
        _Frame("response.output_item.done", {"type": "response.output_item.done",
                                             "output_index": index, "item": done}),
    ]
    terminal = out[_ending_index(RESPONSES, out)].changed()
    terminal.payload().setdefault("response", {}).setdefault("output", []).append(done)
    return frames


_TOOL_CALL = {MESSAGES: _messages_tool_call, CHAT: _chat_tool_call,
              RESPONSES: _responses_tool_call}


def _message_done_index(out: list[_Frame], fallback: int) -> int:
    for n, frame in enumerate(out):
        if _type(frame) == "response.output_item.done" and (
                frame.payload().get("item") or {}).get("type") == "message":
            return n
    return fallback


def _second_text(api: str, out: list[_Frame]) -> None:
    if api == MESSAGES:
        index = _next_block(out)
        _insert_before_ending(api, out, [
            _Frame("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": ""}}),
            _Frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "text_delta",
                                                     "text": SECOND_TEXT}}),
            _Frame("content_block_stop", {"type": "content_block_stop", "index": index}),
        ])
        return
    added = _first(out, "response.content_part.added")
    if added is None:
        raise InputError("second_text_block: the capture has no output_text part to follow",
                         code="mock_fault_not_supported")
    where = {k: added.payload()[k] for k in ("item_id", "output_index")
             if k in added.payload()}
    index = 1 + max((f.payload().get("content_index", 0) for f in out
                     if _type(f) == "response.content_part.added"), default=0)
    part = {"type": "output_text", "text": SECOND_TEXT, "annotations": []}
    frames = [
        _Frame("response.content_part.added", {"type": "response.content_part.added", **where,
                                               "content_index": index,
                                               "part": {**part, "text": ""}}),
        _Frame("response.output_text.delta", {"type": "response.output_text.delta", **where,
                                              "content_index": index, "delta": SECOND_TEXT}),
        _Frame("response.output_text.done", {"type": "response.output_text.done", **where,
                                             "content_index": index, "text": SECOND_TEXT}),
        _Frame("response.content_part.done", {"type": "response.content_part.done", **where,
                                              "content_index": index, "part": part}),
    ]
    # The message item's final form, and the terminal's output, hold the part too.
    item_id = where.get("item_id")
    for frame in out:
        payload = frame.payload()
        items = [payload.get("item")] if _type(frame) == "response.output_item.done" else (
            (payload.get("response") or {}).get("output") or [])
        for item in items:
            if isinstance(item, dict) and item.get("id") == item_id and isinstance(
                    item.get("content"), list):
                item["content"].append(part)
                frame.changed()
    _insert_before_ending(api, out, frames)


def _unknown_frame(api: str, out: list[_Frame]) -> _Frame:
    if api == CHAT:
        chunk = next((f.payload() for f in out if f.payload().get("choices")), {})
        head = {k: chunk[k] for k in ("id", "created", "model") if k in chunk}
        return _Frame(None, {**head, "object": "chat.completion.mock_future_event",
                             "detail": {}})
    name = "response.mock_future_event" if api == RESPONSES else "mock_future_event"
    return _Frame(name, {"type": name, "detail": {}})


def _renumber(out: list[_Frame]) -> None:
    """Responses events count up by ``sequence_number``: inserted events take their place
    in the count and the events after them move on by as many."""
    numbers = [f.payload().get("sequence_number") for f in out]
    start = next((n for n in numbers if isinstance(n, int)), None)
    if start is None:
        return
    for offset, frame in enumerate(out):
        payload = frame.payload()
        if isinstance(frame.data, dict) and payload.get("sequence_number") != start + offset:
            payload["sequence_number"] = start + offset
            frame.changed()


__all__ = ["ENDINGS", "SUPPORTED", "Ending", "FrameFaults", "WireFrame", "check", "rewrite"]
