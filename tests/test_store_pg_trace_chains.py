"""Appends to different traces on PostgreSQL share no lock and no head (no timing).

A recorder's append takes the append lock shared, its traces' own locks and a block of
positions; a planned append (ingest, review) takes the append lock exclusively.  These
tests hold one append's transaction open and check what the others can and cannot do
meanwhile, and that a reader paging by position never steps over the open append's rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import PG_URL, _fresh_pg_url, _partitioned_pg_url
from tracestore.events import FrameReceived, SerializedEvent, attempt_stream
from tracestore.recording.rows import fresh_ids
from tracestore.store.append_types import canonical_payload
from tracestore.store.log import EventStore

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                "(set TRACESTORE_TEST_PG_URL)")

HANG_GUARD_S = 60  # never reached when the design holds; a broken lock fails, not hangs


def rows(trace: str, count: int) -> list[SerializedEvent]:
    stream = attempt_stream(trace)
    return [SerializedEvent(stream, event_id, trace, "frame.received", canonical_payload(
        FrameReceived(attempt_id=trace, api="openai-responses",
                      native={"type": "response.output_text.delta", "delta": str(n)})))
            for n, event_id in enumerate(fresh_ids(count))]


@pytest.fixture(params=["plain", pytest.param("partitioned", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest) -> Iterator[EventStore]:
    url = _partitioned_pg_url() if request.param == "partitioned" else _fresh_pg_url()
    with EventStore(url) as opened:
        yield opened


class HeldAppend:
    """A recorder append of ``trace`` that stops inside its transaction (locks taken,
    positions reserved, rows not yet written) until ``release()``."""

    def __init__(self, store: EventStore, trace: str, count: int) -> None:
        self.inside, self.go = threading.Event(), threading.Event()
        self.outcome: list[Any] = []
        original = store._append_fresh_in

        def held(conn: Any, groups: Any, known: Any, head: int, heads: Any,
                 *looked_up: Any, **out: Any) -> Any:
            if groups[0][1][0].trace_id == trace:
                self.head = head
                self.inside.set()
                assert self.go.wait(HANG_GUARD_S)
            return original(conn, groups, known, head, heads, *looked_up, **out)

        store._append_fresh_in = held  # type: ignore[method-assign]
        self.thread = threading.Thread(target=lambda: self.outcome.append(
            store.append_fresh_groups([(trace, rows(trace, count), {attempt_stream(trace): 0},
                                        [])])))
        self.thread.start()
        assert self.inside.wait(HANG_GUARD_S)

    def release(self) -> list[Any]:
        self.go.set()
        self.thread.join(HANG_GUARD_S)
        assert not self.thread.is_alive()
        return self.outcome[0]


def settled(store: EventStore, count: int) -> list[tuple[str | None, int]]:
    """``(trace, position)`` of a paging read once it holds ``count`` rows: the read stops
    below the oldest write transaction open anywhere on the server, which other clients
    (another test run) may hold for a moment."""
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        seen = [(e.trace_id, e.position) for e in store.read()]
        if len(seen) >= count or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def append_in_thread(store: EventStore, trace: str, count: int) -> threading.Thread:
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(store.append_fresh_groups(
        [(trace, rows(trace, count), {attempt_stream(trace): 0}, [])])))
    thread.done = done  # type: ignore[attr-defined]
    thread.start()
    return thread


def test_two_traces_commit_while_a_third_holds_its_transaction_open(store: EventStore) -> None:
    held = HeldAppend(store, "c", 3)
    writers = [append_in_thread(store, trace, 2) for trace in ("a", "b")]
    for writer in writers:
        writer.join(HANG_GUARD_S)
        assert not writer.is_alive(), "an append waited on another trace's transaction"
        (result,) = writer.done  # type: ignore[attr-defined]
        assert len(result[0].positions) == 2
    assert [e.trace_id for e in store.read(trace_id="a")] == ["a", "a"]
    # Paging across traces stops below the open transaction: its positions come first.
    assert store.read() == []
    (result,) = held.release()
    assert list(result.positions) == [1, 2, 3] and held.head == 0
    seen = settled(store, 7)
    assert seen[:3] == [("c", 1), ("c", 2), ("c", 3)]
    assert sorted(seen[3:]) == [("a", 4), ("a", 5), ("b", 6), ("b", 7)] or \
        sorted(seen[3:]) == [("a", 6), ("a", 7), ("b", 4), ("b", 5)]
    assert store.verify().ok


def test_a_second_append_to_the_same_trace_waits_for_the_first(store: EventStore) -> None:
    held = HeldAppend(store, "c", 2)
    other = threading.Thread(target=lambda: store.append_fresh_groups(
        [("c2", rows("c", 1), None, [])]))
    other.start()
    other.join(0.5)  # it must still be waiting on trace c's lock: the chain cannot fork
    assert other.is_alive()
    held.release()
    other.join(HANG_GUARD_S)
    assert not other.is_alive()
    chain = store.read(trace_id="c")
    assert [(e.position, e.version) for e in chain] == [(1, 1), (2, 2), (3, 3)]
    assert store.verify().ok


def test_a_planned_append_waits_for_open_recorder_appends(store: EventStore) -> None:
    from tracestore.events import NewEvent

    held = HeldAppend(store, "c", 2)
    event = NewEvent(attempt_stream("p"), FrameReceived(
        attempt_id="p", api="openai-responses",
        native={"type": "response.output_text.delta", "delta": "x"}), trace_id="p")
    # a builder that plans from the head (as an ingest does): it alone picks positions
    planned = threading.Thread(target=lambda: store.append_with(lambda view: ([event], [])))
    planned.start()
    planned.join(0.5)
    assert planned.is_alive()  # the exclusive lock waits for the shared holder
    held.release()
    planned.join(HANG_GUARD_S)
    assert not planned.is_alive()
    assert settled(store, 3) == [("c", 1), ("c", 2), ("p", 3)]
    assert store.verify().ok


def test_known_events_of_one_trace_append_beside_an_open_append(store: EventStore) -> None:
    """``append`` of events that name their trace (a release decision) takes that trace's
    lock, not the whole store's."""
    from tracestore.events import NewEvent

    held = HeldAppend(store, "c", 2)
    event = NewEvent(attempt_stream("d"), FrameReceived(
        attempt_id="d", api="openai-responses",
        native={"type": "response.output_text.delta", "delta": "x"}), trace_id="d")
    done = threading.Thread(target=lambda: store.append([event]))
    done.start()
    done.join(HANG_GUARD_S)
    assert not done.is_alive()
    assert [e.trace_id for e in store.read(trace_id="d")] == ["d"]
    held.release()
    assert settled(store, 3) == [("c", 1), ("c", 2), ("d", 3)]
    assert store.verify().ok


