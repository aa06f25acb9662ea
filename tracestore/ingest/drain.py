"""The drain a capture's bytes show, from a few facts gathered frame by frame (pure).

``capture_drain`` reads them off a whole ``CaptureReading``; the streamed capture path
(``ingest.capture_fast``) gathers the same facts with ``DrainFacts.see`` while it decodes,
holding nothing per frame.  Both end in ``drain_of``, so the two paths cannot word a drain
differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracestore.providers.observations import Observation
from tracestore.wire.frames import Truncation

Outcome = Literal["clean", "eof", "error", "reset"]


@dataclass
class DrainFacts:
    """What the drain depends on, kept current frame by frame."""

    truncation: Truncation | None = None
    terminal_seen: bool = False
    "A native terminal observation occurred."
    last: tuple[int, int, Observation | None] | None = None
    """The last frame that is not all keepalives: (index, offset, its closing error
    observation, or None when its last observation is no error)."""
    done: tuple[int, int] | None = None
    "The last frame carrying the dialect's ``[DONE]`` marker: (index, offset)."

    def see(self, index: int, offset: int, observations: Sequence[Observation]) -> None:
        only_keepalives = bool(observations)
        for obs in observations:
            kind = obs.kind
            if kind == "keepalive":
                if obs.native_type == "[DONE]":
                    self.done = (index, offset)
                continue
            only_keepalives = False
            if kind == "terminal":
                self.terminal_seen = True
        if not only_keepalives:
            closing = observations[-1] if observations and observations[-1].kind == "error" \
                else None
            self.last = (index, offset, closing)


def drain_of(facts: DrainFacts) -> tuple[Outcome, str | None]:
    """The drain the bytes show: clean only when the capture ended after a native terminal
    (or right after a whole native error frame, the provider's own last word)."""
    truncation = facts.truncation
    if truncation is not None:
        return "eof", (f"input ended inside a frame at byte {truncation.offset} "
                       f"({truncation.code})")
    if facts.terminal_seen:
        return "clean", None
    index, offset, error = facts.last or (0, 0, None)
    if error is not None:
        name = error.error_code or error.native_type
        return "clean", (f"input ended after the native error frame {name} "
                         f"(frame {index} at byte {offset})")
    if facts.done is not None:
        index, offset = facts.done
        return "eof", (f"the dialect's end marker [DONE] arrived (frame {index} at "
                       f"byte {offset}) but no native terminal (finish_reason) came")
    return "eof", "input ended before the native terminal"


def capture_drain(reading: Any) -> tuple[Outcome, str | None]:
    """``drain_of`` a whole ``providers.capture.CaptureReading``."""
    facts = DrainFacts(truncation=reading.truncation)
    for frame in reading.frames:
        facts.see(frame.index, frame.offset, frame.observations)
    return drain_of(facts)


__all__ = ["DrainFacts", "Outcome", "capture_drain", "drain_of"]
