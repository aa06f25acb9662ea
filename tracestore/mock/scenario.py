"""What ``tracestore mock`` plays: a scenario file of exchanges, each a real capture to send
back (the response body bytes an application once received), the request it answers
(matched exactly, or by path alone) and the faults to inject while sending it.

The file's JSON Schema is published (``tracestore mock --schema``); a scenario that does
not validate, names a capture that cannot be read, or aims a fault past the end of its
capture is refused with a typed error before the server starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tracestore.errors import InputError
from tracestore.mock.frame_faults import FrameFaults, WireFrame

#: The largest capture a mock plays (the same bound as ``tracestore ingest``'s input).
MAX_CAPTURE_BYTES = 256 * 1024 * 1024


class Faults(BaseModel):
    """What goes wrong while one exchange is answered (nothing, by default)."""

    model_config = ConfigDict(extra="forbid")

    status: int | None = Field(None, ge=400, le=599, description=(
        "Answer with this HTTP status and the provider's own error body instead of the "
        "stream (429, 500, 529 ...)."))
    retry_after: int | None = Field(None, ge=0, le=3600, description=(
        "Seconds for a Retry-After header with `status`."))
    chunk_bytes: int = Field(256, ge=1, le=1 << 20, description=(
        "Bytes per write of the body."))
    delay_ms: float = Field(0.0, ge=0, le=60_000, description=(
        "Pause before each write after the first."))
    stall_at_byte: int | None = Field(None, ge=0, description=(
        "Stop sending at this body byte for `stall_ms`, then go on."))
    stall_ms: float = Field(0.0, ge=0, le=600_000)
    cut_at_byte: int | None = Field(None, ge=0, description=(
        "Send the body up to this byte, then reset the connection (the transport breaks)."))
    keep_sending_after_disconnect: bool = Field(False, description=(
        "When the client goes away, go on producing the rest of the stream, terminal "
        "included, as a provider that never heard of the cancel does; the log records the "
        "byte at which the client left either way."))
    error_at_frame: int | None = Field(None, ge=0, description=(
        "Replace the capture's SSE event K (counted from 0) and every one after it with the "
        "provider's own in-stream error: Anthropic `event: error`, Responses "
        "`response.failed`, a Chat Completions `{\"error\": …}` chunk and `[DONE]`."))
    ending: Literal["length", "refusal", "unknown"] | None = Field(None, description=(
        "Substitute the stream's ending: a length limit, a refusal (Chat `content_filter`, "
        "Responses `incomplete_details.reason` `content_filter`, Anthropic `refusal`) or a "
        "reason no version of the API defines."))
    unknown_event_at_frame: int | None = Field(None, ge=0, description=(
        "Insert, before SSE event K, an event kind the API does not define."))
    second_text_block: bool = Field(False, description=(
        "Add a second text block before the ending (Anthropic: a text content block; "
        "Responses: an output_text part). Chat Completions has no form for it."))
    non_text_delta: bool = Field(False, description=(
        "Add a tool call before the ending, streamed as the API streams one (Anthropic "
        "input_json_delta, Responses function_call_arguments.delta, Chat tool_calls)."))

    def frame_faults(self) -> FrameFaults:
        return FrameFaults(self.error_at_frame, self.ending, self.unknown_event_at_frame,
                           self.second_text_block, self.non_text_delta)


class Exchange(BaseModel):
    """One request the mock answers, and how."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(..., min_length=1, description=(
        "The request path this exchange answers (e.g. /v1/chat/completions); a path that "
        "ends with it matches, so a base URL prefix such as /openai is allowed."))
    capture: str = Field(..., min_length=1, description=(
        "The response body to play: a capture file, relative to the scenario file."))
    content_type: str | None = Field(None, description=(
        "The response's content type; by default from the capture's extension."))
    request: dict[str, Any] | None = Field(None, description=(
        "The request body this exchange answers, compared exactly (as canonical JSON); "
        "another body gets `replay_request_mismatch`. None: any body on this path."))
    ignore_fields: list[str] = Field(default_factory=list, description=(
        "Top-level request fields left out of the comparison (none unless named)."))
    faults: Faults = Field(default_factory=lambda: Faults.model_validate({}))


