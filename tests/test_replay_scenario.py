"""Scenario validation and planner contract (pure: no database)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tracestore.errors import InputError
from tracestore.events import StoredEvent, attempt_stream, trace_stream
from tracestore.projections import decide_all
from tracestore.ingest.replay import parse_scenario, plan_replay, preview_replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
BR = "bedrock-converse-stream"
OPEN = {"open": "r", "attempt": "a", "api": BR}


def scenario(*steps: Any, **top: Any) -> dict[str, Any]:
    return {"trace": "tr", "steps": list(steps), **top}


@pytest.mark.parametrize("data, step", [
    (scenario(OPEN, {"reader": "r", "what": 1}), 1),
    (scenario(OPEN, "not an object"), 1),
    (scenario(OPEN, {"reader": "r", "local": "pause"}), 1),
    (scenario(OPEN, {"reader": "r", "local": "drain", "outcome": "maybe"}), 1),
    (scenario(OPEN, {"reader": "r", "event": {}, "extra": 1}), 1),
    (scenario({"reader": "r", "event": {}}), 0),                       # before open
    (scenario(OPEN, {"open": "r", "attempt": "b", "api": BR}), 1),     # reader twice
    (scenario(OPEN, {"open": "r2", "attempt": "a", "api": BR}), 1),    # attempt twice
    (scenario({"open": "r", "attempt": "a", "api": "carrier-pigeon"}), 0),
    (scenario(OPEN, {"reader": "r", "attempt": "a", "destination": "ui", "text": "x"}), 1),
    (scenario(OPEN, {"attempt": "zz", "destination": "ui", "text": "x"}), 1),
    (scenario(OPEN, {"reader": "r", "destination": "fax", "text": "x"}), 1),
])
def test_bad_steps_name_their_index(data: dict[str, Any], step: int) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.code == "invalid_scenario"
    assert info.value.context.get("step") == step, info.value.message
    assert f"step {step}:" in info.value.message


@pytest.mark.parametrize("data, code", [
    ([], "invalid_scenario"),
    ({"steps": []}, "invalid_scenario"),
    ({"trace": "", "steps": []}, "invalid_scenario"),
    ({"trace": "t", "steps": {}}, "invalid_scenario"),
    ({"trace": "t", "steps": [], "surprise": 1}, "invalid_scenario"),
    ({"trace": "t", "steps": [], "profile": "nope"}, "invalid_scenario"),
    ({"trace": "t", "steps": [], "task": {"answer_patterns": ["("]}}, "invalid_pattern"),
])
def test_bad_scenarios(data: Any, code: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.code == code


def load(name: str) -> Any:
    return parse_scenario(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def test_streams_trace_ids_and_frame_fields() -> None:
    events, _ = preview_replay(load("t8.json"))
    assert events[0].stream == trace_stream("t8") and events[0].event.type == "trace.opened"
    assert all(e.trace_id == "t8" for e in events)
    frames = [e for e in events if e.event.type == "frame.received"]
    for e in frames:
        assert e.stream == attempt_stream(e.event.attempt_id)
        assert e.event.api == BR and e.event.kinds
    old = [e.event for e in frames if e.event.attempt_id == "t8-old"]
    assert [(f.reader, f.index) for f in old] == [("r-old", 0), ("r-old", 1), ("r-old", 2),
                                                  ("r-old", 3)]
    assert old[1].kinds == ("text_delta",)


def test_replay_after_prior_events_shifts_positions_only() -> None:
    first, log = preview_replay(load("t7.json"))
    _, log2 = preview_replay(load("t8.json"), prior=log, head_position=len(log))
    base = {d.attempt_id: d for d in decide_all(preview_replay(load("t8.json"))[1], "t8")}
    for d in decide_all(log2, "t8"):
        assert d.status == base[d.attempt_id].status
        assert d.decided_at_position == base[d.attempt_id].decided_at_position + len(log)
    assert decide_all(log2, "t7")[0].status == "stopped"


def test_replaying_the_same_attempts_twice_is_refused() -> None:
    _, log = preview_replay(load("t7.json"))
    with pytest.raises(InputError) as info:
        plan_replay(load("t7.json"), prior=log, head_position=len(log),
                    recorded_at=dt.datetime(2026, 1, 1))
    assert info.value.code == "attempt_exists"


def test_extending_a_trace_must_keep_its_task() -> None:
    _, log = preview_replay(load("t7.json"))
    extra = parse_scenario({"trace": "t7", "steps": [{"open": "r9", "attempt": "t7-b",
                                                      "api": BR}]})
    with pytest.raises(InputError) as info:
        plan_replay(extra, prior=log, head_position=len(log), recorded_at=dt.datetime(2026, 1, 1))
    assert info.value.code == "trace_conflict"


def test_retry_in_a_later_scenario_supersedes_a_pending_prior_attempt() -> None:
    data = json.loads((FIXTURES / "t1.json").read_text())
    task, profile = data["task"], data["profile"]
    first = parse_scenario({"trace": "tr", "task": task, "profile": profile, "steps": [
        {"open": "r1", "attempt": "one", "api": BR},
        {"reader": "r1", "event": {"messageStart": {"role": "assistant"}}}]})
    _, log = preview_replay(first)
    second = parse_scenario({"trace": "tr", "task": task, "profile": profile, "steps": [
        {"open": "r2", "attempt": "two", "api": BR}]})
    new, log2 = preview_replay(second, prior=log, head_position=len(log))
    assert not any(e.event.type == "trace.opened" for e in new)
    decided = [e.event for e in new if e.event.type == "release.decided"]
    assert [(d.attempt_id, d.status) for d in decided] == [("one", "superseded")]


def test_planner_uses_no_clock() -> None:
    a = plan_replay(load("t8.json"), prior=[], head_position=0,
                    recorded_at=dt.datetime(2000, 1, 1))
    b = plan_replay(load("t8.json"), prior=[], head_position=0,
                    recorded_at=dt.datetime(2099, 1, 1))
    assert [e.id for e in a] == [e.id for e in b]


def test_simulated_positions_follow_head() -> None:
    _, log = preview_replay(load("t1.json"), head_position=41)
    assert [e.position for e in log] == list(range(42, 42 + len(log)))
    assert all(isinstance(e, StoredEvent) for e in log)


def test_observed_times_are_kept_but_never_order() -> None:
    sc = parse_scenario(scenario(
        {**OPEN, "at": "2026-10-09T10:00:02Z"},
        {"reader": "r", "event": {"messageStart": {"role": "assistant"}},
         "at": "2026-10-09T10:00:01Z"},
        {"reader": "r", "destination": "progress", "text": "x", "at": "2026-10-09T10:00:00Z"},
        {"reader": "r", "local": "stop", "at": "2026-10-09T09:00:00Z"}))
    events, _ = preview_replay(sc)
    stamps = [getattr(e.event, "observed_at", None) for e in events]
    assert stamps[1:6] == ["2026-10-09T10:00:02Z", None, "2026-10-09T10:00:01Z",
                           "2026-10-09T10:00:00Z", "2026-10-09T09:00:00Z"]
    decided = [e.event for e in events if e.event.type == "release.decided"]
    assert decided[0].status == "stopped"  # judged by position, whatever the clocks say