def test_a_write_transaction_open_in_another_database_does_not_hold_reads_back(
        store: EventStore) -> None:
    import psycopg

    assert PG_URL is not None
    other = psycopg.connect(PG_URL.replace("postgresql+psycopg://", "postgresql://", 1))
    try:
        other.execute("SELECT pg_current_xact_id()")  # an xid, held open in `postgres`
        store.append_fresh_groups([("a", rows("a", 2), None, [])])
        assert [(e.trace_id, e.position) for e in store.read()] == [("a", 1), ("a", 2)]
    finally:
        other.rollback()
        other.close()


def test_opening_a_trace_takes_only_its_own_lock(store: EventStore) -> None:
    from tracestore import Recorder

    held = HeldAppend(store, "c", 2)
    with Recorder(store.url) as recorder:
        opened = threading.Thread(target=lambda: recorder.trace("d", task=None))
        opened.start()
        opened.join(HANG_GUARD_S)
        assert not opened.is_alive()
    assert [e.event.type for e in store.read(trace_id="d")] == ["trace.opened"]
    held.release()
    assert store.verify().ok


def test_a_build_declared_for_one_trace_cannot_write_another(store: EventStore) -> None:
    from tracestore.errors import StoreError
    from tracestore.events import NewEvent

    event = NewEvent(attempt_stream("e"), FrameReceived(
        attempt_id="e", api="openai-responses",
        native={"type": "response.output_text.delta", "delta": "x"}), trace_id="e")
    with pytest.raises(StoreError) as caught:
        store.append_with(lambda view: ([event], []), traces=["d"])
    assert caught.value.code == "append_refused"
    assert store.read() == []


def test_rebuilding_the_review_index_neither_waits_for_nor_skips_an_open_append(
        store: EventStore) -> None:
    from tracestore.review import queue_index

    def index_position() -> int:
        rows = store.fetch_driver("SELECT position FROM ts_index_state WHERE name = %s",
                                  ("review_queue",), during="the test")
        return rows[0][0] if rows else 0

    store.append_fresh_groups([("a", rows("a", 2), None, [])])  # positions 1 and 2
    held = HeldAppend(store, "c", 2)  # holds positions 3 and 4, uncommitted
    later = append_in_thread(store, "b", 1)  # position 5, committed before c
    later.join(HANG_GUARD_S)
    syncing = threading.Thread(target=lambda: queue_index.sync(store))
    syncing.start()
    syncing.join(HANG_GUARD_S)
    assert not syncing.is_alive(), "the index rebuild waited on an append"
    assert index_position() == 2  # not past c's open positions, though b's 5 is committed
    held.release()
    queue_index.sync(store)
    assert index_position() == 5
