"""Seed 000's application-frame rules, as a pure incremental checker.

Each frame is checked in the seed consumer's order: nothing after the terminal, an
object with exactly the keys of its kind, consecutive sequence numbers from 1, the
request binding, the frame count; then non-empty text deltas within the content bound,
or a terminal reason that is bounded, non-empty text.  Byte bounds are the seed's: a
frame is measured WITHOUT its line end (a frame of exactly ``frame_bytes`` is accepted),
the stream total counts every byte received, line ends included (exactly
``total_bytes`` is accepted).  A captured frame's ``length`` already includes its line end
(only complete lines are frames: an unterminated last line is ``truncated_frame``); a
replayed frame is measured as its compact JSON encoding plus the newline that frames it.
The first failure is final: the consumer stops reading there.

The binding is checked only when the request binding is recorded: without it the frame's
``binding_sha256`` can be compared with nothing, and the checker says so
(``binding_checked`` False) instead of calling it checked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class FrameLimits:
    """Bounds of an application frame stream (seed 000's consumer): over a bound the stream
    is invalid — rejected, never cut."""

    frame_bytes: int = 8192
    "One frame's encoded size without its line end (``frame_byte_limit``)."
    total_bytes: int = 65536
    "All frames together, newlines included (``stream_byte_limit``)."
    content_chars: int = 16384
    "Characters of provisional content (``content_limit``)."
    frames: int = 1000
    "Number of frames (``frame_count_limit``)."
    reason_chars: int = 256
    "A terminal frame's reason (``invalid_terminal_reason``)."


_KEYS: dict[str, frozenset[str]] = {
    "content_delta": frozenset({"sequence", "kind", "binding_sha256", "text"}),
    "done": frozenset({"sequence", "kind", "binding_sha256"}),
    "error": frozenset({"sequence", "kind", "binding_sha256", "reason"}),
    "cancel": frozenset({"sequence", "kind", "binding_sha256", "reason"}),
}


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encoded_size(native: Any) -> int:
    """Bytes of a frame as seed 000 serializes it: compact JSON, UTF-8, one newline."""
    body = json.dumps(native, ensure_ascii=False, separators=(",", ":"))
    return len(body.encode("utf-8", "surrogatepass")) + 1


class FrameChecker:
    """Feed frames in order; ``check`` returns the first failure's code, else None."""

    def __init__(self, limits: FrameLimits, binding_sha256: str | None) -> None:
        self.limits = limits
        self.expected = binding_sha256
        self.frames = 0
        self.total_bytes = 0
        self.content_chars = 0
        self.terminated = False

    @property
    def binding_checked(self) -> bool:
        return self.expected is not None

    def check(self, native: Any, length: int | None) -> str | None:
        size = length if length is not None else encoded_size(native)  # line end included
        self.total_bytes += size
        if size - 1 > self.limits.frame_bytes:
            return "frame_byte_limit"
        if self.total_bytes > self.limits.total_bytes:
            return "stream_byte_limit"
        if self.terminated:
            return "frame_after_terminal"
        if not isinstance(native, Mapping):
            return "invalid_frame_schema"
        kind = native.get("kind")
        if not isinstance(kind, str) or _KEYS.get(kind) != frozenset(native):
            return "invalid_frame_schema"
        sequence = native["sequence"]
        if type(sequence) is not int or sequence != self.frames + 1:
            return "invalid_sequence"
        if self.expected is not None and native["binding_sha256"] != self.expected:
            return "frame_request_mismatch"
        self.frames += 1
        if self.frames > self.limits.frames:
            return "frame_count_limit"
        if kind == "content_delta":
            return self._delta(native["text"])
        reason = native.get("reason")
        if kind != "done" and (not isinstance(reason, str) or not reason
                               or len(reason) > self.limits.reason_chars or not _utf8(reason)):
            return "invalid_terminal_reason"
        self.terminated = True
        return None

    def _delta(self, text: Any) -> str | None:
        if not isinstance(text, str) or not text or not _utf8(text):
            return "invalid_content_delta"
        self.content_chars += len(text)
        if self.content_chars > self.limits.content_chars:
            return "content_limit"
        return None
