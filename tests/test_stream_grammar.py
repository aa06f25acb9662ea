"""Issue 19: T8's own failure mode — a frame out of its provider's stream grammar (content
before the start frame, a second start, a Responses sequence number going back) holds the
release with a named reason, in the decision, the audit and the review."""

from __future__ import annotations

import copy
import json

import pytest

from tracestore.projections import audit, decide_release
from tracestore.projections import reasons as R
from tracestore.ingest.replay import parse_scenario, preview_replay
from tracestore.review import load_template
from tracestore.review.record import fill_record

from conftest import FIXTURES, load_tool

real_decisions = load_tool("real_decisions")  # the docs' own in-process ingest of a capture

T8 = json.loads((FIXTURES / "seed003" / "t8.json").read_text(encoding="utf-8"))
S1 = json.loads((FIXTURES / "seed003" / "s1.json").read_text(encoding="utf-8"))


def replay(doc: dict) -> list:
    return preview_replay(parse_scenario(doc))[1]


def routed_to_the_current_attempt(doc: dict) -> dict:
    """Seed 003's named bug: callbacks rewritten with the current attempt, so the old
    reader's late delta (after the retry opened) is fed to the new attempt."""
    buggy = copy.deepcopy(doc)
    buggy.pop("expected", None)
    opened = next(i for i, s in enumerate(buggy["steps"]) if s.get("open") == "r-new")
    late = buggy["steps"][opened + 1]
    assert late["reader"] == "r-old" and "contentBlockDelta" in late["event"]
    late["reader"] = "r-new"
    return buggy


def test_the_old_readers_late_delta_routed_into_the_new_attempt_is_not_released() -> None:
    events = replay(routed_to_the_current_attempt(T8))
    new = decide_release(events, "t8-new")
    assert (new.status, new.reasons, new.answer) == (
        R.HELD, (R.CONTENT_BEFORE_START,), None)
    # The same log routed correctly is released (the seed's own T8).
    assert decide_release(replay({k: v for k, v in T8.items() if k != "expected"}),
                          "t8-new").status == R.RELEASED


def test_the_grammar_reason_shows_in_the_audit_and_the_review() -> None:
    events = replay(routed_to_the_current_attempt(T8))
    report = audit(events, trace_id="t8")
    statuses = {a.attempt_id: a.decision.status for a in report.attempts}
    assert statuses == {"t8-old": R.STOPPED, "t8-new": R.HELD}
    record = fill_record(load_template("application-record"), events, "t8-new",
                         version="test")
    eligibility = next(f for f in record.fields if f.name == "local_eligibility")
    assert R.CONTENT_BEFORE_START in eligibility.value, eligibility.value


DUPLICATE_START = (FIXTURES / "wild" / "vercel-chunks" / "anthropic"
                   / "vercel__duplicate-message-start.chunks.txt")


def test_the_same_start_frame_twice_before_content_is_one_message() -> None:
    api, events = real_decisions._events(DUPLICATE_START)
    decision = decide_release(events, "a")
    assert (api, decision.status, decision.answer) == ("anthropic-messages", R.RELEASED,
                                                       "Hello, World!")


def _second_start(tmp_path, lines: list[str], name: str) -> tuple:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    api, events = real_decisions._events(path)
    decision = decide_release(events, "a")
    return api, decision.status, decision.reasons


def test_a_second_message_start_of_another_message_is_held(tmp_path) -> None:
    lines = DUPLICATE_START.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"msg_dup"', '"msg_other"')
    assert _second_start(tmp_path, lines, "other.chunks.txt") == (
        "anthropic-messages", R.HELD, (R.SECOND_MESSAGE_START,))


def test_the_same_start_frame_after_content_is_held(tmp_path) -> None:
    lines = DUPLICATE_START.read_text(encoding="utf-8").splitlines()
    start = lines.pop(1)
    lines.insert(lines.index(next(x for x in lines if "text_delta" in x)) + 1, start)
    assert _second_start(tmp_path, lines, "late.chunks.txt") == (
        "anthropic-messages", R.HELD, (R.SECOND_MESSAGE_START,))


@pytest.mark.parametrize("regress,expected", [
    (True, (R.HELD, (R.SEQUENCE_NUMBER_REGRESSED,))),
    (False, (R.RELEASED, (R.NORMAL_NATIVE_ENDING, R.CLEAN_DRAIN, R.SEMANTIC_ACCEPTED))),
])
def test_a_responses_sequence_number_going_back_is_held(regress: bool, expected) -> None:
    doc = copy.deepcopy(S1)
    doc.pop("expected", None)
    deltas = [s for s in doc["steps"] if s.get("event", {}).get("type")
              == "response.output_text.delta"]
    if regress:  # the second delta claims a number before the first one's
        deltas[1]["event"]["sequence_number"] = deltas[0]["event"]["sequence_number"] - 1
    decision = decide_release(replay(doc), "s1")
    assert (decision.status, decision.reasons) == expected


def test_a_stream_without_any_start_frame_is_left_to_the_other_rules() -> None:
    """A Responses stream resumed with starting_after has no response.created: its content
    is not 'before the start' (there is none), so grammar alone does not hold it."""
    doc = copy.deepcopy(S1)
    doc.pop("expected", None)
    doc["steps"] = [s for s in doc["steps"]
                    if s.get("event", {}).get("type") != "response.created"]
    decision = decide_release(replay(doc), "s1")
    assert R.CONTENT_BEFORE_START not in decision.reasons
    assert decision.status == R.RELEASED
