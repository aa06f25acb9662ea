"""A live capture read incrementally: bytes in any chunking → frames, observations, segments.

Pure (no I/O, no clock): the recorder feeds it the bytes an application receives and
stores what it returns.  It reuses ``tracestore.wire`` decoders, ``providers.capture``'s
frame interpretation and provider votes, and the provider normalizers, so a live recording
and an ``ingest`` of the same bytes give the same frames.

Why segments: a stream's whole-capture hash exists only at its end, and holding the whole
stream would make memory grow with it.  Each ``feed`` returns the raw bytes up to the end
of the last frame it completed as one content-addressed :class:`Segment`; the bytes of a
frame still arriving stay pending.  So every frame lies inside exactly one segment and
the concatenated segments are exactly the bytes fed.  Pending bytes are bounded: a frame
is at most ``max_frame_bytes`` long, so when bytes pile up without completing a frame
(comment floods) everything but the last ``max_frame_bytes`` is flushed frame-less.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from tracestore.errors import InputError, TracestoreError
from tracestore.providers.base import PROVIDER_NAMES, Normalizer, make_normalizer
from tracestore.providers.capture import DETECT_NATIVES, detect_provider, native_of, shape_vote
from tracestore.wire import DETECT_HEAD_BYTES, FRAMINGS, detect_framing, make_decoder
from tracestore.wire.base import Decoder
from tracestore.wire.frames import Truncation
from tracestore.wire.limits import MAX_FRAME_BYTES

_AWS_PRELUDE_BYTES = 12


@dataclass(frozen=True, slots=True)
class Segment:
    offset: int
    "Absolute offset of the first byte in the stream."
    data: bytes
    sha256: str


@dataclass(frozen=True, slots=True)
class LiveFrame:
    index: int
    offset: int
    "Absolute offset in the stream (the segment holding it is in the same FeedResult)."
    length: int
    event_name: str | None
    native: Any
    kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FeedResult:
    segment: Segment | None
    frames: list[LiveFrame] = field(default_factory=list)

    @property
    def decisive(self) -> bool:
        """Whether these frames may make a release decision final (terminal or error)."""
        return any(k in ("terminal", "error") for f in self.frames for k in f.kinds)


def compatible_api(vote: str, api: str) -> bool:
    """Whether events of provider ``vote`` fit an attempt opened for ``api``."""
    # xAI speaks the OpenAI and Anthropic dialects with a grok model name: either name fits.
    return vote == api or "xai" in (vote, api)


class LiveCapture:
    """One attempt's incoming bytes.  ``feed`` then ``close``; any error poisons it."""

    def __init__(self, api: str = "auto", framing: str | None = None, *,
                 max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        if api != "auto" and api not in PROVIDER_NAMES:
            raise InputError(f"unknown api {api!r}; expected auto or one of "
                             f"{', '.join(PROVIDER_NAMES)}", code="unknown_api")
        if framing is not None and framing not in FRAMINGS:
            raise InputError(f"unknown framing {framing!r}; expected one of "
                             f"{', '.join(FRAMINGS)}", code="unknown_framing")
        self.api: str | None = None if api == "auto" else api
        self.framing = framing
        self.max_frame_bytes = max_frame_bytes
        self._decoder: Decoder | None = None
        self._normalizer: Normalizer | None = None
        self._pending = bytearray()   # bytes not yet in a segment
        self._seg_start = 0           # absolute offset of _pending[0]
        self._held: list[tuple[Any, str | None, Any]] = []  # frames awaiting the provider
        self._voted = 0               # natives checked against an explicit api
        self._index = 0
        self._hash = hashlib.sha256()
        self.size = 0
        self.terminal_seen = False
        self.error_ending: tuple[LiveFrame, Any] | None = None
        "The native error frame the bytes so far end with (keepalives after it skipped)."
        self.truncation: Truncation | None = None
        self.closed = False
        self._error: TracestoreError | None = None

    # -- public ----------------------------------------------------------------------
    def feed(self, data: bytes) -> FeedResult:
        self._usable()
        try:
            return self._feed(bytes(data))
        except TracestoreError as exc:
            self._error = exc
            raise

    def close(self) -> FeedResult:
        self._usable()
        try:
            return self._close()
        except TracestoreError as exc:
            self._error = exc
            raise
        finally:
            self.closed = True

    @property
    def stream_sha256(self) -> str:
        return self._hash.hexdigest()

    def drain_as_shown(self) -> tuple[str, str | None]:
        """The drain the bytes show (after ``close``), by the same rule as ``ingest``."""
        if self.truncation is not None:
            return "eof", (f"input ended inside a frame at byte {self.truncation.offset} "
                           f"({self.truncation.code})")
        if not self.terminal_seen:
            if self.error_ending is not None:  # the same rule as ingest's capture_drain
                frame, error = self.error_ending
                name = getattr(error, "error_code", None) or getattr(error, "native_type", None)
                return "clean", (f"input ended after the native error frame {name} "
                                 f"(frame {frame.index} at byte {frame.offset})")
            return "eof", "input ended before the native terminal"
        return "clean", None

    @property
    def ended_natively(self) -> bool:
        """Whether the bytes so far end the stream as the provider ends it: after its native
        terminal, or with a native error frame."""
        return self.terminal_seen or self.error_ending is not None

    # -- internals -------------------------------------------------------------------
    def _usable(self) -> None:
        if self._error is not None:
            raise self._error
        if self.closed:
            raise InputError("this capture is closed; a drained attempt takes no more bytes",
                             code="attempt_closed")

    def _feed(self, data: bytes) -> FeedResult:
        self._hash.update(data)
        self.size += len(data)
        self._pending += data
        if self._decoder is None:
            if not self._start_decoder(final=False):
                return FeedResult(None)
            wire = self._decoder.feed(bytes(self._pending))  # type: ignore[attr-defined]  # set by _start_decoder
        else:
            wire = self._decoder.feed(data)
        return self._emit(wire, final=False)

    def _close(self) -> FeedResult:
        if self._decoder is None and not self._start_decoder(final=True):
            return self._emit([], final=True)  # nothing that could be a frame arrived
        assert self._decoder is not None
        wire = self._decoder.close()
        self.truncation = self._decoder.truncation
        return self._emit(wire, final=True)

    def _start_decoder(self, *, final: bool) -> bool:
        """Choose the framing once enough bytes are here; False while it cannot be told."""
        if self.framing is None:
            head = bytes(self._pending[:DETECT_HEAD_BYTES])
            if not head.strip():
                return False  # nothing but whitespace yet (or at all)
            if not (final or len(head) >= DETECT_HEAD_BYTES or _decidable(head)):
                return False
            self.framing = detect_framing(head)
        self._decoder = make_decoder(self.framing, max_frame_bytes=self.max_frame_bytes)
        return True

    def _emit(self, wire: list[Any], *, final: bool) -> FeedResult:
        self._held.extend((frame, *native_of(frame)) for frame in wire)
        if self.api is None:
            self._detect(final)
        elif self._voted < DETECT_NATIVES:
            self._check_api()
        frames: list[LiveFrame] = []
        if self.api is not None and self._held:
            frames = self._normalize()
        if frames:
            end = frames[-1].offset + frames[-1].length
            return FeedResult(self._cut(end), frames)
        if final:
            return FeedResult(self._cut(self._seg_start + len(self._pending)))
        if self.api is not None and not self._held and len(self._pending) > 2 * self.max_frame_bytes:
            # No frame can start before the last max_frame_bytes: flush the rest.
            return FeedResult(self._cut(self._seg_start + len(self._pending)
                                        - self.max_frame_bytes))
        return FeedResult(None)

    def _detect(self, final: bool) -> None:
        pairs = [(name, native) for _, name, native in self._held[:DETECT_NATIVES]]
        if not pairs:
            return
        decided = self.framing == "aws-eventstream" or any(
            shape_vote(native) is not None for _, native in pairs)
        if decided or final or len(self._held) >= DETECT_NATIVES:
            self.api = detect_provider(self.framing or "", pairs)  # unknown_provider if none

    def _check_api(self) -> None:
        assert self.api is not None
        for _, _, native in self._held[: DETECT_NATIVES - self._voted]:
            vote = shape_vote(native)
            if vote is not None and not compatible_api(vote, self.api):
                raise InputError(f"the bytes are {vote} events, but the attempt was opened "
                                 f"for {self.api}", code="api_mismatch", api=self.api,
                                 found=vote)
        self._voted += len(self._held)

    def _normalize(self) -> list[LiveFrame]:
        if self._normalizer is None:
            self._normalizer = make_normalizer(self.api or "")
        frames = []
        for frame, name, native in self._held:
            observations = self._normalizer.feed(native, name)
            kinds = tuple(o.kind for o in observations)
            self.terminal_seen = self.terminal_seen or "terminal" in kinds
            live = LiveFrame(self._index, frame.offset, frame.length, name, native, kinds)
            if not (kinds and all(kind == "keepalive" for kind in kinds)):
                self.error_ending = (live, observations[-1]) \
                    if kinds and kinds[-1] == "error" else None
            frames.append(live)
            self._index += 1
        self._held = []
        return frames

    def _cut(self, end: int) -> Segment | None:
        size = end - self._seg_start
        if size <= 0:
            return None
        data = bytes(self._pending[:size])
        del self._pending[:size]
        segment = Segment(self._seg_start, data, hashlib.sha256(data).hexdigest())
        self._seg_start = end
        return segment


def _decidable(head: bytes) -> bool:
    """Whether ``detect_framing`` can judge ``head`` before 4 KiB have arrived."""
    if len(head) >= _AWS_PRELUDE_BYTES and detect_framing_is_aws(head):
        return True
    text = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    stripped = text.lstrip(b" \t\r\n")
    return stripped.startswith(b"[") or b"\n" in stripped or b"\r" in stripped


def detect_framing_is_aws(head: bytes) -> bool:
    try:
        return detect_framing(head[:_AWS_PRELUDE_BYTES * 2]) == "aws-eventstream"
    except TracestoreError:
        return False


__all__ = ["FeedResult", "LiveCapture", "LiveFrame", "Segment"]
