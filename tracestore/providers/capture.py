"""Bytes → natives → observations: the glue between ``tracestore.wire`` and the normalizers.

Why this lives in ``providers`` and not in ``wire``: the wire layer only knows framings
(SSE events, lines, array elements, binary messages); turning a frame into a *native*
(parsing its JSON strictly, recognising ``[DONE]``, combining Bedrock headers and payload)
and choosing which provider's vocabulary applies are provider decisions.  Everything here
is pure: the same bytes give the same :class:`CaptureReading` whatever the chunking.

Detection (:func:`detect_provider`) is by payload shape, never by file name, because a
capture's HTTP headers are usually lost; the first natives that decide win.  The rules are
documented in ``docs/providers.md`` and reused by the seed-003 projection reader, which is
why local labels (``{"local": …}``) are skipped rather than rejected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from tracestore.errors import InputError, WireError
from tracestore.providers.app_frames import FRAME_KINDS, complete_lines_only
from tracestore.providers.base import make_normalizer
from tracestore.providers.error_body import error_body_provider, whole_error_body
from tracestore.providers.faq_endpoint import EVENT_NAMES as FAQ_EVENTS, is_chunk, is_envelope
from tracestore.providers.cohere import EVENT_TYPES as COHERE_EVENTS
from tracestore.providers.bedrock import EVENT_MEMBERS, EXCEPTION_MEMBERS, bedrock_native_from_message
from tracestore.providers.observations import Observation
from tracestore.providers.strictjson import strict_loads
from tracestore.providers.xai import ANTHROPIC_TYPES
from tracestore.wire import (DETECT_HEAD_BYTES, EventStreamMessage, Frame, SSEEvent, TextFrame, Truncation,
                             decode_bytes, detect_framing, framing_for_path)

DONE_SENTINEL = "[DONE]"

#: How many leading natives :func:`read_capture` offers to :func:`detect_provider`.
DETECT_NATIVES = 32


@dataclass(frozen=True)
class NativeFrame:
    """One decoded frame: where it is in the capture, its native value and what it means."""

    index: int
    offset: int
    length: int
    event_name: str | None      # the SSE ``event:`` field when the wire named one
    native: Any                 # decoded JSON value exactly as parsed, or "[DONE]"
    observations: tuple[Observation, ...]


@dataclass(frozen=True)
class FrameFailure:
    """A frame that could not be read (kept partial captures only): where and why."""

    code: str
    offset: int | None
    message: str


#: Providers whose captures stay recordable up to a malformed frame (seed 000 keeps the
#: partial trace of an application frame stream as ``invalid``; a vendor stream with a
#: broken frame is refused whole, as before).
PARTIAL_PROVIDERS = frozenset({"app-frames"})

#: Wire faults after which a recognized stream of ANY provider keeps its valid prefix as
#: evidence and the rejection at the fault's byte (seed 000's ``invalid`` result:
#: the partial trace is kept, never accepted); input with no whole frame before the fault
#: is refused whole.
INVALID_BYTES = frozenset({"invalid_utf8", "prelude_crc_mismatch", "message_crc_mismatch"})


@dataclass(frozen=True)
class CaptureReading:
    """A whole capture read through one provider's normalizer."""

    provider: str
    framing: str
    frames: list[NativeFrame]
    truncation: Truncation | None
    terminal_seen: bool         # a native terminal observation occurred
    failure: FrameFailure | None = None
    "The frame reading stopped at (``keep_partial``); the frames before it are kept."

    @property
    def observations(self) -> list[Observation]:
        """All observations in capture order (flattened)."""
        return [obs for frame in self.frames for obs in frame.observations]

    def error_ending(self) -> tuple[NativeFrame, Observation] | None:
        """The native error frame the capture ended with, if it ended with one.

        An error frame (Anthropic ``event: error`` after HTTP 200, an app-frames ``error``
        frame, a Bedrock exception message, Groq's ``event: error``) is the provider's own
        last word: a terminal of its own, not an input cut short.  Trailing keepalives and
        ``[DONE]`` sentinels are skipped; a frame whose last observation is not an error
        (a text delta flagged ``sequence_gap`` …) is not an error frame.
        """
        for frame in reversed(self.frames):
            kinds = [obs.kind for obs in frame.observations]
            if kinds and all(kind == "keepalive" for kind in kinds):
                continue
            if kinds and kinds[-1] == "error":
                return frame, frame.observations[-1]
            return None
        return None


