"""Every seed 003 scenario fixture, replayed through the pure planner (no database).

Each fixture states its expected outcome in its ``expected`` block (written from seed 003's
table before the implementation, positions as on an empty log); this test checks status,
eligibility, reasons, decision position, answer, notes and destinations exactly, plus the
audit's violations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.events import ANSWER_DESTINATIONS, NewEvent, StoredEvent
from tracestore.projections import audit, decide_all, project_attempt
from tracestore.ingest.replay import Scenario, parse_scenario, plan_replay, preview_replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
FILES = sorted(FIXTURES.glob("*.json"))
ANSWER = "The public desk opens Wednesday from 09:00 to 17:00 UTC. It is closed Thursday."


def load(path: Path) -> Scenario:
    return parse_scenario(json.loads(path.read_text(encoding="utf-8")))


def replay(sc: Scenario) -> list[StoredEvent]:
    return preview_replay(sc)[1]


def test_fixture_set_is_complete() -> None:
    names = {p.stem for p in FILES}
    required = {"s1", "s2", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8",
                "t1-metadata-absent", "v1-second-text-block", "v2-non-text-delta",
                "v3a-duplicate-final-text", "v3b-mismatched-final-text",
                "v4-unknown-stop-reason", "v5-exception-after-end", "v6-stop-after-accept"}
    assert required <= names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture_outcome(path: Path) -> None:
    sc = load(path)
    assert sc.expected is not None and sc.source, f"{path.name} states no expected outcome"
    events = replay(sc)
    decisions = {d.attempt_id: d for d in decide_all(events, sc.trace)}
    report = audit(events, trace_id=sc.trace)
    held = {a.attempt_id: a for a in report.attempts}
    expected: dict[str, Any] = sc.expected["attempts"]
    assert set(decisions) == set(expected)
    for attempt_id, want in expected.items():
        d = decisions[attempt_id]
        got = {"status": d.status, "eligible": d.eligible, "reasons": list(d.reasons),
               "decided_at_position": d.decided_at_position, "answer": d.answer,
               "notes": list(d.notes),
               "destinations": {k: [e.text for e in held[attempt_id].destinations[k]]
                                for k in ANSWER_DESTINATIONS},
               "progress": [e.text for e in held[attempt_id].progress]}
        assert got == want, attempt_id
    got_violations = [{"code": v.code, "attempt_id": v.attempt_id,
                       "destination": v.destination, "position": v.position}
                      for v in report.violations]
    assert got_violations == sc.expected["violations"]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_recorded_decisions_agree_with_recomputed(path: Path) -> None:
    """The planner's release.decided events equal what the CLI recomputes afterwards."""
    sc = load(path)
    events = replay(sc)
    recorded = {e.event.attempt_id: e.event for e in events if e.type == "release.decided"}
    for d in decide_all(events, sc.trace):
        if d.decided_at_position is None:
            assert d.attempt_id not in recorded
            continue
        r = recorded[d.attempt_id]
        assert (r.status, r.eligible, r.reasons, r.decided_at_position, r.answer_sha256) == (
            d.status, d.eligible, d.reasons, d.decided_at_position, d.answer_sha256)


def _fingerprint(events: list[NewEvent]) -> list[tuple[str, str, str, str | None]]:
    return [(e.id, e.stream, e.event.model_dump_json(), e.trace_id) for e in events]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_planner_is_deterministic(path: Path) -> None:
    import datetime as dt

    sc = load(path)
    one = plan_replay(sc, prior=[], head_position=0, recorded_at=dt.datetime(2026, 1, 1))
    two = plan_replay(load(path), prior=[], head_position=0,
                      recorded_at=dt.datetime(2030, 5, 5))
    assert _fingerprint(one) == _fingerprint(two)
    assert len({e.id for e in one}) == len(one)


def test_t8_new_buffer_and_destinations_hold_no_old_text() -> None:
    sc = load(FIXTURES / "t8.json")
    events = replay(sc)
    new = project_attempt(events, "t8-new")
    old = project_attempt(events, "t8-old")
    assert new.text == ANSWER and [b.deltas for b in new.blocks] == [
        ("The public desk opens Wednesday from 09:00 to 17:00 UTC. ", "It is closed Thursday.")]
    # The old late delta went to the old reader's attempt, not the new one.
    assert old.text == ANSWER and old.stop_position is not None
    assert all(p < old.stop_position for p in (old.blocks[0].first_position,))
    assert old.blocks[0].last_position > new.started_at
    writes = [e for e in events if e.type == "destination.written"
              and e.event.destination != "progress"]
    assert {w.event.attempt_id for w in writes} == {"t8-new"}
    assert [w.event.destination for w in writes] == ["ui", "history", "export", "copy"]
    assert all(w.event.text == ANSWER and w.event.text.count("It is closed Thursday.") == 1
               for w in writes)
    decided = [e.event.attempt_id for e in events if e.type == "release.decided"
               and e.event.eligible]
    assert decided == ["t8-new"]


def test_t6_tool_data_never_reaches_text_or_destinations() -> None:
    events = replay(load(FIXTURES / "t6.json"))
    view = project_attempt(events, "t6")
    assert view.text == "" and view.blocks == ()
    for e in events:
        if e.type == "destination.written":
            assert e.event.destination == "progress"
            assert "unexpected_lookup" not in e.event.text and "tool_synthetic" not in e.event.text


def test_t1_same_answer_as_s1() -> None:
    s1 = decide_all(replay(load(FIXTURES / "s1.json")), "s1")[0]
    t1 = decide_all(replay(load(FIXTURES / "t1.json")), "t1")[0]
    assert s1.answer == t1.answer == ANSWER and s1.answer_sha256 == t1.answer_sha256


def test_metadata_absent_stays_none_never_zero() -> None:
    events = replay(load(FIXTURES / "t1-metadata-absent.json"))
    assert project_attempt(events, "t1-metadata-absent").usage is None
    events = replay(load(FIXTURES / "t1.json"))
    assert project_attempt(events, "t1").usage == {"inputTokens": 30, "outputTokens": 20,
                                                   "totalTokens": 50}
