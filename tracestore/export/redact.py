"""Redaction at the export boundary: model text becomes its sha256.

What counts as model text is decided by the same normalizers the projections use, in two
passes over an attempt's frames:

1. ``learn``: every text an observation carries (text and reasoning deltas, final texts,
   tool arguments), and the texts the deltas add up to (per block and whole), because
   providers repeat the finished text in frames the normalizer does not read it from
   (OpenAI's ``response.content_part.done`` / ``output_item.done``);
2. ``event``: every string leaf of a frame's native object that equals a known text, or
   contains a known text of at least ``CONTAINED_MIN`` characters, becomes
   ``sha256:<hex>`` of the whole leaf.

Destination writes hold model text too (their sha256 is already on the event).  Pure: the
store is never changed; the caller feeds events (twice) in log order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from tracestore.errors import InputError
from tracestore.events import DestinationWritten, FrameReceived
from tracestore.providers.base import make_normalizer

#: A known text at least this long is also found inside longer strings (a short delta
#: such as " of" would match everywhere).
CONTAINED_MIN = 16


def digest(text: str) -> str:
    """``sha256:<hex>`` of the text's UTF-8 bytes; a lone surrogate (a valid JSON escape the
    store keeps faithfully) is hashed as its 3 surrogatepass bytes, as the projections do."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def replace_texts(value: Any, texts: set[str]) -> Any:
    """``value`` with every string leaf holding a known text replaced by its digest."""
    long_texts = [t for t in texts if len(t) >= CONTAINED_MIN]
    return _replace(value, texts, long_texts)


def _replace(value: Any, texts: set[str], long_texts: list[str]) -> Any:
    if isinstance(value, str):
        hit = value in texts or any(t in value for t in long_texts)
        return digest(value) if hit else value
    if isinstance(value, list):
        return [_replace(v, texts, long_texts) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, texts, long_texts) for k, v in value.items()}
    return value


class Redactor:
    """Call ``learn`` on every event first, then ``event`` on each to export."""

    def __init__(self) -> None:
        self._normalizers: dict[str, Any] = {}
        self._known: dict[str, set[str]] = {}
        self._blocks: dict[str, dict[Any, list[str]]] = {}

    def learn(self, event: Any) -> None:
        if not isinstance(event, FrameReceived):
            return
        normalizer = self._normalizers.get(event.attempt_id)
        if normalizer is None:
            try:
                normalizer = self._normalizers[event.attempt_id] = make_normalizer(event.api)
            except InputError:
                return
        known = self._known.setdefault(event.attempt_id, set())
        blocks = self._blocks.setdefault(event.attempt_id, {})
        for obs in normalizer.feed(event.native, event.event_name):
            known.update(t for t in (obs.text, obs.arguments) if t)
            if obs.kind in ("text_delta", "reasoning_delta") and obs.text:
                blocks.setdefault(obs.block, []).append(obs.text)
        joined = ["".join(parts) for parts in blocks.values()]
        known.update(t for t in (*joined, "".join(joined)) if t)

    def learn_all(self, events: Iterable[Any]) -> None:
        for event in events:
            self.learn(event)

    def texts(self, attempt_id: str | None) -> set[str]:
        return self._known.get(attempt_id or "", set())

    def event(self, event: Any) -> Any:
        """The event with its model text replaced (other events unchanged)."""
        if isinstance(event, FrameReceived):
            texts = self.texts(event.attempt_id)
            return event.model_copy(update={"native": replace_texts(event.native, texts)}) \
                if texts else event
        if isinstance(event, DestinationWritten) and event.destination != "progress":
            return event.model_copy(update={"text": digest(event.text)})
        return event

    def text(self, text: str | None) -> str | None:
        return None if text is None else digest(text)
