"""Exchanges from a store: every recorded live attempt with a request and raw bytes, played
back as the provider once answered it.

An attempt becomes an exchange when its ``attempt.started`` recorded the request's
``endpoint`` and the store holds its bytes (``capture.segment`` events, joined in offset
order, or one ``capture.stored`` blob).  Its ``request`` is the recorded body when the
recorder kept the prompt (``Recorder(record_prompts=True)``): the recorded settings
without what the recorder added (``endpoint``, ``client``).  Without the prompt, or with a
prompt the recorder had to cut, the recorded body is not the body that was sent, so the
exchange answers any body on its path rather than refuse the very request it recorded.
Fields a recording never keeps (``tools``, ``metadata`` …) are left out of the comparison
by name (``ignore_fields``), so the scenario says what it does not check.
"""

from __future__ import annotations

from typing import Any

from tracestore.errors import InputError
from tracestore.mock.scenario import CONTENT_TYPES, Exchange

#: Keys the recorder adds to a request's settings that the client never sent.
ADDED_KEYS = frozenset({"endpoint", "client"})
#: Framing → the content type the provider served it with.
FRAMING_TYPES = {framing: kind for kind, framing in (
    ("text/event-stream", "sse"), ("application/x-ndjson", "ndjson"),
    ("application/json", "json-array"), ("application/vnd.amazon.eventstream",
                                         "aws-eventstream"))}


def exchanges_from_store(store: Any, trace: str | None = None,
                         ) -> tuple[list[Exchange], list[bytes]]:
    """The exchanges (and their bodies) of ``store``'s recorded attempts, in the order the
    attempts started; only ``trace``'s with a trace id."""
    from tracestore.recording.httpx_capture import _CONTENT_FIELDS
    from tracestore.recording.prompts import CUT_KEY, PROMPT_FIELDS

    unrecorded = sorted(_CONTENT_FIELDS - PROMPT_FIELDS)
    exchanges: list[Exchange] = []
    bodies: list[bytes] = []
    for stored in store.read(trace_id=trace) if trace else store.read():
        started = stored.event
        if stored.type != "attempt.started" or not isinstance(started.request, dict):
            continue
        endpoint = started.request.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            continue
        played = _bytes(store, started.attempt_id)
        if played is None:
            continue
        body, framing = played
        sent = {k: v for k, v in started.request.items() if k not in ADDED_KEYS}
        if ":" in endpoint.rsplit("/", 1)[-1]:
            sent.pop("model", None)  # Gemini names the model in the path, not the body
        with_prompt = bool(PROMPT_FIELDS & set(sent)) and CUT_KEY not in sent
        exchanges.append(Exchange.model_validate({
            "path": endpoint, "capture": f"store:{started.attempt_id}",
            "content_type": FRAMING_TYPES.get(framing, CONTENT_TYPES[".sse"]),
            "request": sent if with_prompt else None,
            "ignore_fields": unrecorded if with_prompt else []}))
        bodies.append(body)
    if not exchanges:
        where = f"trace {trace}" if trace else "the store"
        raise InputError(f"{where} holds no recorded attempt with a request endpoint and "
                         "stored bytes to play", code="mock_store_no_exchanges")
    return exchanges, bodies


def _bytes(store: Any, attempt_id: str) -> tuple[bytes, str] | None:
    """The attempt's raw bytes and framing: its segments joined in order, else its whole
    capture; None when the store holds neither (or a blob of it is missing)."""
    segments, whole = [], None
    for stored in store.read(attempt_id=attempt_id):
        if stored.type == "capture.segment":
            segments.append(stored.event)
        elif stored.type == "capture.stored" and whole is None:
            whole = stored.event
    if segments:
        parts, at = [], 0
        for segment in sorted(segments, key=lambda s: s.offset):
            if segment.offset != at:
                raise InputError(f"attempt {attempt_id}: its capture segments leave a gap "
                                 f"at byte {at}", code="mock_store_segment_gap")
            blob = store.get_blob(segment.sha256)
            if blob is None:
                return None
            parts.append(blob)
            at += len(blob)
        return b"".join(parts), segments[0].framing
    if whole is not None:
        blob = store.get_blob(whole.sha256)
        return None if blob is None else (blob, whole.framing)
    return None


__all__ = ["exchanges_from_store"]
