"""The fast path for large captures (SSE, NDJSON, JSON arrays, the AWS event stream): two
streamed passes, nothing held per frame.

The reference path (``providers.capture.read_capture`` then ``planner.plan_capture``)
decodes the whole capture into a list of frames, their natives and observations, and builds
a pydantic model per frame: a 29 MB OpenAI Chat capture of 100,000 frames peaked at
520 MiB.  Here the input bytes are the only thing as large as the input:

1. **check** (before the store is opened): the wire decoder is fed 1 MiB pieces; each
   frame's JSON is parsed strictly (the C scanner with the strict hooks), the provider is
   detected from the first natives exactly as ``read_capture`` does, and every frame is
   normalized once, keeping only what the drain needs (a terminal seen, the last
   significant frame, the last ``[DONE]``) and the frame count.
2. **plan** (lazily, while the store appends in bounded batches inside its one
   transaction): the bytes are decoded again, each frame parsed by the plain C parser
   (pass 1 proved it strict), normalized by a fresh normalizer, and its payload written
   straight to the bytes ``FrameReceived`` would serialize to; the drain comes last.

Whenever this path is unsure -- a wire fault, a frame that is not strict JSON, a provider
that cannot be told, a partial-capture provider (``app-frames``), a whole-body error, a
message that is not a plain event -- it hands over to the reference path, which reports
exactly what it always did.  So it only runs on inputs the reference path accepts, and a
test checks both plan byte-identical events for every real capture.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tracestore.events import NewEvent, TaskRule, TransportDrained, attempt_stream
from tracestore.ingest.fast import (
    SHALLOW_CHARS, HandOver, PlannedEvents, cached_json, frame_template, payload_format,
    serialized_frame, utf8_text,
)
from tracestore.ingest.plan import (
    _PARTS, Bindings, IngestPlan, default_attempt_id, envelope, id_prefix, origin_label,
)
from tracestore.providers.base import make_normalizer
from tracestore.ingest.drain import DrainFacts, drain_of
from tracestore.providers.capture import (
    DETECT_NATIVES, DONE_SENTINEL, PARTIAL_PROVIDERS, detect_provider,
)
from tracestore.providers.error_body import whole_error_body
from tracestore.providers.strictjson import strict_decoder, too_deep
from tracestore.wire import make_decoder
from tracestore.wire.frames import Truncation
from tracestore.wire.limits import MAX_JSON_DEPTH

#: The framings this path reads; every other framing (Vercel chunks) takes the reference
#: path.  NDJSON lines and JSON-array elements are text frames like SSE's ``data``.
FAST_FRAMINGS = frozenset({"sse", "aws-eventstream", "ndjson", "json-array"})
PIECE_BYTES = 1024 * 1024
_WHITESPACE = " \t\n\r"
#: A capture frame's fields that change from frame to frame (see ``fast.payload_format``).
_CAPTURE_VARYING = {"native": b"%b", "kinds": b"%b", "event_name": b"%b", "index": b"%d",
                    "offset": b"%d", "length": b"%d"}


@dataclass(frozen=True)
class CheckedCapture:
    """What pass 1 learned: the provider, the frame count and the drain's facts."""

    provider: str
    framing: str
    frames: int
    facts: DrainFacts


