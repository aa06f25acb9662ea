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

from tracestore.errors import AttemptClosedError, InputError, TracestoreError, WireError
from tracestore.providers.base import PROVIDER_NAMES, Normalizer, make_normalizer
from tracestore.providers.capture import (
    DETECT_NATIVES, INVALID_BYTES, PARTIAL_PROVIDERS, detect_provider, shape_vote,
)
from tracestore.recording.natives import live_native_of
from tracestore.providers.error_body import MAX_ERROR_BODY_BYTES, whole_error_body
from tracestore.wire import DETECT_HEAD_BYTES, FRAMINGS, detect_framing, make_decoder
from tracestore.wire.base import Decoder
from tracestore.wire.frames import Truncation
from tracestore.wire.limits import MAX_FRAME_BYTES

_AWS_PRELUDE_BYTES = 12

#: The end marker OpenAI-compatible dialects send after the stream (not a native terminal).
DONE_MARKER = "[DONE]"


@dataclass(frozen=True, slots=True)
class Segment:
    offset: int
    "Absolute offset of the first byte in the stream."
    data: bytes
    sha256: str


@dataclass(slots=True)  # not frozen: one is made per frame (frozen costs 4x); never changed
class LiveFrame:
    index: int
    offset: int
    "Absolute offset in the stream (the segment holding it is in the same FeedResult)."
    length: int
    event_name: str | None
    native: Any
    kinds: tuple[str, ...]
    observed: Any = None
    """The normalizer's observations of the frame (their kinds are ``kinds``), lent to
    the recorder's decision planner, which folds them instead of normalizing again."""


@dataclass(frozen=True, slots=True)
class FeedResult:
    segment: Segment | None
    frames: list[LiveFrame] = field(default_factory=list)
    rejected: Rejection | None = None
    "The stream turned invalid after these frames (recorded as ``frame.rejected``)."

    @property
    def decisive(self) -> bool:
        """Whether these frames may make a release decision final (terminal or error)."""
        return self.rejected is not None or any(
            k in ("terminal", "error") for f in self.frames for k in f.kinds)


