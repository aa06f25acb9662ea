"""Issue 19: an error body's envelope says whether a retry can help, by the provider's own
error type (a retry button on an invalid key only fails again)."""

from __future__ import annotations

import json

import pytest

from tracestore.projections.envelope import project_envelope
from tracestore.events import StoredEvent, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections import decide_release
from tracestore.projections.attempt import project_attempt

from conftest import FIXTURES

WILD = FIXTURES / "wild" / "http-error"
ANY_TEXT = TaskRule(answer_patterns=(r"\S",))


def envelope_of(data: bytes, api: str) -> tuple[str, dict]:
    plan = plan_ingest(data, filename="body.json", attempt_id="a", provider=api,
                       task=ANY_TEXT)
    events = [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1,
                          "2026-12-01T00:00:00+00:00", n.trace_id, n.event, "")
              for i, n in enumerate(plan.events)]
    decision = decide_release(events, "a")
    return decision.status, project_envelope(decision, project_attempt(events, "a")).to_dict()


@pytest.mark.parametrize("name", [
    "mira__authentication_error_stream-anthropic_claude_sonnet_4_0.json",
    "mira__model_not_found_stream-anthropic_claude_sonnet_4_0.json",
])
def test_an_anthropic_error_a_retry_cannot_fix_is_not_retryable(name: str) -> None:
    status, envelope = envelope_of((WILD / name).read_bytes(), "anthropic-messages")
    assert status == "failed"
    assert (envelope["state"], envelope["code"], envelope["retryable"]) == (
        "error", "stream_error", False)


@pytest.mark.parametrize("kind,retryable", [
    ("overloaded_error", True), ("rate_limit_error", True), ("api_error", True),
    ("authentication_error", False), ("permission_error", False),
    ("invalid_request_error", False), ("not_found_error", False),
])
def test_retryability_follows_the_anthropic_error_type(kind: str, retryable: bool) -> None:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": "m"}})
    status, envelope = envelope_of(f"event: error\ndata: {body}\n\n".encode(),
                                   "anthropic-messages")
    assert (status, envelope["retryable"]) == ("failed", retryable)
