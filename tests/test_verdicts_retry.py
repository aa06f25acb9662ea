"""Issue 11, item 5: a retry released after the first answer was released.

Policy (seed 003: one answer and one matching history entry per turn; a retry is a fresh
attempt): history holds one answer per trace, and a retry released after the turn's answer
was already released REPLACES that entry.  The replay harness writes the replacement and the
audit agrees: no ``duplicate_history_entry`` for the harness's own writes.
"""

from __future__ import annotations

from typing import Any

from tracestore.events import DestinationWritten, StoredEvent
from tracestore.projections import audit, decide_release
from tracestore.projections import reasons as R
from tracestore.ingest.replay import parse_scenario, preview_replay

TASK = {"answer_patterns": ["paris"]}
BR = "bedrock-converse-stream"


def answer(reader: str, text: str) -> list[dict[str, Any]]:
    return [{"reader": reader, "event": e} for e in (
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": text}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    )] + [{"reader": reader, "local": "drain", "outcome": "clean"}]


def scenario(*extra: dict[str, Any], destinations: str = "harness") -> list[StoredEvent]:
    steps = [{"open": "r1", "attempt": "first", "api": BR}, *answer("r1", "Paris."),
             {"open": "r2", "attempt": "retry", "api": BR, "retry_of": "first"},
             *answer("r2", "It is Paris."), *extra]
    return preview_replay(parse_scenario({"trace": "turn", "task": TASK, "steps": steps,
                                          "destinations": destinations}))[1]


def history(events: list[StoredEvent]) -> list[tuple[str, str]]:
    return [(e.event.attempt_id, e.event.text) for e in events
            if isinstance(e.event, DestinationWritten) and e.event.destination == "history"]


def test_a_retry_after_a_released_answer_replaces_the_history_entry() -> None:
    events = scenario()
    assert [decide_release(events, a).status for a in ("first", "retry")] == [
        "released", "released"]
    assert history(events) == [("first", "Paris."), ("retry", "It is Paris.")]
    assert audit(events).violations == ()


def _app_write(attempt: str, text: str) -> dict[str, Any]:
    return {"destination": "history", "attempt": attempt, "text": text}


def test_a_second_history_write_by_the_same_attempt_is_still_a_duplicate() -> None:
    events = scenario(_app_write("first", "Paris."), _app_write("retry", "It is Paris."),
                      _app_write("retry", "It is Paris."), destinations="application")
    codes = [(v.code, v.attempt_id) for v in audit(events).violations]
    assert codes == [(R.DUPLICATE_HISTORY_ENTRY, "retry")]


def test_the_older_answer_cannot_come_back_after_the_replacement() -> None:
    events = scenario(_app_write("first", "Paris."), _app_write("retry", "It is Paris."),
                      _app_write("first", "Paris."), destinations="application")
    codes = [(v.code, v.attempt_id) for v in audit(events).violations]
    assert codes == [(R.DUPLICATE_HISTORY_ENTRY, "first")]


def test_a_retry_opened_before_the_release_still_supersedes() -> None:
    steps = [{"open": "r1", "attempt": "first", "api": BR},
             {"open": "r2", "attempt": "retry", "api": BR, "retry_of": "first"},
             *answer("r1", "Paris."), *answer("r2", "It is Paris.")]
    events = preview_replay(parse_scenario({"trace": "turn", "task": TASK, "steps": steps}))[1]
    assert decide_release(events, "first").status == "superseded"
    assert history(events) == [("retry", "It is Paris.")]
    assert audit(events).violations == ()
