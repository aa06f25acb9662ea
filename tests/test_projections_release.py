"""Focused release-decision tests: one per reason code and per ordering boundary."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracestore.errors import NotFound
from tracestore.events import (
    AttemptStarted, FrameReceived, LocalStopped, StoredEvent, TaskRule, TraceOpened,
    TransportDrained,
)
from tracestore.projections import PROFILES, decide_release, project_attempt
from tracestore.projections import reasons as R
from tracestore.projections.release import decide_with_view
from tracestore.projections.profiles import DEFAULT_PROFILE_FOR_API, BEDROCK_CONVERSE_TEXT
from tracestore.ingest.replay import parse_scenario, preview_replay

ROOT = Path(__file__).resolve().parents[1]
TASK = json.loads((ROOT / "fixtures" / "seed003" / "t1.json").read_text())["task"]
ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."
START = {"messageStart": {"role": "assistant"}}
D1 = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {
    "text": "The public desk opens Wednesday from 09:00 to 17:00 UTC. "}}}
D2 = {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "It is closed Thursday."}}}
BSTOP = {"contentBlockStop": {"contentBlockIndex": 0}}
END = {"messageStop": {"stopReason": "end_turn"}}
META = {"metadata": {"usage": {"inputTokens": 30, "outputTokens": 20, "totalTokens": 50}}}
T1 = [START, D1, D2, BSTOP, END, META]
BR = "bedrock-converse-stream"


def run(*steps: Any, task: Any = TASK, profile: str | None = None,
        api: str = BR) -> list[StoredEvent]:
    """Replay one attempt ``a`` on reader ``r``: natives are events, strings are locals."""
    body: list[dict[str, Any]] = [{"open": "r", "attempt": "a", "api": api}]
    for step in steps:
        if step == "stop":
            body.append({"reader": "r", "local": "stop"})
        elif isinstance(step, str):
            body.append({"reader": "r", "local": "drain", "outcome": step})
        else:
            body.append({"reader": "r", "event": step})
    sc = parse_scenario({"trace": "tr", "task": task, "profile": profile, "steps": body})
    return preview_replay(sc)[1]


def pos(events: list[StoredEvent], type_name: str, nth: int = 0) -> int:
    return [e.position for e in events if e.type == type_name][nth]


def outcome(events: list[StoredEvent], **kw: Any) -> tuple[str, tuple[str, ...]]:
    d = decide_release(events, "a", **kw)
    return d.status, d.reasons


# --- the released path and its boundaries ----------------------------------------------

def test_released_at_clean_drain_with_answer_and_hash() -> None:
    events = run(*T1, "clean")
    d = decide_release(events, "a")
    assert (d.status, d.eligible, d.answer) == (R.RELEASED, True, ANSWER)
    assert d.decided_at_position == pos(events, "transport.drained")
    assert d.judgement is not None and d.judgement.verdict == "accepted"


def test_a_released_answer_is_held_once_not_once_per_reader() -> None:
    # The judge's decided text, the decision's answer and the view's text are one string:
    # a 100 MB answer is joined once, not once for each (issue 8: memory of long answers).
    d, view = decide_with_view(run(*T1, "clean"), "a")
    assert d.answer == ANSWER
    assert d.answer is d.decided_text and view.text is d.answer
    assert view.blocks[0].text is view.text  # one block: the block's text is the answer
    assert view.blocks[0].deltas == (D1["contentBlockDelta"]["delta"]["text"],
                                     "It is closed Thursday.")


def test_pending_before_terminal_and_before_drain() -> None:
    events = run(*T1, "clean")
    drained = pos(events, "transport.drained")
    assert outcome(events, upto=drained - 1) == (R.PENDING, (R.AWAITING_DRAIN,))
    first = pos(events, "frame.received")
    d = decide_release(events, "a", upto=first)
    assert (d.status, d.reasons, d.decided_at_position, d.answer) == (
        R.PENDING, (R.AWAITING_NATIVE_TERMINAL, R.AWAITING_DRAIN), None, None)
    assert decide_release(events, "a", upto=drained).status == R.RELEASED


def test_block_stop_or_message_stop_alone_keeps_candidate_private() -> None:
    events = run(START, D1, D2, BSTOP, END)
    d = decide_release(events, "a")
    assert d.status == R.PENDING and d.answer is None
    assert project_attempt(events, "a").text == ANSWER  # assembled, but not released


def test_stop_just_before_the_release_position_stops() -> None:
    events = run(*T1, "stop", "clean")
    d = decide_release(events, "a")
    assert (d.status, d.reasons) == (R.STOPPED, (R.LOCAL_STOP_BEFORE_RELEASE,))
    assert d.decided_at_position == pos(events, "local.stopped") and d.answer is None


def test_stop_just_after_the_release_position_does_not_undo_it() -> None:
    events = run(*T1, "clean", "stop")
    d = decide_release(events, "a")
    assert d.status == R.RELEASED and d.answer == ANSWER
    assert d.decided_at_position == pos(events, "transport.drained")
    assert R.STOP_AFTER_RELEASE in d.notes


def test_late_exception_after_release_does_not_undo_it() -> None:
    late = {"internalServerException": {"message": "late"}}
    events = run(*T1, "clean", late)
    d = decide_release(events, "a")
    assert d.status == R.RELEASED and R.FRAMES_AFTER_DECISION in d.notes


def test_exception_after_normal_end_before_drain_holds() -> None:
    events = run(*T1, {"throttlingException": {"message": "x"}}, "clean")
    assert outcome(events) == (R.HELD, (R.EXCEPTION_BEFORE_DRAIN,))


def test_exception_before_normal_end_interrupts() -> None:
    events = run(START, D1, {"serviceUnavailableException": {"message": "x"}}, END, "clean")
    d = decide_release(events, "a")
    assert (d.status, d.reasons) == (R.INTERRUPTED, (R.NATIVE_EXCEPTION,))
    assert d.decided_at_position == pos(events, "frame.received", 2)


def test_unknown_exception_name_is_held() -> None:
    assert outcome(run(START, D1, {"futureQuotaException": {"message": "x"}})) == (
        R.HELD, (R.UNKNOWN_EXCEPTION,))


# --- native endings --------------------------------------------------------------------

@pytest.mark.parametrize("drain, reasons", [
    ("eof", (R.NO_NATIVE_TERMINAL, R.DRAIN_EOF)),
    ("error", (R.NO_NATIVE_TERMINAL, R.DRAIN_ERROR)),
    ("reset", (R.NO_NATIVE_TERMINAL, R.DRAIN_RESET)),
    ("clean", (R.NO_NATIVE_TERMINAL,)),
])
def test_drain_without_terminal_interrupts(drain: str, reasons: tuple[str, ...]) -> None:
    assert outcome(run(START, D1, drain)) == (R.INTERRUPTED, reasons)


def test_unclean_drain_after_normal_end_interrupts() -> None:
    assert outcome(run(*T1, "reset")) == (R.INTERRUPTED, (R.DRAIN_RESET,))


def test_limit_is_decided_at_the_terminal() -> None:
    events = run(START, D1, {"messageStop": {"stopReason": "max_tokens"}}, "clean")
    d = decide_release(events, "a")
    assert (d.status, d.reasons) == (R.LIMITED, (R.NATIVE_LIMIT_REACHED,))
    assert d.decided_at_position == pos(events, "frame.received", 2)


@pytest.mark.parametrize("stop_reason", ["future_stop_reason", "stop_sequence",
                                         "guardrail_intervened"])
def test_stop_reasons_outside_the_profile_hold(stop_reason: str) -> None:
    events = run(START, D1, D2, {"messageStop": {"stopReason": stop_reason}}, META, "clean")
    assert outcome(events) == (R.HELD, (R.UNKNOWN_STOP_REASON,))


def test_tool_use_stop_reason_holds_and_tool_data_stays_out() -> None:
    tool_start = {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {
        "toolUseId": "tu_1", "name": "lookup"}}}}
    tool_delta = {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {
        "input": "{\"q\":\"SECRET\"}"}}}}
    events = run(START, D1, tool_start, tool_delta, {"contentBlockStop": {"contentBlockIndex": 1}},
                 {"messageStop": {"stopReason": "tool_use"}}, "clean")
    d = decide_release(events, "a")
    assert (d.status, d.reasons, d.answer) == (R.HELD, (R.TOOL_USE_NOT_ALLOWED,), None)
    view = project_attempt(events, "a")
    assert "SECRET" not in view.text and "lookup" not in view.text


def test_second_terminal_and_content_after_terminal_hold() -> None:
    assert outcome(run(START, D1, END, END, "clean")) == (R.HELD, (R.DUPLICATE_TERMINAL,))
    assert outcome(run(START, D1, END, D2, "clean")) == (R.HELD, (R.CONTENT_AFTER_TERMINAL,))


def test_unknown_native_form_holds() -> None:
    assert outcome(run(START, {"futureEvent": {"x": 1}}, D1)) == (R.HELD,
                                                                   (R.UNKNOWN_NATIVE_FORM,))


# --- OpenAI source --------------------------------------------------------------------

OAI = "openai-responses"
CREATED = {"type": "response.created", "sequence_number": 0,
           "response": {"id": "r", "status": "in_progress"}}


def oai_delta(text: str, index: int = 0) -> dict[str, Any]:
    return {"type": "response.output_text.delta", "item_id": "m", "output_index": index,
            "content_index": 0, "delta": text}


def test_final_text_is_checked_never_appended() -> None:
    done = {"type": "response.output_text.done", "item_id": "m", "output_index": 0,
            "content_index": 0, "text": "ab"}
    completed = {"type": "response.completed", "response": {"status": "completed", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "ab"}]}]}}
    events = run(CREATED, oai_delta("a"), oai_delta("b"), done, completed, "clean",
                 task={"answer_patterns": ["^ab$"]}, api=OAI)
    view = project_attempt(events, "a")
    assert view.text == "ab" and [f.agrees for f in view.final_texts] == [True, True]
    assert decide_release(events, "a").answer == "ab"


def test_openai_error_event_fails() -> None:
    error = {"type": "error", "code": "server_error", "message": "x"}
    assert outcome(run(CREATED, oai_delta("a"), error, "eof", api=OAI)) == (
        R.FAILED, (R.NATIVE_FAILURE,))


def test_openai_error_after_completed_is_held_not_failed() -> None:
    completed = {"type": "response.completed", "response": {"status": "completed"}}
    error = {"type": "error", "code": "server_error", "message": "x"}
    assert outcome(run(CREATED, oai_delta("a"), completed, error, "clean", api=OAI)) == (
        R.HELD, (R.EXCEPTION_BEFORE_DRAIN,))


def test_openai_refusal_is_not_answer_text() -> None:
    refusal = {"type": "response.refusal.delta", "output_index": 0, "delta": "I can't"}
    events = run(CREATED, refusal, api=OAI)
    assert outcome(events) == (R.HELD, (R.NON_TEXT_CONTENT,))
    assert project_attempt(events, "a").text == ""


# --- trace-level conditions ------------------------------------------------------------

def test_no_rule_holds_at_the_drain() -> None:
    assert outcome(run(*T1, "clean", task=None)) == (R.HELD, (R.NO_SEMANTIC_RULE,))
    assert outcome(run(*T1, "clean", task={"description": "x"})) == (R.HELD,
                                                                      (R.NO_SEMANTIC_RULE,))


def test_api_without_profile_is_held_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every provider has a profile now (app-frames got seed 000's); take one away.
    monkeypatch.delitem(DEFAULT_PROFILE_FOR_API, "app-frames")
    events = run({"frames": []}, api="app-frames")
    d = decide_release(events, "a")
    assert (d.status, d.reasons) == (R.HELD, (R.NO_PROFILE,))
    assert d.decided_at_position == pos(events, "attempt.started")


def test_trace_profile_of_another_api_does_not_judge() -> None:
    assert outcome(run(*T1, "clean", profile="openai-responses-text")) == (R.HELD,
                                                                          (R.NO_PROFILE,))


def test_metadata_required_is_a_profile_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    strict = dataclasses.replace(BEDROCK_CONVERSE_TEXT, name="bedrock-strict",
                                 metadata_required=True)
    monkeypatch.setitem(PROFILES, strict.name, strict)
    assert outcome(run(*T1[:-1], "clean", profile="bedrock-strict")) == (
        R.HELD, (R.METADATA_MISSING,))
    assert outcome(run(*T1, "clean", profile="bedrock-strict"))[0] == R.RELEASED
    d = decide_release(run(*T1[:-1], "clean"), "a")  # default profile: noted, not blocking
    assert d.status == R.RELEASED and d.notes == (R.METADATA_ABSENT,)


def _stored(position: int, event: Any, trace: str = "tr") -> StoredEvent:
    return StoredEvent(position, f"id{position}", "s", 1, event.type, 1,
                       dt.datetime(2026, 1, 1), trace, event, "")


def test_supersession_by_a_newer_attempt_without_the_planner() -> None:
    """Hand-built log (no planner events): the projection needs only the facts."""
    task = TaskRule.model_validate(TASK)
    log = [_stored(1, TraceOpened(trace_id="tr", task=task)),
           _stored(2, AttemptStarted(attempt_id="old", trace_id="tr", api=BR, reader="r1")),
           _stored(3, FrameReceived(attempt_id="old", api=BR, native=D1)),
           _stored(4, AttemptStarted(attempt_id="new", trace_id="tr", api=BR, reader="r2",
                                     retry_of="old"))]
    log += [_stored(5 + i, FrameReceived(attempt_id="new", api=BR, native=n))
            for i, n in enumerate(T1)]
    log += [_stored(11, TransportDrained(attempt_id="new", outcome="clean")),
            _stored(12, FrameReceived(attempt_id="old", api=BR, native=END)),
            _stored(13, LocalStopped(attempt_id="new"))]
    old = decide_release(log, "old")
    assert (old.status, old.reasons, old.decided_at_position) == (
        R.SUPERSEDED, (R.SUPERSEDED_BY_NEWER_ATTEMPT,), 4)
    new = decide_release(log, "new")
    assert (new.status, new.decided_at_position, new.answer) == (R.RELEASED, 11, ANSWER)
    assert new.notes == (R.STOP_AFTER_RELEASE,)
    # An attempt in another trace does not supersede.
    other = _stored(14, AttemptStarted(attempt_id="x", trace_id="other", api=BR), "other")
    assert decide_release([*log, other], "new").status == R.RELEASED


def test_released_attempt_stays_released_when_a_retry_opens() -> None:
    sc = parse_scenario({"trace": "tr", "task": TASK, "steps": [
        {"open": "r1", "attempt": "one", "api": BR},
        *[{"reader": "r1", "event": n} for n in T1],
        {"reader": "r1", "local": "drain", "outcome": "clean"},
        {"open": "r2", "attempt": "two", "api": BR}]})
    events = preview_replay(sc)[1]
    one = decide_release(events, "one")
    assert one.status == R.RELEASED and one.notes == (R.SUPERSEDED_AFTER_DECISION,)


def test_unknown_attempt_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_release(run(*T1), "nope")


def test_contract_dict_keys() -> None:
    d = decide_release(run(*T1, "clean"), "a").to_dict()
    assert list(d) == ["attempt_id", "eligible", "status", "reasons", "decided_at_position",
                       "answer", "answer_sha256", "notes"]


# --- the codes are documented ----------------------------------------------------------

def _codes() -> list[str]:
    return [v for k, v in vars(R).items()
            if k.isupper() and isinstance(v, str) and k != "POLICY_VERSION"]


def test_every_code_is_described_and_documented() -> None:
    doc = (ROOT / "docs" / "release-policy.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z0-9_]+)`", doc))  # codes may hold digits (utf8)
    for code in _codes():
        assert code in R.DESCRIPTIONS, code
        assert code in documented, f"{code} missing from docs/release-policy.md"
    assert set(R.STATUSES) <= set(_codes())


# --- decisions are monotone in position ------------------------------------------------

FIXTURE_FILES = sorted((ROOT / "fixtures" / "seed003").glob("*.json"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_decision_is_pending_before_and_fixed_after_its_position(path: Path) -> None:
    sc = parse_scenario(json.loads(path.read_text(encoding="utf-8")))
    events = preview_replay(sc)[1]
    for attempt in sc.expected["attempts"]:  # type: ignore[index]
        final = decide_release(events, attempt)
        start = pos_of_start(events, attempt)
        for q in range(start, events[-1].position + 1):
            d = decide_release(events, attempt, upto=q)
            if final.decided_at_position is None or q < final.decided_at_position:
                assert d.status == R.PENDING and d.decided_at_position is None, (attempt, q)
            else:
                assert (d.status, d.reasons, d.decided_at_position, d.answer) == (
                    final.status, final.reasons, final.decided_at_position, final.answer)


def pos_of_start(events: list[StoredEvent], attempt: str) -> int:
    return next(e.position for e in events
                if e.type == "attempt.started" and e.event.attempt_id == attempt)


@settings(max_examples=60, deadline=None)
@given(stop_at=st.integers(min_value=0, max_value=len(T1) + 1))
def test_stop_anywhere_before_the_drain_stops_and_after_it_does_not(stop_at: int) -> None:
    steps: list[Any] = [*T1, "clean"]
    steps.insert(stop_at, "stop")
    d = decide_release(run(*steps), "a")
    if stop_at <= len(T1):
        assert (d.status, d.answer) == (R.STOPPED, None)
    else:
        assert (d.status, d.answer, d.notes) == (R.RELEASED, ANSWER, (R.STOP_AFTER_RELEASE,))
