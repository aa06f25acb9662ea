"""Reviewers amend by appending: history, independent approval, conflicts (SQLite store)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracestore.cli.review_cmds import amend, trace_of
from tracestore.errors import InputError, NotFound, ReviewError
from tracestore.events import review_stream
from tracestore.ingest.replay import parse_scenario, plan_replay
from tracestore.review import ReviewRecord, fill_record, load_template
from tracestore.review.derive_attempt import says_not_released, says_released
from tracestore.store.log import EventStore, WriteView

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed003"
TEMPLATE = load_template("trace-review")


def replay_into(store: EventStore, name: str) -> None:
    scenario = parse_scenario(json.loads((SEED / f"{name}.json").read_text(encoding="utf-8")))

    def build(view: WriteView) -> tuple[list, list]:
        return plan_replay(scenario, prior=view.read(), head_position=view.head_position,
                           recorded_at=dt.datetime.fromisoformat(view.recorded_at)), []

    store.append_with(build)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with EventStore(f"sqlite:///{tmp_path / 'review.db'}") as opened:
        replay_into(opened, "t7")
        replay_into(opened, "t1")
        yield opened


def act(store: EventStore, attempt: str, *, sets: list[tuple[str, str]] = (),  # type: ignore[assignment]
        approve: bool = False, reviewer: str | None = "alice",
        evidence: list[int] = ()) -> tuple[int, ...]:  # type: ignore[assignment]
    return amend(store, TEMPLATE, attempt, trace_of(store, attempt), sets=list(sets),
                 approve=approve, reviewer=reviewer, evidence=list(evidence))


def rec(store: EventStore, attempt: str) -> ReviewRecord:
    return fill_record(TEMPLATE, store.read(trace_id=trace_of(store, attempt)), attempt,
                       version="test")


def field(record: ReviewRecord, name: str):  # noqa: ANN201 - test helper
    return next(f for f in record.fields if f.name == name)


def test_set_appends_and_the_record_shows_the_latest_with_who_and_when(store: EventStore) -> None:
    head = store.head_position()
    (first,) = act(store, "t7", sets=[("evidence_gap", "Client abort propagation untested")])
    (second,) = act(store, "t7", sets=[("evidence_gap", "Abort propagation and readback")],
                    reviewer="carol", evidence=[6, 12])
    assert (first, second) == (head + 1, head + 2)
    stored = store.read(stream=review_stream("trace-review", "t7"))
    assert [e.event.value for e in stored] == ["Client abort propagation untested",
                                               "Abort propagation and readback"]
    assert all(e.trace_id == "t7" for e in stored)  # loads with the trace
    f = field(rec(store, "t7"), "evidence_gap")
    assert (f.value, f.source, f.set_by, f.set_at, f.evidence) == (
        "Abort propagation and readback", "reviewer", "carol",
        stored[1].recorded_at.isoformat(), (6, 12, second))
    assert f.derived is not None and f.derived.value.startswith("Not in the log:")
    assert f.conflict is False


def test_history_keeps_every_value_nothing_is_overwritten(store: EventStore) -> None:
    act(store, "t7", sets=[("remote_cancellation", "UNKNOWN; local Stop is not a receipt")])
    act(store, "t7", sets=[("remote_cancellation", "Provider receipt req_123 seen")],
        reviewer="dave")
    act(store, "t7", sets=[("remote_cancellation", "UNKNOWN")], reviewer="erin")
    record = rec(store, "t7")
    assert [(a.field, a.value, a.reviewer) for a in record.history] == [
        ("remote_cancellation", "UNKNOWN; local Stop is not a receipt", "alice"),
        ("remote_cancellation", "Provider receipt req_123 seen", "dave"),
        ("remote_cancellation", "UNKNOWN", "erin")]
    # A reviewer writing exactly UNKNOWN leaves the field UNKNOWN in the summary.
    assert "remote_cancellation" in [f.name for f in record.unknown]
    history = record.history_dict()["history"]
    assert [h["set_by"] for h in history] == ["alice", "dave", "erin"]
    assert set(history[0]) == {"name", "value", "set_by", "set_at", "position", "evidence",
                               "signed_by_key"}  # issue 21: None = unsigned


def test_approval_by_a_reviewer_who_set_fields_is_refused(store: EventStore) -> None:
    act(store, "t7", sets=[("evidence_gap", "abort propagation")], reviewer="Alice")
    head = store.head_position()
    for same in ("Alice", "alice", " ALICE ", "ａｌｉｃｅ"):  # case, spaces, full width
        with pytest.raises(ReviewError) as info:
            act(store, "t7", approve=True, reviewer=same)
        assert info.value.code == "reviewer_not_independent"
    assert store.head_position() == head  # nothing appended
    act(store, "t7", approve=True, reviewer="bob")
    act(store, "t7", approve=True, reviewer="carol")  # several independent approvals are fine
    record = rec(store, "t7")
    assert [a.reviewer for a in record.approvals] == ["bob", "carol"]
    f = field(record, "independent_reviewer")
    assert f.source == "derived" and f.value.startswith("Approved by bob at ")
    assert "no approver set a field of this record" in f.value
    assert f.evidence == tuple(a.position for a in record.approvals)


def test_an_approver_may_not_fill_fields_or_approve_twice(store: EventStore) -> None:
    act(store, "t7", approve=True, reviewer="bob")
    with pytest.raises(ReviewError) as info:
        act(store, "t7", sets=[("evidence_gap", "x")], reviewer="Bob")
    assert info.value.code == "reviewer_not_independent"
    with pytest.raises(ReviewError) as info:
        act(store, "t7", approve=True, reviewer="bob")
    assert info.value.code == "already_approved"


def test_set_and_approve_in_one_action_is_refused_whole(store: EventStore) -> None:
    head = store.head_position()
    with pytest.raises(ReviewError) as info:
        act(store, "t7", sets=[("evidence_gap", "x")], approve=True, reviewer="zoe")
    assert info.value.code == "reviewer_not_independent"
    assert store.head_position() == head


def test_amendment_after_approval_is_visible_on_the_approval(store: EventStore) -> None:
    (approved,) = act(store, "t7", approve=True, reviewer="bob")
    (later,) = act(store, "t7", sets=[("evidence_gap", "more gaps")], reviewer="alice")
    value = field(rec(store, "t7"), "independent_reviewer").value
    assert value.endswith(f"; amended after the last approval at #{later} (approvals cover "
                          f"the record as of #{approved})")


def test_approval_cannot_be_faked_by_setting_the_field(store: EventStore) -> None:
    with pytest.raises(ReviewError) as info:
        act(store, "t7", sets=[("independent_reviewer", "approved by me")])
    assert info.value.code == "field_needs_approval"


@pytest.mark.parametrize("value, conflict", [
    ("released", True), ("Eligible; answer was correct", True), ("PASS", True),
    ("stopped but released anyway", True),
    ("Ineligible due to Stop, regardless of correct late answer", False),
    ("not released: stopped", False), ("Never released", False), ("UNKNOWN", False),
])
def test_reviewer_value_contradicting_an_unreleased_attempt_is_flagged(
        store: EventStore, value: str, conflict: bool) -> None:
    act(store, "t7", sets=[("release_decision", value)])
    record = rec(store, "t7")
    f = field(record, "release_decision")
    assert (f.value, f.source, f.conflict) == (value, "reviewer", conflict)
    assert f.derived is not None and f.derived.value.startswith("Ineligible: stopped at #6")
    assert f.to_dict()["derived"] == {"value": f.derived.value, "evidence": [6, 7]}
    assert [c.name for c in record.conflicts] == (["release_decision"] if conflict else [])
    assert record.to_dict()["conflicts"] == (["release_decision"] if conflict else [])


@pytest.mark.parametrize("value, conflict", [
    ("held for review", True), ("Not released", True), ("stopped", True),
    ("Released once to all destinations", False), ("eligible", False),
])
def test_reviewer_value_contradicting_a_released_attempt_is_flagged(
        store: EventStore, value: str, conflict: bool) -> None:
    act(store, "t1", sets=[("release_decision", value)])
    assert field(rec(store, "t1"), "release_decision").conflict is conflict


def test_claim_reading() -> None:
    assert says_released("It was released.") and not says_released("not been released")
    assert not says_released("ineligible") and says_not_released("ineligible")


@pytest.mark.parametrize("sets, reviewer, code, error", [
    ([("nope", "x")], "alice", "unknown_field", InputError),
    ([("evidence_gap", "   ")], "alice", "empty_value", InputError),
    ([("evidence_gap", "x" * 4001)], "alice", "value_too_long", InputError),
    ([("evidence_gap", "x")], None, "reviewer_required", InputError),
    ([("evidence_gap", "x")], "  ", "reviewer_required", InputError),
    ([("evidence_gap", "x")], "eve\x1b[31m", "invalid_reviewer", InputError),
])
def test_bad_amendments_are_refused_and_nothing_is_written(
        store: EventStore, sets: list[tuple[str, str]], reviewer: str | None, code: str,
        error: type[Exception]) -> None:
    head = store.head_position()
    with pytest.raises(error) as info:
        act(store, "t7", sets=sets, reviewer=reviewer)
    assert info.value.code == code  # type: ignore[attr-defined]
    assert store.head_position() == head


def test_evidence_must_be_positions_of_this_trace(store: EventStore) -> None:
    t1_position = store.read(trace_id="t1", limit=1)[0].position
    with pytest.raises(InputError) as info:
        act(store, "t7", sets=[("evidence_gap", "x")], evidence=[t1_position])
    assert info.value.code == "unknown_evidence"


def test_approving_an_unknown_attempt_is_not_found(store: EventStore) -> None:
    with pytest.raises(NotFound) as info:
        trace_of(store, "ghost")
    assert info.value.code == "attempt_not_found"


def test_review_events_do_not_change_the_release_decision(store: EventStore) -> None:
    before = field(rec(store, "t7"), "release_decision").value
    act(store, "t7", sets=[("release_decision", "released")])
    assert field(rec(store, "t7"), "release_decision").derived.value == before  # type: ignore[union-attr]