class _Natives:
    """Frame -> (event name, native), strict (pass 1) or plain (pass 2)."""

    def __init__(self, framing: str, strict: bool) -> None:
        decoder = strict_decoder() if strict else json.JSONDecoder()
        self.scan = decoder.scan_once  # type: ignore[attr-defined]  # (typeshed lacks it)
        self.strict = strict
        self.of = {"aws-eventstream": self._message, "sse": self._sse}.get(framing, self._text)

    def _json(self, text: str) -> Any:
        start = 0 if text[:1] == "{" else len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = self.scan(text, start)
        except (StopIteration, ValueError, RecursionError):
            raise HandOver from None
        if end != len(text) and text[end:].strip(_WHITESPACE):
            raise HandOver  # extra data after the value
        if self.strict and end - start > SHALLOW_CHARS \
                and too_deep(text, value, MAX_JSON_DEPTH):
            raise HandOver
        return value

    def json_of(self, payload: bytes) -> Any:
        """An event-stream payload's JSON (``HandOver`` for bytes that are not UTF-8 text)."""
        return self._json(utf8_text(payload))

    def _sse(self, frame: Any) -> tuple[str | None, Any]:
        text = frame.data
        name = frame.event if frame.event_field_present else None
        if text.strip() == DONE_SENTINEL:
            return name, DONE_SENTINEL
        return name, self._json(text)

    def _text(self, frame: Any) -> tuple[str | None, Any]:
        text = frame.text
        if text.strip() == DONE_SENTINEL:
            return None, DONE_SENTINEL
        return None, self._json(text)

    def _message(self, frame: Any) -> tuple[str | None, Any]:
        headers = frame.headers
        kind = headers.get(":message-type")
        name = headers.get(":event-type" if kind == "event" else ":exception-type")
        if kind not in ("event", "exception") or not isinstance(name, str) or not name:
            raise HandOver  # error messages, missing headers: the reference path's
        if kind == "exception" and ":event-type" in headers:
            raise HandOver  # the reference names such a frame by its event type
        payload = frame.payload
        return name, {name: self.json_of(payload)} if payload else {name: {}}


def _frames(data: bytes, framing: str,
            progress: Callable[[int], None] | None = None) -> Iterator[Any]:
    """The wire frames of ``data``, one 1 MiB piece at a time (never all at once), then
    the decoder's ``Truncation`` if the bytes ended inside a frame."""
    decoder = make_decoder(framing)
    for start in range(0, len(data), PIECE_BYTES):
        yield from decoder.feed(data[start:start + PIECE_BYTES])
        if progress is not None:
            progress(min(start + PIECE_BYTES, len(data)))
    yield from decoder.close()
    if decoder.truncation is not None:
        yield decoder.truncation


def check_capture(data: bytes, framing: str, provider: str,
                  progress: Callable[[int], None] | None = None) -> CheckedCapture:
    """Pass 1: decode, parse strictly, detect and normalize; ``HandOver`` on any doubt."""
    if framing not in FAST_FRAMINGS or whole_error_body(data, framing) is not None:
        raise HandOver
    natives = _Natives(framing, strict=True)
    head: list[tuple[Any, str | None, Any]] = []
    facts = DrainFacts()
    feed: Any = None
    count = 0
    try:
        for frame in _frames(data, framing, progress):
            if isinstance(frame, Truncation):
                facts.truncation = frame
                break
            name, native = natives.of(frame)
            if feed is None:
                head.append((frame, name, native))
                if len(head) < DETECT_NATIVES:
                    continue
                provider, feed = _normalizer(framing, provider, head)
                for f, n, v in head:
                    facts.see(count, f.offset, feed(v, n))
                    count += 1
                continue
            facts.see(count, frame.offset, feed(native, name))
            count += 1
        if feed is None:  # fewer frames than detection looks at
            if not head:
                raise HandOver
            provider, feed = _normalizer(framing, provider, head)
            for f, n, v in head:
                facts.see(count, f.offset, feed(v, n))
                count += 1
    except HandOver:
        raise
    except Exception:  # a wire fault, an unknown provider...: the reference path says which
        raise HandOver from None
    return CheckedCapture(provider, framing, count, facts)


def _normalizer(framing: str, provider: str, head: list[tuple[Any, str | None, Any]]
                ) -> tuple[str, Any]:
    if provider == "auto":
        provider = detect_provider(framing, [(n, v) for _, n, v in head])
    if provider in PARTIAL_PROVIDERS:
        raise HandOver
    return provider, make_normalizer(provider).feed


def _text_natives(data: bytes, framing: str) -> Iterator[tuple[int, int, str | None, Any]]:
    natives = _Natives(framing, strict=False)
    for frame in _frames(data, framing):
        if isinstance(frame, Truncation):
            return
        yield (frame.offset, frame.length, *natives.of(frame))


