"""Realtime session captures: Stops, cancellations, in-flight errors, interruptions and bad
lines, on small hand-built sessions (the real corpus has none of these paths: see
tests/test_wild_ws.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.errors import InputError
from tracestore.events import TaskRule
from tracestore.ingest.pipeline import IngestOptions, ingest_input
from tracestore.ingest.session import is_session, plan_session
from tracestore.projections.release import decide_with_view
from tracestore.store.log import EventStore

ACCEPT_ANY = TaskRule(answer_patterns=("",))


def session(*records: tuple[str, Any]) -> bytes:
    return "".join(json.dumps({"dir": d, "t": None, "data": m}) + "\n"
                   for d, m in records).encode()


def created(rid: str) -> tuple[str, Any]:
    return ("server", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}})


def delta(rid: str, text: str, kind: str = "response.output_text.delta") -> tuple[str, Any]:
    return ("server", {"type": kind, "response_id": rid, "output_index": 0, "delta": text})


def done(rid: str, status: str = "completed", reason: str | None = None) -> tuple[str, Any]:
    details = {"type": status, "reason": reason} if reason else None
    return ("server", {"type": "response.done", "response": {
        "id": rid, "status": status, "status_details": details, "usage": {"total_tokens": 3}}})


def decisions(tmp_path: Path, data: bytes) -> list[tuple[str, Any, Any]]:
    store = EventStore(f"sqlite:///{tmp_path / 's.db'}")
    try:
        out = ingest_input(store, data, IngestOptions(filename="s.jsonl", task=ACCEPT_ANY))
        events = store.read(trace_id=f"s-{out.sha256[:8]}")
        return [(a, *decide_with_view(events, a)) for a in out.attempts]
    finally:
        store.close()


def test_two_responses_are_two_attempts_of_one_trace(tmp_path: Path) -> None:
    data = session(("server", {"type": "session.created", "session": {}}),
                   created("r1"), delta("r1", "Hel"), delta("r1", "lo"), done("r1"),
                   ("server", {"type": "rate_limits.updated", "rate_limits": []}),
                   created("r2"), delta("r2", "Bye", "response.audio_transcript.delta"),
                   ("server", {"type": "response.audio.delta", "response_id": "r2",
                               "delta": "AAAA"}), done("r2"))
    got = decisions(tmp_path, data)
    assert [a for a, _, _ in got] == [f"s-{_sha(data)}-r1", f"s-{_sha(data)}-r2"]
    assert [(d.status, d.answer) for _, d, _ in got] == [("released", "Hello"),
                                                        ("released", "Bye")]


def test_a_client_cancel_is_a_local_stop_of_the_response_in_flight(tmp_path: Path) -> None:
    data = session(created("r1"), delta("r1", "Hel"), ("client", {"type": "response.cancel"}),
                   delta("r1", "lo"), done("r1", "cancelled", "client_cancelled"))
    [(_, decision, view)] = decisions(tmp_path, data)
    assert decision.status == "stopped"
    assert view.stop_position is not None and view.terminals[0].status == "cancelled"


def test_a_truncate_after_the_response_ended_changes_nothing(tmp_path: Path) -> None:
    data = session(created("r1"), delta("r1", "Hi"), done("r1"),
                   ("client", {"type": "conversation.item.truncate", "item_id": "i",
                               "content_index": 0, "audio_end_ms": 10}))
    [(_, decision, _)] = decisions(tmp_path, data)
    assert (decision.status, decision.answer) == ("released", "Hi")
    assert "stop_after_release" in decision.notes


def test_a_cancelled_response_is_never_released(tmp_path: Path) -> None:
    data = session(created("r1"), delta("r1", "Hi"), done("r1", "cancelled", "turn_detected"))
    [(_, decision, _)] = decisions(tmp_path, data)
    assert decision.status != "released"


def test_an_error_in_flight_fails_the_response_and_one_between_responses_does_not(
        tmp_path: Path) -> None:
    error = ("server", {"type": "error", "error": {"type": "server_error", "code": "x",
                                                   "message": "boom"}})
    data = session(error, created("r1"), delta("r1", "Hi"), error, done("r1", "failed"))
    [(_, decision, _)] = decisions(tmp_path, data)
    assert decision.status == "failed"
    data = session(error, created("r1"), delta("r1", "Hi"), done("r1"))
    [(_, decision, _)] = decisions(tmp_path, data)
    assert decision.status == "released"


def test_gemini_interrupted_is_a_local_stop_and_turns_count_from_one(tmp_path: Path) -> None:
    data = session(("client", {"setup": {}}), ("server", {"setupComplete": {}}),
                   ("server", {"serverContent": {"outputTranscription": {"text": "Hi "}}}),
                   ("server", {"serverContent": {"turnComplete": True},
                               "usageMetadata": {"totalTokenCount": 5}}),
                   ("server", {"serverContent": {"modelTurn": {"parts": [{"text": "Lo"}]}}}),
                   ("server", {"serverContent": {"interrupted": True}}),
                   ("server", {"serverContent": {"turnComplete": True}}))
    got = decisions(tmp_path, data)
    assert [a.rsplit("-", 1)[1] for a, _, _ in got] == ["turn1", "turn2"]
    assert [(d.status, d.answer) for _, d, _ in got] == [("released", "Hi "), ("stopped", None)]


def test_a_turn_the_recording_cut_off_is_never_released(tmp_path: Path) -> None:
    data = session(created("r1"), delta("r1", "Hi"))
    [(_, decision, view)] = decisions(tmp_path, data)
    assert decision.status == "interrupted" and not view.terminals


def test_a_socket_closed_mid_turn_drains_with_an_error(tmp_path: Path) -> None:
    close = json.dumps({"dir": "server", "t": None, "kind": "close",
                        "data": {"code": 1011, "reason": "x", "ok": False}}) + "\n"
    data = session(created("r1"), delta("r1", "Hi")) + close.encode()
    [(_, decision, _)] = decisions(tmp_path, data)
    assert decision.status == "interrupted" and "drain_error" in decision.reasons


@pytest.mark.parametrize("line", [b'{"dir": "up", "data": {}}\n', b'{"dir": "server"}\n',
                                  b'{"dir": "server", "t": [], "data": {}}\n'])
def test_a_line_that_is_not_a_session_message_is_refused(line: bytes) -> None:
    data = session(created("r1")) + line
    with pytest.raises(InputError) as info:
        plan_session(data)
    assert info.value.code == "invalid_session_line"


def test_a_session_is_recognised_by_shape_not_by_name() -> None:
    assert is_session(session(created("r1")))
    assert not is_session(b'{"type": "response.created"}\n')
    assert not is_session(b"data: {}\n\n")


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:8]
