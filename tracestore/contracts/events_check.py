"""Seed 004's client-side event contract: known kinds, no empty chunk, exactly one
terminal event, nothing after it.

``check_events`` returns the broken rules in the seed's own words (the report a client
logs); ``EventRules`` is the same check fed one event at a time, returning a reason code
for the release projection.  A valid sequence says nothing about whether the answer is
right: that is the contract's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KINDS = ("chunk", "done", "error")
TERMINALS = ("done", "error")


class EventRules:
    """Incremental form: ``feed(kind, text)`` → a reason code, or None when the event is fine."""

    def __init__(self) -> None:
        self.ended = False

    def feed(self, kind: Any, text: Any) -> str | None:
        if kind not in KINDS:
            return "unknown_event_kind"
        if self.ended:
            return "event_after_terminal"
        if kind == "chunk" and not text:
            return "empty_chunk"
        if kind in TERMINALS:
            self.ended = True
        return None


def check_events(events: Iterable[tuple[Any, Any]]) -> list[str]:
    """``(kind, text)`` pairs in order → the broken rules; ``[]`` when the sequence is valid."""
    rules = EventRules()
    problems: list[str] = []
    for n, (kind, text) in enumerate(events):
        code = rules.feed(kind, text)
        if code == "unknown_event_kind":
            problems.append(f"event {n}: unknown kind {kind!r}")
        elif code == "event_after_terminal":
            problems.append(f"event {n}: {kind} after the stream ended")
        elif code == "empty_chunk":
            problems.append(f"event {n}: empty chunk")
    return problems + ([] if rules.ended else ["no terminal event (done or error)"])