class FromStore(BaseModel):
    """Recorded live attempts to play (``tracestore.mock.from_store``)."""

    model_config = ConfigDict(extra="forbid")

    db: str = Field(..., min_length=1, description=(
        "The store: a database URL, or a SQLite file path relative to the scenario file."))
    trace: str | None = Field(None, description="Only this trace's attempts.")


class MockScenario(BaseModel):
    """Exchanges in the order they are answered: each is used once; a request on a path
    whose exchanges are all used gets `replay_exhausted`."""

    model_config = ConfigDict(extra="forbid")

    exchanges: list[Exchange] = Field(default_factory=list)
    from_store: FromStore | None = Field(None, description=(
        "Also play every attempt recorded in this store with a request endpoint and raw "
        "bytes, after `exchanges`, in the order the attempts started."))

    @model_validator(mode="after")
    def _something_to_play(self) -> MockScenario:
        if not self.exchanges and self.from_store is None:
            raise ValueError("a scenario needs exchanges or from_store")
        return self


CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson",
                 ".json": "application/json", ".bin": "application/vnd.amazon.eventstream",
                 ".txt": "text/event-stream"}


def schema() -> dict[str, Any]:
    return MockScenario.model_json_schema()


def load(path: Path) -> tuple[MockScenario, list[bytes]]:
    """The scenario and each exchange's capture bytes, or a typed error (nothing served).
    A folder is a scenario of its own: every capture in it, once each (``folder_scenario``)."""
    if path.is_dir():
        scenario, base = folder_scenario(path), path
    else:
        scenario, base = _read_scenario(path), path.parent
    bodies = []
    for index, exchange in enumerate(scenario.exchanges):
        capture = (base / exchange.capture)
        try:
            if capture.stat().st_size > MAX_CAPTURE_BYTES:
                raise InputError(f"exchange {index}: {capture} is over "
                                 f"{MAX_CAPTURE_BYTES} bytes", code="input_too_large")
            body = capture.read_bytes()
        except OSError as exc:
            raise InputError(f"exchange {index}: cannot read capture {capture}: "
                             f"{exc.strerror}", code="file_not_found",
                             path=str(capture)) from None
        body = _play_form(index, capture, body, exchange)
        for name in ("cut_at_byte", "stall_at_byte"):
            at = getattr(exchange.faults, name)
            if at is not None and at > len(body):
                raise InputError(f"exchange {index}: {name} {at} is past the end of its "
                                 f"capture ({len(body)} bytes)", code="mock_fault_out_of_range",
                                 exchange=index)
        bodies.append(body)
    if scenario.from_store is not None:
        db = scenario.from_store.db
        if "://" not in db:
            db = str(path.parent / db)
        scenario, bodies = with_store(scenario, bodies, db, scenario.from_store.trace)
    return scenario, bodies


def _read_scenario(path: Path) -> MockScenario:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the mock scenario {path}: {exc.strerror}",
                         code="file_not_found", path=str(path)) from None
    try:
        return MockScenario.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise InputError(f"{path} is not a mock scenario: {' '.join(first[:3])}",
                         code="invalid_mock_scenario", path=str(path)) from None


#: The request path each API's SDK streams from (matched as a suffix of the request's).
API_PATHS = {"openai-chat": "/chat/completions", "xai": "/chat/completions",
             "openai-responses": "/responses", "anthropic-messages": "/messages",
             "gemini": ":streamGenerateContent", "bedrock-converse-stream": "/converse-stream",
             "cohere-v2": "/chat", "app-frames": "/frames", "faq-endpoint": "/faq"}