@dataclass(frozen=True, slots=True)
class Rejection:
    """Where a recognized stream turned invalid (seed 000: bad UTF-8, a CRC mismatch)."""

    code: str
    offset: int | None
    index: int
    "The frame index the rejected bytes would have had (the frames before it are kept)."
    detail: str


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
        self._holding = False         # bytes held: they may be a whole-body JSON error
        self._invalid: WireError | None = None  # the fault that ended decoding (kept prefix)
        self.rejection: Rejection | None = None
        self._ends_with_newline = False
        self._index = 0
        self._hash = hashlib.sha256()
        self.size = 0
        self.terminal_seen = False
        self.error_ending: tuple[LiveFrame, Any] | None = None
        "The native error frame the bytes so far end with (keepalives after it skipped)."
        self.end_marker: LiveFrame | None = None
        "The last frame carrying the dialect's own end marker (``[DONE]``), if any came."
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
            if self.end_marker is not None:  # the same words as ingest's capture_drain
                marker = self.end_marker
                return "eof", (f"the dialect's end marker [DONE] arrived (frame {marker.index} "
                               f"at byte {marker.offset}) but no native terminal "
                               "(finish_reason) came")
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
            raise AttemptClosedError("this capture is closed; a drained attempt takes no "
                                     "more bytes", code="attempt_closed")

    def _feed(self, data: bytes) -> FeedResult:
        self._hash.update(data)
        self.size += len(data)
        self._pending += data
        self._ends_with_newline = data.endswith(b"\n") if data else self._ends_with_newline
        if self.rejection is not None:  # bytes after the fault: stored, never frames
            return FeedResult(self._cut(self._seg_start + len(self._pending)))
        if self._decoder is None:
            if not self._start_decoder(final=False):
                return FeedResult(None)
            self._holding = self._may_be_error_body()
        elif not self._holding:
            return self._emit(self._decode(data), final=False)
        if self._holding:
            self._holding = self._may_be_error_body()
            if self._holding:
                return FeedResult(None)
        return self._emit(self._decode(bytes(self._pending)), final=False)

    def _close(self) -> FeedResult:
        if self.rejection is not None:
            return FeedResult(self._cut(self._seg_start + len(self._pending)))
        wire: list[Any] = []
        if self._decoder is None:
            if not self._start_decoder(final=True):
                return self._emit([], final=True)  # nothing that could be a frame arrived
            self._holding = self._may_be_error_body()
            if not self._holding:  # the bytes were held until the framing could be told
                wire = self._decode(bytes(self._pending))
        assert self._decoder is not None
        if self._holding:
            self._holding = False
            whole = whole_error_body(bytes(self._pending), self.framing or "")
            if whole is not None:  # as ingest reads it: one error frame spanning the body
                return self._emit(list(whole), final=True)
            wire = self._decode(bytes(self._pending))
        if self._invalid is None:
            wire = [*wire, *self._decode(None)]
            self.truncation = self._decoder.truncation
        return self._emit(wire, final=True)

    def _decode(self, data: bytes | None) -> list[Any]:
        """The decoder's frames of ``data`` (``None``: its end).  A recognized stream that
        turns invalid (bad UTF-8, a CRC mismatch) keeps the frames before the fault, as
        ``ingest`` does (seed 000): the rejection is recorded at its byte and the
        rest of the body is stored unread.  With no frame before the fault it is refused."""
        assert self._decoder is not None
        try:
            return self._decoder.feed(data) if data is not None else self._decoder.close()
        except WireError as exc:
            if exc.code not in INVALID_BYTES or not (self._index or self._held or exc.frames):
                raise
            self._invalid = exc
            return list(exc.frames)

    def _may_be_error_body(self) -> bool:
        """Whether the bytes so far may be a pretty-printed whole-body JSON error, which
        ``ingest`` reads as one frame (``providers/error_body.py``; NDJSON framing would
        refuse its first line ``{``): such bytes are held, at most ``MAX_ERROR_BODY_BYTES``,
        until the body ends or shows it is something else."""
        if self.framing != "ndjson" or len(self._pending) > MAX_ERROR_BODY_BYTES:
            return False
        stripped = bytes(self._pending).lstrip(b"\xef\xbb\xbf \t\r\n")
        line, newline, _ = stripped.partition(b"\n")
        return line.strip() == b"{" or (not newline and line.strip() in (b"", b"{"))

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
        for frame in wire:
            try:
                self._held.append((frame, *live_native_of(frame)))
            except WireError as exc:
                if not self._keeps_prefix_of(exc):
                    raise
                break
        if final and self._invalid is None:
            self._complete_lines_only()
        if self.api is None:
            try:
                self._detect(final or self._invalid is not None)
            except InputError:
                if self._invalid is not None:  # not a recognizable stream: refused whole
                    raise self._invalid from None
                raise
        elif self._voted < DETECT_NATIVES:
            self._check_api()
        frames: list[LiveFrame] = []
        if self.api is not None and self._held:
            frames = self._normalize()
        if self._invalid is not None and self.rejection is None:
            fault = self._invalid
            self.rejection = Rejection(fault.code, fault.offset, self._index, fault.message)
            return FeedResult(self._cut(self._seg_start + len(self._pending)), frames,
                              self.rejection)
        if final and self.truncation is not None and self.api in PARTIAL_PROVIDERS:
            # Seed 000 keeps an application stream that ends inside a frame as invalid, with
            # the seed's own code, as ingest records it.
            cut = self.truncation
            self.rejection = Rejection(cut.code, cut.offset, self._index,
                                       "input ended inside a frame")
            return FeedResult(self._cut(self._seg_start + len(self._pending)), frames,
                              self.rejection)
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

    def _keeps_prefix_of(self, exc: WireError) -> bool:
        """Seed 000 (as ingest): an application-frames stream keeps its frames before one
        that is not strict JSON and is held ``invalid_frame_json``; other providers refuse."""
        if not (self._held or self._index):
            return False
        if self.api is None:
            try:
                self._detect(True)
            except InputError:
                return False
        if self.api not in PARTIAL_PROVIDERS:
            return False
        code = "invalid_frame_json" if exc.code == "invalid_json" else exc.code
        self._invalid = WireError(exc.message, code=code, offset=exc.offset)
        return True

    def _complete_lines_only(self) -> None:
        """Seed 000 (as ingest): only a complete line is an application frame."""
        if self.framing != "ndjson" or self.truncation is not None or not self._held:
            return
        if self.api is None:
            self._detect(True)
        last = self._held[-1][0]
        if self.api in PARTIAL_PROVIDERS and not self._ends_with_newline \
                and last.offset + last.length == self.size:
            self._held.pop()
            self.truncation = Truncation(last.offset, last.length, "truncated_frame")

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
        feed = self._normalizer.feed
        for frame, name, native in self._held:
            observations = feed(native, name)
            kinds = (observations[0].kind,) if len(observations) == 1 \
                else tuple([o.kind for o in observations])
            live = LiveFrame(self._index, frame.offset, frame.length, name, native, kinds,
                             observations)
            if "terminal" in kinds:
                self.terminal_seen = True
            if "keepalive" in kinds:
                if any(o.kind == "keepalive" and o.native_type == DONE_MARKER
                       for o in observations):
                    self.end_marker = live
                if not all(kind == "keepalive" for kind in kinds):
                    self.error_ending = (live, observations[-1]) \
                        if kinds[-1] == "error" else None
            else:
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


__all__ = ["FeedResult", "LiveCapture", "LiveFrame", "Rejection", "Segment"]
