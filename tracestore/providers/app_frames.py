"""Seed-000 application frames → observations.

Frames are the application's own NDJSON records (not a vendor's):
``{"sequence": n, "kind": "content_delta", "binding_sha256": h, "text": t}``, then one
terminal ``{"kind": "done"}`` or ``{"kind": "error"|"cancel", "reason": r}``.  For
robustness ``type`` is accepted where ``kind`` is absent and ``delta`` where ``text`` is
absent; ``native_type`` always records the kind.

What this normalizer checks, and why it reports instead of raising: consecutive
sequence numbers from 1 (a gap or repeat means lost or replayed frames → ``error``
``sequence_gap``), the request binding (a frame bound to another request →
``error`` ``binding_mismatch``; against ``expected_binding`` when given, otherwise
against the first frame's binding), and frames after a terminal
(``frame_after_terminal``).  Each problem is an error observation placed before the
frame's own observation, so the evidence stays complete and the release projection
withholds the answer.  ``cancel`` is a (local) terminal; ``error`` is an error.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tracestore.providers.base import Normalizer, as_str, is_map, register, unknown
from tracestore.providers.observations import Observation

FRAME_KINDS = frozenset({"content_delta", "done", "error", "cancel"})


def complete_lines_only(data: bytes, frames: list[Any], truncation: Any) -> tuple[list[Any], Any]:
    """Seed 000: "only a complete line is parsed as an application frame".  The NDJSON
    decoder emits an unterminated last line that parses as whole JSON (many producers omit
    the final newline); for application frames that line is not a frame but a
    ``truncated_frame`` at its offset, so no answer is accepted from it."""
    from tracestore.wire.frames import Truncation

    if truncation is not None or not frames or data.endswith(b"\n"):
        return frames, truncation
    last = frames[-1]
    if last.offset + last.length != len(data):
        return frames, truncation
    return frames[:-1], Truncation(last.offset, last.length, "truncated_frame")


def binding_digest(binding: Any) -> str:
    """The seed-000 binding hash: sha256 of canonical JSON (sorted keys, compact, UTF-8)."""
    canonical = json.dumps(binding, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class AppFramesNormalizer(Normalizer):
    """Normalizer for ``app-frames``; optionally bound to an expected request binding hash."""

    def __init__(self, expected_binding: str | None = None) -> None:
        self._expected = expected_binding
        self._last: int = 0
        self._terminated = False

    def feed(self, native: Any, event_name: str | None = None) -> list[Observation]:
        if not is_map(native):
            return unknown(event_name or "<non-object>")
        kind = as_str(native.get("kind")) if "kind" in native else as_str(native.get("type"))
        if kind not in FRAME_KINDS:
            return unknown(kind or "<untyped>")
        raw_seq = native.get("sequence")
        seq = raw_seq if isinstance(raw_seq, int) and not isinstance(raw_seq, bool) else None
        out: list[Observation] = []
        if seq is None or seq != self._last + 1:
            out.append(Observation("error", kind, error_code="sequence_gap", sequence=seq,
                                   message=f"expected sequence {self._last + 1}, got {raw_seq!r}"))
        if seq is not None:
            self._last = seq
        binding = as_str(native.get("binding_sha256"))
        if self._expected is None and binding is not None:
            self._expected = binding
        if binding != self._expected:
            out.append(Observation("error", kind, error_code="binding_mismatch", sequence=seq,
                                   message="frame is bound to a different request"))
        if self._terminated:
            out.append(Observation("error", kind, error_code="frame_after_terminal", sequence=seq,
                                   message="frame after the stream's terminal frame"))
        reason = as_str(native.get("reason"))
        if kind == "content_delta":
            text = native.get("text") if "text" in native else native.get("delta")
            out.append(Observation("text_delta", kind, text=as_str(text), sequence=seq))
        elif kind == "done":
            self._terminated = True
            out.append(Observation("terminal", kind, status="done", sequence=seq))
        elif kind == "cancel":
            self._terminated = True
            out.append(Observation("terminal", kind, status="cancel", stop_reason=reason,
                                   sequence=seq))
        else:
            self._terminated = True
            out.append(Observation("error", kind, error_code=reason, message=reason, sequence=seq))
        return out


register("app-frames")(AppFramesNormalizer)
