"""Issue 11, item 7: usage combined per provider, absent stays absent, and the review
record says how each provider's usage records were read (cumulative or final)."""

from __future__ import annotations

import json

from conftest import planned_real
from tracestore.events import StoredEvent
from tracestore.projections import project_attempt
from tracestore.review import fill_record, load_template


ingested = planned_real


def native_usage(events: list[StoredEvent], etype: str) -> tuple[int, dict]:
    for e in events:
        native = getattr(e.event, "native", None)
        if isinstance(native, dict) and native.get("type") == etype:
            usage = native["message"]["usage"] if etype == "message_start" else native["usage"]
            return e.position, usage
    raise AssertionError(etype)


def test_anthropic_usage_merges_message_start_and_message_delta() -> None:
    events = ingested("anthropic/text-basic.sse")
    start_at, start = native_usage(events, "message_start")
    delta_at, delta = native_usage(events, "message_delta")
    view = project_attempt(events, "a")
    assert set(start) - set(delta)  # keys only message_start reports: what replacing lost
    assert dict(view.usage or {}) == {**start, **delta}
    assert view.usage_positions == (start_at, delta_at)
    assert view.usage["output_tokens"] == delta["output_tokens"]  # cumulative, not summed


def test_gemini_running_totals_keep_the_last_record_only() -> None:
    events = ingested("gemini/sse-text.sse")
    records = [(e.position, e.event.native["usageMetadata"]) for e in events
               if isinstance(getattr(e.event, "native", None), dict)
               and "usageMetadata" in e.event.native]
    assert len(records) > 1
    view = project_attempt(events, "a")
    assert (dict(view.usage or {}), view.usage_positions) == (records[-1][1], (records[-1][0],))


def test_absent_usage_stays_absent() -> None:
    events = ingested("openai-responses/error-insufficient-quota.chunks.txt")
    view = project_attempt(events, "a")
    assert (view.usage, view.usage_positions) == (None, ())


def test_the_review_says_how_usage_was_read() -> None:
    events = ingested("anthropic/text-basic.sse")
    start_at, start = native_usage(events, "message_start")
    delta_at, delta = native_usage(events, "message_delta")
    record = fill_record(load_template("application-record"), events, "a", version="x")
    field = next(f for f in record.fields if f.name == "transport_accounting")
    merged = ", ".join(f"{k}={v}" for k, v in {**start, **delta}.items())
    drain = events[-1].position
    assert field.value == (
        f"Clean drain at #{drain}; usage {merged} at #{start_at}, #{delta_at} (merged "
        "message_start ⊕ message_delta; message_delta counts are cumulative, not increments)")
    assert field.evidence == (start_at, delta_at, drain)
    json.dumps(record.to_dict())