def _native_of(frame: Any) -> tuple[str | None, Any]:
    """(event name, native) of one wire frame; JSON is parsed strictly at its offset."""
    if isinstance(frame, EventStreamMessage):
        return (frame.event_type or frame.exception_type,
                bedrock_native_from_message(frame.headers, frame.payload, offset=frame.offset))
    if isinstance(frame, SSEEvent):
        event_name = frame.event if frame.event_field_present else None
        text = frame.data
    elif isinstance(frame, TextFrame):
        event_name, text = None, frame.text
    else:  # pragma: no cover - the wire layer has no other frame types
        raise InputError(f"unsupported frame type {type(frame).__name__}", code="unsupported_frame")
    if text.strip() == DONE_SENTINEL:
        return event_name, DONE_SENTINEL
    return event_name, strict_loads(text, offset=frame.offset)


#: Streams whose shape is recognized but that no normalizer here reads (read as a near
#: neighbour, each would get a confident wrong label).  ``detect_provider`` refuses them by name.
UNSUPPORTED_STREAMS = {
    "openai-completions": "a legacy OpenAI /v1/completions stream (choices[].text)",
    "bedrock-invoke": "a Bedrock InvokeModelWithResponseStream or InvokeAgent event stream "
                      "(chunk/trace events, not ConverseStream)",
    "cohere-v1": "a Cohere v1 chat stream (is_finished/event_type lines)",
}


def _unsupported_vote(native: Mapping[str, Any]) -> str | None:
    if "is_finished" in native and isinstance(native.get("event_type"), str):
        return "cohere-v1"
    choices = native.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    if native.get("object") == "text_completion" or (
            isinstance(first, Mapping) and "text" in first and "delta" not in first):
        return "openai-completions"
    if len(native) == 1 and next(iter(native)) in ("chunk", "trace", "files", "returnControl"):
        return "bedrock-invoke"
    return None


def _shape_vote(native: Any) -> str | None:
    """The provider a single native's shape points to, or ``None`` when it says nothing
    (a key of ``UNSUPPORTED_STREAMS`` for a shape recognized but not read here)."""
    if not isinstance(native, Mapping) or "local" in native:
        return None  # sentinels, scalars, seed-003 local labels
    unsupported = _unsupported_vote(native)
    if unsupported is not None:
        return unsupported
    model = native.get("model")
    for envelope in ("response", "message"):  # Responses and Messages nest the model name
        inner = native.get(envelope)
        if isinstance(inner, Mapping):
            model = inner.get("model", model)
    grok = isinstance(model, str) and model.startswith("grok")
    if isinstance(native.get("event_type"), str):
        return "gemini"
    if any(key in native for key in ("candidates", "promptFeedback", "usageMetadata")):
        return "gemini"
    kind = native.get("kind")  # any JSON value: a list or object is unhashable
    if isinstance(kind, str) and kind in FRAME_KINDS and "sequence" in native:
        return "app-frames"
    etype = native.get("type")
    if isinstance(etype, str):
        if etype in COHERE_EVENTS and ("delta" in native or "index" in native
                                       or etype == "message-start"):
            return "cohere-v2"
        if etype.startswith("response."):
            return "xai" if grok else "openai-responses"
        if etype in ANTHROPIC_TYPES and etype != "error":
            return "xai" if grok else "anthropic-messages"
        if etype in FRAME_KINDS and "sequence" in native:
            return "app-frames"
        return None
    if native.get("object") == "chat.completion.chunk" or isinstance(native.get("choices"), list):
        return "xai" if grok else "openai-chat"
    if "done" in native and ("message" in native or "response" in native or "model" in native):
        return "ollama"
    if len(native) == 1:
        (key,) = native
        if key in EVENT_MEMBERS or key in EXCEPTION_MEMBERS:
            return "bedrock-converse-stream"
    return None


def detect_provider(framing: str, first_natives: list[tuple[str | None, Any]]) -> str:
    """Name the provider of a capture from its framing and first ``(event_name, native)`` pairs.

    The binary event stream is Bedrock.  Otherwise the first native whose shape decides
    wins (see ``docs/providers.md``).  A lone ``{"error": "<string>"}`` NDJSON line is
    Ollama's error shape.  Raises ``InputError(code="unknown_provider")`` when no native
    decides.
    """
    for event_name, native in first_natives:
        # Seed 004's FAQ endpoint names its events and sends text-only chunks or envelopes.
        if event_name in FAQ_EVENTS and (is_chunk(native) or is_envelope(native)):
            return "faq-endpoint"
        vote = _shape_vote(native)
        if vote in UNSUPPORTED_STREAMS:
            raise InputError(f"this is {UNSUPPORTED_STREAMS[vote]}: no tracestore normalizer "
                             "reads it, so it is refused rather than judged under another "
                             "API's rules", code="unknown_provider", framing=framing,
                             recognized=vote)
        if vote is not None:
            return vote
    if framing == "aws-eventstream":  # an event stream whose first messages decide nothing
        return "bedrock-converse-stream"
    if framing == "ndjson" and any(isinstance(n, Mapping) and isinstance(n.get("error"), str)
                                   for _, n in first_natives):
        return "ollama"
    whole_body = error_body_provider(first_natives[0][1]) if len(first_natives) == 1 else None
    if whole_body is not None:
        return whole_body  # a whole-body JSON error
    raise InputError("cannot tell the provider from the capture's first events; pass it explicitly",
                     code="unknown_provider", framing=framing)


