"""The chat app against ``tracestore mock``: its own code reads the stream, stops it,
retries it and writes the UI and history; the recorder sees what it did and the audit is
the oracle (``assert_clean``)."""

from __future__ import annotations

from typing import Any

import pytest
from chat_harness import ANSWER, SCENARIOS, Running

from buggy_app import BuggyChatApp
from tracestore.api import Store
from tracestore.mock.pytest_plugin import assert_clean


def test_an_answer_reaches_the_ui_and_history(chat: Any, tracestore_recorder: Any) -> None:
    app: Running = chat("answer.json")
    turn = app.ask()
    events = list(app.events(turn))
    assert events[-1] == ("done", {"attempt": 0, "text": ANSWER})
    assert "".join(e["text"] for kind, e in events if kind == "delta") == ANSWER
    assert app.state(turn)["history"] == [ANSWER]
    assert_clean(tracestore_recorder, turn)


def test_stop_keeps_the_partial_cut_off_and_nothing_in_history(
        chat: Any, tracestore_recorder: Any) -> None:
    app: Running = chat("stop.json")
    turn = app.ask()
    seen = ""
    for kind, event in app.events(turn):
        assert kind == "delta"
        seen += event["text"]
        if len(seen) >= 10:
            stopped = app.post(f"/stop/{turn}")  # the user pressed Stop
            break
    assert stopped["state"] == "stopped"
    assert stopped["shown"].startswith(seen) and ANSWER.startswith(stopped["shown"])
    assert stopped["shown"] != ANSWER
    assert app.state(turn)["history"] == []
    assert_clean(tracestore_recorder, turn)
    # The mock's own receipt that the app ended its upstream request mid-stream.
    app.wait(lambda: app.mock.log[0]["client_left_at"] is not None)
    size = (SCENARIOS.parents[2] / "fixtures" / "wild" / "openai-chat" /
            "ddt__completion_stream.sse").stat().st_size
    assert 0 < app.mock.log[0]["client_left_at"] < size
    assert app.mock.log[0]["completed"] is False


def _stop_then_retry(app: Running) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """T8's shape: the old attempt's reader has queued deltas the page has not been sent
    when the user presses Stop, then Retry; the page's stream opens after the retry
    started, so those deltas reach the UI loop while the new attempt is current."""
    turn = app.ask()
    app.wait(lambda: len(app.state(turn)["attempts"][0]["received"]) >= 10)
    assert app.post(f"/stop/{turn}")["state"] == "stopped"
    assert app.post(f"/retry/{turn}")["attempt"] == 1
    return turn, list(app.events(turn))


def test_stop_then_retry_shows_only_the_new_answer(chat: Any, tracestore_recorder: Any
                                                   ) -> None:
    app: Running = chat("stop-retry.json")
    turn, events = _stop_then_retry(app)
    assert events[-1] == ("done", {"attempt": 1, "text": ANSWER})
    old, new = app.state(turn)["attempts"]
    assert old["state"] == "stopped" and old["received"] and old["shown"] == ""
    assert new["state"] == "done" and new["shown"] == ANSWER
    assert app.state(turn)["history"] == [ANSWER]
    assert_clean(tracestore_recorder, turn)


def test_the_buggy_app_fails_t8_with_old_attempt_text(chat: Any, tracestore_recorder: Any
                                                      ) -> None:
    app: Running = chat("stop-retry.json", BuggyChatApp)
    turn, events = _stop_then_retry(app)
    old, new = app.state(turn)["attempts"]
    assert events[-1] == ("done", {"attempt": 1, "text": old["received"] + ANSWER})
    with pytest.raises(AssertionError, match="old_attempt_text_in_answer"):
        assert_clean(tracestore_recorder, turn)
    violations = Store(tracestore_recorder.store).audit(turn).violations
    # One bad write, the new attempt's UI: it holds the old attempt's text, and so it is
    # not the released answer either.  History (written by the reader) is right.
    assert sorted((v.code, v.attempt_id, v.destination) for v in violations) == [
        ("answer_mismatch", new["attempt_id"], "ui"),
        ("old_attempt_text_in_answer", new["attempt_id"], "ui")]
    assert app.state(turn)["history"] == [ANSWER]


def test_every_scenario_loads() -> None:
    from tracestore.mock.scenario import load

    for scenario in sorted(SCENARIOS.glob("*.json")):
        assert load(scenario)[0].exchanges, scenario
