"""The event vocabulary: stable type names, validation errors, upcasting, identifiers."""

from __future__ import annotations

import pytest

from tracestore import events as ev
from tracestore.errors import InputError


def test_type_names_are_stable_strings_and_all_have_a_schema_version() -> None:
    assert ev.EVENT_TYPES == (
        "trace.opened", "attempt.started", "capture.stored", "frame.received",
        "local.stopped", "transport.drained", "semantic.judged", "release.decided",
        "destination.written", "model.decision", "review.field_set", "review.approved",
        "run.opened", "model.called", "tool.observed", "run.finished", "run.graded",
        "contract.bound", "request.bound", "frame.rejected",
        "capture.segment", "destination.read_back", "task.revised",
        "evidence.attached", "reviewer.added", "store.setting")  # issue 21
    assert set(ev.SCHEMA_VERSIONS) == set(ev.EVENT_TYPES)


def test_parse_event_validates_and_names_the_field() -> None:
    parsed = ev.parse_event({"type": "transport.drained", "attempt_id": "a", "outcome": "eof"})
    assert isinstance(parsed, ev.TransportDrained) and parsed.outcome == "eof"
    with pytest.raises(InputError) as caught:
        ev.parse_event({"type": "transport.drained", "attempt_id": "a", "outcome": "maybe"})
    assert caught.value.code == "invalid_event"
    assert caught.value.message.startswith(
        "event of type 'transport.drained' is not valid: transport.drained.outcome: ")


def test_upcasters_lift_old_payloads_one_version_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ev.SCHEMA_VERSIONS, "local.stopped", 3)
    monkeypatch.setitem(ev.UPCASTERS, ("local.stopped", 1),
                        lambda p: {k: v for k, v in p.items() if k != "who"} | {"by": p.get("who")})
    monkeypatch.setitem(ev.UPCASTERS, ("local.stopped", 2),
                        lambda p: {**p, "by": (p["by"] or "").upper() or None})
    old = {"type": "local.stopped", "attempt_id": "a", "who": "user"}
    assert ev.upcast("local.stopped", 1, dict(old)) == {
        "type": "local.stopped", "attempt_id": "a", "by": "USER"}
    assert ev.upcast("local.stopped", 3, {"type": "local.stopped", "attempt_id": "a"}) == {
        "type": "local.stopped", "attempt_id": "a"}


@pytest.mark.parametrize("stream, event_id", [("", "x"), ("attempt:a\x1fb", "x"),
                                              ("attempt:a", "bad\nid")])
def test_identifiers_must_be_printable(stream: str, event_id: str) -> None:
    with pytest.raises(InputError) as caught:
        ev.NewEvent(stream, ev.LocalStopped(attempt_id="a"), id=event_id)
    assert caught.value.code == "invalid_identifier"


def test_fresh_ids_are_unique_and_time_ordered() -> None:
    ids = [ev.new_event_id() for _ in range(10_000)]
    assert len(set(ids)) == 10_000
    assert all(len(i) == 32 for i in ids)
    # Clock first: only ids drawn within the same clock tick may sort out of order.
    assert sum(a > b for a, b in zip(ids, ids[1:])) < 100


def test_model_decision_v1_rows_upcast_to_v2() -> None:
    v1 = {"type": "model.decision", "attempt_id": "a", "stage": "proposed",
          "decision": {"action": "stop"}, "reason": None}
    assert ev.SCHEMA_VERSIONS["model.decision"] == 2
    lifted = ev.parse_event(ev.upcast("model.decision", 1, dict(v1)))
    assert (lifted.index, lifted.implied, lifted.decision) == (None, False, {"action": "stop"})
