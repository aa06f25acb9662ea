"""Gemini safety stops and blocked prompts are refusals (seed 002: "safety enums →
refusal; promptFeedback without candidates → refusal"): status ``refused`` with a stable
reason code, never released, decided at the refusing chunk."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tracestore.events import StoredEvent, TaskRule
from tracestore.ingest import plan_ingest
from tracestore.projections import decide_release, project_attempt
from tracestore.projections.envelope import project_envelope
from tracestore.projections.profiles import GEMINI_REFUSAL_FINISH_REASONS

SYN = Path(__file__).resolve().parents[1] / "fixtures" / "synthetic" / "gemini"
ANY_TEXT = TaskRule(answer_patterns=("",))
STAMP = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _events(body: bytes, name: str = "capture.sse") -> list[StoredEvent]:
    plan = plan_ingest(body, filename=name, attempt_id="a", task=ANY_TEXT)
    assert plan.api == "gemini"
    return [StoredEvent(i + 1, n.id, n.stream, 1, n.event.type, 1, STAMP, n.trace_id,
                        n.event, "") for i, n in enumerate(plan.events)]


def _chunk(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\r\n\r\n"


def _finish(reason: str) -> bytes:
    return (_chunk({"candidates": [{"content": {"parts": [{"text": "Here is"}],
                                                "role": "model"}, "index": 0}]})
            + _chunk({"candidates": [{"finishReason": reason, "index": 0}],
                      "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 5}}))


def test_safety_stop_recording_is_refused() -> None:
    events = _events((SYN / "sse-safety.sse").read_bytes(), "sse-safety.sse")
    d = decide_release(events, "a")
    assert (d.status, d.reasons, d.eligible, d.answer) == (
        "refused", ("native_refusal",), False, None)
    view = project_attempt(events, "a")
    assert view.terminal is not None and view.terminal.stop_reason == "SAFETY"
    assert d.decided_at_position == view.terminal.position
    envelope = project_envelope(d, view)
    assert envelope is not None
    assert (envelope.state, envelope.code, envelope.retryable) == (
        "error", "native_refusal", False)
    assert "Here is" not in envelope.text  # the text before the safety stop is never shown


def test_blocked_prompt_is_refused() -> None:
    events = _events((SYN / "sse-prompt-blocked.sse").read_bytes(), "sse-prompt-blocked.sse")
    d = decide_release(events, "a")
    assert (d.status, d.reasons, d.answer) == ("refused", ("prompt_blocked",), None)
    view = project_attempt(events, "a")
    assert view.terminal is not None
    assert (view.terminal.native_type, view.terminal.stop_reason) == ("promptFeedback", "SAFETY")


@pytest.mark.parametrize("reason", ["OTHER", "BLOCKLIST", "BLOCK_REASON_UNSPECIFIED",
                                    "PROHIBITED_CONTENT", "IMAGE_SAFETY"])
def test_every_block_reason_is_a_blocked_prompt(reason: str) -> None:
    body = _chunk({"promptFeedback": {"blockReason": reason},
                   "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}})
    d = decide_release(_events(body), "a")
    assert (d.status, d.reasons) == ("refused", ("prompt_blocked",))


@pytest.mark.parametrize("reason", GEMINI_REFUSAL_FINISH_REASONS)
def test_every_safety_finish_reason_is_a_refusal(reason: str) -> None:
    d = decide_release(_events(_finish(reason)), "a")
    assert (d.status, d.reasons, d.answer) == ("refused", ("native_refusal",), None)


@pytest.mark.parametrize("reason", ["LANGUAGE", "OTHER", "MALFORMED_FUNCTION_CALL",
                                    "FINISH_REASON_UNSPECIFIED", "SOMETHING_NEW"])
def test_other_finish_reasons_stay_unknown(reason: str) -> None:
    d = decide_release(_events(_finish(reason)), "a")
    assert (d.status, d.reasons) == ("held", ("unknown_stop_reason",))


def test_seed_documented_enum_is_covered() -> None:
    assert {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
            "IMAGE_SAFETY"} <= set(GEMINI_REFUSAL_FINISH_REASONS)


def test_stop_still_releases() -> None:
    d = decide_release(_events(_finish("STOP")), "a")
    assert (d.status, d.answer) == ("released", "Here is")