def read_capture(data: bytes, *, provider: str = "auto", framing: str | None = None,
                 filename: str | None = None, chunk_size: int | None = None,
                 expected_binding: str | None = None,
                 progress: Callable[[int], None] | None = None,
                 keep_partial: bool = False) -> CaptureReading:
    """Decode ``data`` and normalize every frame.

    ``framing`` defaults to :func:`framing_for_path` (when ``filename`` is given) or
    :func:`detect_framing`; ``provider="auto"`` uses :func:`detect_provider`.
    ``chunk_size`` feeds the decoder in pieces (the result must not depend on it).
    ``expected_binding`` is passed to the ``app-frames`` normalizer; ``progress`` is called
    with the bytes decoded so far (see ``tracestore.wire.decode_bytes``).  Bad framing raises
    ``WireError``; non-strict JSON raises ``WireError(code="invalid_json", offset=…)``.
    """
    if framing is None:
        head = data[:DETECT_HEAD_BYTES]
        framing = framing_for_path(filename, head) if filename else detect_framing(head)
    whole = whole_error_body(data, framing)
    invalid = None
    wire_frames: list[Frame]
    if whole is not None:  # a whole-body JSON error object, compact or pretty
        wire_frames, truncation = whole, None
    else:
        try:
            wire_frames, truncation = decode_bytes(data, framing, chunk_size,
                                                   progress=progress)
        except WireError as exc:  # seed 000: keep the valid prefix of bad bytes
            if not keep_partial or exc.code not in INVALID_BYTES or not exc.frames:
                raise
            wire_frames, truncation, invalid = exc.frames, None, exc
    decoded, failure, error = _decode_natives(wire_frames, keep_partial)
    if provider == "auto":
        if error is not None and not decoded:
            raise error
        try:
            provider = detect_provider(framing, [(name, native) for _, name, native in
                                                 decoded[:DETECT_NATIVES]])
        except InputError:
            if invalid is not None:  # not a recognizable stream at all: refused whole
                raise invalid from None
            raise
    if invalid is not None and failure is None:
        failure = FrameFailure(invalid.code, invalid.offset, invalid.message)
    if error is not None and provider not in PARTIAL_PROVIDERS:
        raise error
    if provider == "app-frames" and framing == "ndjson":  # seed 000's application frames
        kept, truncation = complete_lines_only(data, [f for f, _, _ in decoded], truncation)
        decoded = decoded[:len(kept)]
    options = {"expected_binding": expected_binding} if provider == "app-frames" else {}
    normalizer = make_normalizer(provider, **options)
    frames = [NativeFrame(index, frame.offset, frame.length, name, native,
                          tuple(normalizer.feed(native, name)))
              for index, (frame, name, native) in enumerate(decoded)]
    terminal_seen = any(obs.kind == "terminal" for f in frames for obs in f.observations)
    return CaptureReading(provider, framing, frames, truncation, terminal_seen, failure)


def _decode_natives(wire_frames: list[Any], keep_partial: bool
                    ) -> tuple[list[tuple[Any, str | None, Any]], FrameFailure | None,
                               WireError | None]:
    """Natives of the wire frames; with ``keep_partial``, stop at the first frame that is
    not strict JSON and report it instead of raising (the caller decides per provider)."""
    decoded: list[tuple[Any, str | None, Any]] = []
    for frame in wire_frames:
        try:
            decoded.append((frame, *_native_of(frame)))
        except WireError as exc:
            if not keep_partial:
                raise
            code = "invalid_frame_json" if exc.code == "invalid_json" else exc.code
            return decoded, FrameFailure(code, exc.offset, exc.message), exc
    return decoded, None, None


def read_natives(provider: str, natives: Iterable[Any]) -> list[list[Observation]]:
    """Normalize already-decoded natives (no framing) through one fresh normalizer."""
    normalizer = make_normalizer(provider)
    return [normalizer.feed(native) for native in natives]


# Public names for the live recorder (``tracestore.recording``), which decodes incrementally
# and must interpret frames and vote on providers exactly as ``read_capture`` does.
native_of = _native_of
shape_vote = _shape_vote

__all__ = ["CaptureReading", "NativeFrame", "detect_provider", "native_of", "read_capture",
           "read_natives", "shape_vote"]