def folder_scenario(folder: Path) -> MockScenario:
    """Every capture in ``folder`` (sorted by name) as one exchange on its API's path, told
    from its bytes as ``tracestore ingest`` tells it; a file that is no capture is refused."""
    from tracestore.errors import TracestoreError
    from tracestore.providers.capture import read_capture

    exchanges = []
    for capture in sorted(p for p in folder.iterdir() if p.is_file()
                          and p.suffix in CONTENT_TYPES):
        try:
            if capture.stat().st_size > MAX_CAPTURE_BYTES:
                raise InputError(f"{capture} is over {MAX_CAPTURE_BYTES} bytes",
                                 code="input_too_large")
            reading = read_capture(capture.read_bytes(), filename=capture.name)
        except TracestoreError as exc:
            raise InputError(f"{capture} cannot be played: {exc.message}", code=exc.code,
                             path=str(capture)) from None
        path = API_PATHS.get(reading.provider)
        if reading.provider == "ollama":
            first = reading.frames[0].native if reading.frames else {}
            path = "/api/chat" if isinstance(first, dict) and "message" in first \
                else "/api/generate"
        if path is None:
            raise InputError(f"{capture}: no request path is known for the "
                             f"{reading.provider} API", code="invalid_mock_scenario",
                             path=str(capture))
        exchanges.append({"path": path, "capture": capture.name})
    if not exchanges:
        raise InputError(f"{folder} holds no capture", code="invalid_mock_scenario",
                         path=str(folder))
    return MockScenario.model_validate({"exchanges": exchanges})


def with_store(scenario: MockScenario | None, bodies: list[bytes], db: str,
               trace: str | None) -> tuple[MockScenario, list[bytes]]:
    """``scenario`` (or nothing) followed by the exchanges recorded in the store ``db``."""
    from tracestore.mock.from_store import exchanges_from_store
    from tracestore.store.log import EventStore

    with EventStore(db, create=False, read_only=True) as store:
        recorded, played = exchanges_from_store(store, trace)
    before = scenario.exchanges if scenario is not None else []
    combined = MockScenario.model_validate({
        "exchanges": [e.model_dump() for e in [*before, *recorded]],
        "from_store": scenario.from_store if scenario is not None else None})
    return combined, [*bodies, *played]


def _play_form(index: int, capture: Path, body: bytes, exchange: Exchange) -> bytes:
    """The bytes to serve: the capture, with its frame faults applied.

    A capture whose API or framing cannot be told is refused with ingest's own code: an
    SDK could not read it either, and a test against it would prove nothing."""
    from tracestore.errors import TracestoreError
    from tracestore.mock import frame_faults
    from tracestore.providers.capture import read_capture

    if exchange.faults.status is not None:
        return body  # answered with an error body instead; the capture is never played
    try:
        reading = read_capture(body)
    except TracestoreError as exc:
        raise InputError(f"exchange {index}: {capture} cannot be played: {exc.message}",
                         code=exc.code, exchange=index) from None
    faults = exchange.faults.frame_faults()
    if not faults.requested():
        return body
    try:
        frames = wire_frames(body) if reading.framing == "sse" else []
        frame_faults.check(reading.provider, reading.framing, len(frames), faults)
        return frame_faults.rewrite(reading.provider, frames, faults)
    except InputError as exc:
        raise InputError(f"exchange {index}: {exc.message}", code=exc.code,
                         exchange=index) from None


def wire_frames(body: bytes) -> list[WireFrame]:
    """The SSE events of ``body``, each with its captured bytes."""
    from tracestore.wire import SSEEvent, decode_bytes

    events, _ = decode_bytes(body, "sse")
    return [WireFrame(e.event if e.event_field_present else None, e.data,
                      body[e.offset:e.offset + e.length])
            for e in events if isinstance(e, SSEEvent)]


def content_type(exchange: Exchange) -> str:
    if exchange.content_type:
        return exchange.content_type
    return CONTENT_TYPES.get(Path(exchange.capture).suffix, "application/octet-stream")


__all__ = ["Exchange", "Faults", "FromStore", "MockScenario", "content_type", "load", "schema",
           "with_store"]
