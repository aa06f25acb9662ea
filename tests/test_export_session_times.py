"""A capture that carries its own arrival times (a realtime session's ``t`` per message)
keeps them: its exported span runs from the first to the last message's time, with the
first text at its own time -- never the ingest command's instant."""

from __future__ import annotations

import json

from tracestore.events import TaskRule
from tracestore.export.otlp import build_spans
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.store.log import EventStore



def _at(ms: int) -> str:
    return f"2026-12-04T10:00:{ms // 1000:02d}.{ms % 1000:03d}000+00:00"


def _session(times: list[str | None]) -> bytes:
    messages = [
        {"type": "response.created", "response": {"id": "r1", "status": "in_progress"}},
        {"type": "response.output_text.delta", "response_id": "r1", "output_index": 0,
         "delta": "Par"},
        {"type": "response.output_text.delta", "response_id": "r1", "output_index": 0,
         "delta": "is."},
        {"type": "response.done", "response": {"id": "r1", "status": "completed",
                                               "usage": {"total_tokens": 3}}}]
    return "".join(json.dumps({"dir": "server", "t": t, "data": m}) + "\n"
                   for t, m in zip(times, messages)).encode()


def _span(data: bytes):  # noqa: ANN202 - an SDK ReadableSpan
    with EventStore("sqlite://") as store:
        ingest_input(store, data, IngestOptions(filename="session.jsonl", trace_id="s",
                                                task=TaskRule(answer_patterns=("",))))
        spans = build_spans(store.read())
    return next(s for s in spans if s.name.startswith("chat"))


def test_a_session_with_arrival_times_exports_them() -> None:
    span = _span(_session([_at(0), _at(120), _at(340), _at(900)]))
    assert span.attributes["tracestore.timing"] == "recorded"
    assert (span.end_time - span.start_time) / 1e6 == 900
    first = next(e for e in span.events if e.name == "First Token Stream Event")
    assert (first.timestamp - span.start_time) / 1e6 == 120


def test_a_session_without_them_is_one_instant() -> None:
    span = _span(_session([None, None, None, None]))
    assert span.attributes["tracestore.timing"] == "not recorded"
    assert span.end_time == span.start_time