def _message_natives(data: bytes) -> Iterator[tuple[int, int, str | None, Any]]:
    """The messages of an event stream pass 1 checked: every prelude, CRC and header block
    is known good, so they are walked in place (no CRCs, no message objects) and each
    distinct header block is read once."""
    from tracestore.wire.eventstream import _MIN_MESSAGE, _PRELUDE_LEN, EventStreamDecoder

    natives = _Natives("aws-eventstream", strict=False)
    names: dict[bytes, str] = {}
    parse_headers = EventStreamDecoder()._parse_headers
    unpack = struct.Struct(">II").unpack_from
    view = memoryview(data)
    i, n = 0, len(data)
    while n - i >= _MIN_MESSAGE:
        total, headers_len = unpack(data, i)
        end = i + total
        if end > n:
            return  # the truncated tail pass 1 saw
        body = i + _PRELUDE_LEN + headers_len
        raw = bytes(view[i + _PRELUDE_LEN:body])
        name = names.get(raw)
        if name is None:
            headers = parse_headers(raw, i + _PRELUDE_LEN)
            kind = headers[":message-type"]
            name = names[raw] = str(headers[":event-type" if kind == "event"
                                            else ":exception-type"])  # pass 1: a str
        payload = bytes(view[body:end - 4])
        yield i, total, name, {name: natives.json_of(payload)} if payload else {name: {}}
        i = end


def plan_body(checked: CheckedCapture, data: bytes, *, attempt: str, trace: str, sha: str,
              body_prefix: str) -> Iterator[Any]:
    """Pass 2: one event per frame, then the drain, produced as the store consumes them."""
    framing = checked.framing
    walk = _message_natives(data) if framing == "aws-eventstream" \
        else _text_natives(data, framing)
    feed = make_normalizer(checked.provider).feed
    stream = attempt_stream(attempt)
    template = frame_template()
    template.update(type="frame.received", attempt_id=attempt, api=checked.provider,
                    reader="ingest", capture_sha256=sha)
    form = payload_format(template, _CAPTURE_VARYING)
    kinds_json: dict[tuple[str, ...], bytes] = {}
    names_json: dict[Any, bytes] = {}
    index = 0
    for offset, length, name, native in walk:
        if index == checked.frames:
            break
        observed = feed(native, name)
        kinds = (observed[0].kind,) if len(observed) == 1 else tuple([o.kind for o in observed])
        fields = template.copy()
        fields["native"] = native
        fields["kinds"] = kinds
        fields["event_name"] = name
        fields["index"] = index
        fields["offset"] = offset
        fields["length"] = length
        yield serialized_frame(form, fields, native, (cached_json(kinds_json, kinds),
                                                       cached_json(names_json, name), index,
                                                       offset, length),
                               stream, f"{body_prefix}{index:011x}", trace, observed)
        index += 1
    outcome, detail = drain_of(checked.facts)
    yield NewEvent(stream, TransportDrained(attempt_id=attempt, outcome=outcome, detail=detail,
                                            reader="ingest"),
                   id=f"{body_prefix}{index:011x}", trace_id=trace)


def plan_capture_fast(data: bytes, *, framing: str, provider: str, filename: str | None,
                      attempt_id: str | None, trace_id: str | None,
                      task: TaskRule | None = None, bindings: Bindings | None = None,
                      origin: str | None = None,
                      progress: Callable[[int], None] | None = None) -> IngestPlan:
    """``plan_capture(read_capture(data))`` without holding the frames; ``HandOver`` when
    the input needs the reference path."""
    checked = check_capture(data, framing, provider, progress)
    sha = hashlib.sha256(data).hexdigest()
    attempt = attempt_id or default_attempt_id(filename, sha)
    trace = trace_id or attempt
    head = envelope(attempt, trace, checked.provider, sha, len(data), framing, filename, task,
                    origin=origin_label(origin, "capture"), body=(), bindings=bindings)
    prefix = f"{id_prefix(attempt, sha)}{_PARTS['body']}"

    def body() -> Iterator[Any]:
        return plan_body(checked, data, attempt=attempt, trace=trace, sha=sha,
                         body_prefix=prefix)

    return IngestPlan(attempt, trace, checked.provider, "capture", framing, sha,
                      PlannedEvents(head, checked.frames + 1, body), data, checked.frames,
                      drain_of(checked.facts)[0])


__all__ = ["FAST_FRAMINGS", "CheckedCapture", "check_capture", "plan_body",
           "plan_capture_fast"]
