"""Redaction at the export boundary: model text becomes its sha256.

What counts as model text is decided by the same normalizers the projections use: every
text an observation carries (text and reasoning deltas, final texts, tool arguments) is
looked up in the frame's native object and each string leaf equal to it is replaced by
``sha256:<hex>``.  Destination writes hold model text too (their sha256 is already on the
event).  Pure: events in, redacted events out; the store is never changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from tracestore.errors import InputError
from tracestore.events import DestinationWritten, FrameReceived, StoredEvent
from tracestore.providers.base import make_normalizer


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def replace_texts(value: Any, texts: set[str]) -> Any:
    if isinstance(value, str):
        return digest(value) if value in texts else value
    if isinstance(value, list):
        return [replace_texts(v, texts) for v in value]
    if isinstance(value, dict):
        return {k: replace_texts(v, texts) for k, v in value.items()}
    return value


class Redactor:
    """Feed events in log order (normalizers keep per-attempt state across frames)."""

    def __init__(self) -> None:
        self._normalizers: dict[str, Any] = {}

    def texts(self, frame: FrameReceived) -> set[str]:
        """The model texts the normalizer reads from this frame."""
        normalizer = self._normalizers.get(frame.attempt_id)
        if normalizer is None:
            try:
                normalizer = self._normalizers[frame.attempt_id] = make_normalizer(frame.api)
            except InputError:
                return set()
        found = set()
        for obs in normalizer.feed(frame.native, frame.event_name):
            found.update(t for t in (obs.text, obs.arguments) if t)
        return found

    def event(self, event: Any) -> Any:
        """The event with its model text replaced (other events unchanged)."""
        if isinstance(event, FrameReceived):
            texts = self.texts(event)
            return event.model_copy(update={"native": replace_texts(event.native, texts)}) \
                if texts else event
        if isinstance(event, DestinationWritten) and event.destination != "progress":
            return event.model_copy(update={"text": digest(event.text)})
        return event

    def text(self, text: str | None) -> str | None:
        return None if text is None else digest(text)


def redact_events(events: Iterable[StoredEvent]) -> Iterator[tuple[StoredEvent, Any]]:
    """(stored event, redacted payload model) in order."""
    redactor = Redactor()
    for stored in events:
        yield stored, redactor.event(stored.event)
