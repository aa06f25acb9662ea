"""The event log's invariants (DESIGN.md), run against every backend."""

from __future__ import annotations

import hashlib

import pytest

from tracestore.errors import ExpectedVersionConflict, StoreError
from tracestore.events import (
    FrameReceived,
    LocalStopped,
    NewEvent,
    TransportDrained,
    attempt_stream,
)
from tracestore.store.log import EventStore


def frame(attempt: str, n: int, **kw: object) -> NewEvent:
    return NewEvent(attempt_stream(attempt),
                    FrameReceived(attempt_id=attempt, api="bedrock-converse-stream",
                                  native={"contentBlockDelta": {"n": n}}, index=n),
                    trace_id="t", **kw)


def test_positions_and_versions_are_assigned_in_order(store: EventStore) -> None:
    first = store.append([frame("a", 0), frame("b", 0), frame("a", 1)])
    second = store.append([frame("b", 1)])
    assert first.positions == (1, 2, 3)
    assert second.positions == (4,)
    stored = store.read()
    assert [(e.position, e.stream, e.version) for e in stored] == [
        (1, "attempt:a", 1), (2, "attempt:b", 1), (3, "attempt:a", 2), (4, "attempt:b", 2)]
    assert [e.position for e in store.read(attempt_id="a")] == [1, 3]
    assert store.stream_version("attempt:b") == 2
    assert store.head_position() == 4


def test_stale_expected_version_is_a_typed_conflict_and_writes_nothing(store: EventStore) -> None:
    store.append([frame("a", 0)], expected_versions={"attempt:a": 0})
    with pytest.raises(ExpectedVersionConflict) as caught:
        store.append([frame("a", 1), frame("b", 0)], expected_versions={"attempt:a": 0})
    assert caught.value.code == "expected_version_conflict"
    assert caught.value.context == {"stream": "attempt:a", "expected": 0, "actual": 1}
    assert store.head_position() == 1
    # PostgreSQL reserved positions 2 and 3 for the refused append: they stay unused
    after = 2 if store._dialect == "sqlite" else 4
    assert store.append([frame("a", 1)], expected_versions={"attempt:a": 1}).positions == \
        (after,)
    assert store.verify().ok


def test_appending_an_existing_id_is_a_reported_no_op(store: EventStore) -> None:
    original = frame("a", 0)
    store.append([original])
    again = store.append([original, frame("a", 1)])
    assert again.skipped_ids == (original.id,)
    assert again.positions == (2,)
    assert len(store.read()) == 2


def test_payload_keeps_native_key_order_and_round_trips(store: EventStore) -> None:
    native = {"zeta": 1, "alpha": {"y": "ü", "b": [1, 2.5, None]}}
    store.append([NewEvent(attempt_stream("a"),
                           FrameReceived(attempt_id="a", api="x", native=native))])
    (stored,) = store.read()
    assert list(stored.event.native) == ["zeta", "alpha"]
    assert stored.event.native == native
    assert stored.type == "frame.received" and stored.schema_version == 1


def test_chain_verifies_and_names_head(store: EventStore) -> None:
    store.append([frame("a", n) for n in range(5)])
    result = store.verify()
    assert (result.ok, result.count, result.first_broken_position) == (True, 5, None)
    assert result.head_hash == store.read()[-1].hash


def test_a_failure_mid_append_leaves_no_event(store: EventStore) -> None:
    store.append([frame("a", 0)])

    def exploding() -> object:
        yield frame("a", 1)
        yield frame("a", 2)
        raise RuntimeError("injected failure mid-ingest")

    with pytest.raises(RuntimeError, match="injected"):
        store.append(exploding())  # type: ignore[arg-type]
    assert store.head_position() == 1
    assert store.verify().count == 1


def test_blobs_are_content_addressed_once(store: EventStore) -> None:
    data = b"data: {\"type\":\"ping\"}\n\n"
    sha = hashlib.sha256(data).hexdigest()
    first = store.append([frame("a", 0)], blob_data=[data])
    second = store.append([frame("a", 1)], blob_data=[data])
    assert first.blobs_stored == second.blobs_stored == (sha,)
    assert store.get_blob(sha) == data
    assert store.get_blob("0" * 64) is None


def test_event_kinds_share_one_order_across_streams(store: EventStore) -> None:
    store.append([
        frame("old", 0),
        NewEvent(attempt_stream("old"), LocalStopped(attempt_id="old"), trace_id="t"),
        frame("new", 0),
        NewEvent(attempt_stream("new"), TransportDrained(attempt_id="new", outcome="clean"),
                 trace_id="t"),
    ])
    assert [e.type for e in store.read(trace_id="t")] == [
        "frame.received", "local.stopped", "frame.received", "transport.drained"]
    assert [e.position for e in store.read(trace_id="t", after=1, upto=3)] == [2, 3]


def test_unreachable_postgres_is_a_store_error() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError) as caught:
        EventStore("postgresql://nobody@127.0.0.1:1/none")
    assert caught.value.code == "database_unavailable"


@pytest.mark.parametrize("statement", ["UPDATE ts_events SET payload = '{}'",
                                       "DELETE FROM ts_events"])
def test_the_database_itself_refuses_update_and_delete(store: EventStore, statement: str) -> None:
    from sqlalchemy.exc import DBAPIError

    store.append([frame("a", 0), frame("a", 1)])
    with pytest.raises(DBAPIError, match="append-only"):
        with store._writer.begin() as conn:
            conn.exec_driver_sql(statement)
    assert [e.position for e in store.read()] == [1, 2]
    assert store.verify().ok
