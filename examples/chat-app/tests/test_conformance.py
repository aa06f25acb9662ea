"""tracestore's conformance pack against the chat app: seed 003's application cases (a
normal answer, a native failure, an interruption, a length limit, a drop, a Stop, a Stop
then Retry while the old stream still delivers, and the boundary variants) played by
``tracestore mock``, the app driven as each case's user, the audit the oracle.

The app passes every case; ``buggy_app.py`` fails exactly T8's."""

from __future__ import annotations

from typing import Any

import pytest
from chat_harness import Running

from buggy_app import BuggyChatApp
from chat_app import ChatApp
from tracestore.mock.conformance import ConformanceCase

#: The cases the buggy app fails, and the violation each shows.
BUGGY_FAILS = {"t8-stop-retry": "old_attempt_text_in_answer"}


def drive(app: Running, case: ConformanceCase) -> str:
    """Do what the case's user does; the turn (the trace) it recorded."""
    turn = app.ask(case.question)
    if case.user in ("read", "read_then_stop"):
        events = list(app.events(turn))
        assert events and events[-1][0] in ("done", "failed"), events
        if case.user == "read_then_stop":
            app.post(f"/stop/{turn}")
    elif case.user == "stop":
        for kind, _ in app.events(turn):
            assert kind == "delta", kind
            break  # the first text is on the page: the user presses Stop
        app.post(f"/stop/{turn}")
    elif case.user == "stop_then_retry":
        app.wait(lambda: bool(app.state(turn)["attempts"][0]["received"]))
        app.post(f"/stop/{turn}")
        app.post(f"/retry/{turn}")
        list(app.events(turn))
    else:
        raise AssertionError(f"no driver for {case.user!r}")
    return turn


def run(chat: Any, case: ConformanceCase, app_class: type[ChatApp]) -> str:
    app: Running = chat(case.scenario, app_class, task=case.task)
    return drive(app, case)


def test_the_app_passes_the_case(tracestore_conformance_case: ConformanceCase, chat: Any,
                                 tracestore_recorder: Any) -> None:
    case = tracestore_conformance_case
    case.check(tracestore_recorder, run(chat, case, ChatApp))


def test_the_buggy_app_fails_only_t8(tracestore_conformance_case: ConformanceCase,
                                     chat: Any, tracestore_recorder: Any) -> None:
    case = tracestore_conformance_case
    turn = run(chat, case, BuggyChatApp)
    if case.name not in BUGGY_FAILS:
        case.check(tracestore_recorder, turn)
        return
    with pytest.raises(AssertionError, match=BUGGY_FAILS[case.name]):
        case.check(tracestore_recorder, turn)
