"""Round trips of one recorder append on PostgreSQL, counted at the wire (no timing).

libpq's trace of the store's psycopg connections names every message the client sends: a
round trip is one simple ``Query`` or one extended-protocol ``Sync``.  A recorder's feed
is two messages on the store's append line (``store.pg_append``): BEGIN with the append
lock shared, the trace's own lock, a block of positions and the trace's head; then one
insert per table (multi-row; a stored blob skipped by ``ON CONFLICT``) with COMMIT -- no
pool ping, no blob look-up, no global lock.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import FIXTURES, PG_URL, _fresh_pg_url

pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server "
                                "(set TRACESTORE_TEST_PG_URL)")

CAPTURE = FIXTURES / "real" / "anthropic" / "text-basic.sse"


@pytest.fixture
def recorder() -> Iterator[tuple[Any, list[Any]]]:
    from sqlalchemy import event

    from tracestore import Recorder

    rec = Recorder(_fresh_pg_url())
    engine = rec.store._writer
    connections: list[Any] = []
    event.listen(engine, "connect", lambda dbapi, _record: connections.append(dbapi))
    engine.pool.dispose()  # every connection from now on is one the test can trace
    yield rec, connections
    rec.close()


def messages(connections: list[Any], call: Callable[[], object]) -> list[str]:
    """What the client sent while ``call()`` ran: ``Query <sql>`` and ``Sync`` lines."""
    from psycopg import pq

    traces = []
    for conn in list(connections):
        out = tempfile.TemporaryFile()  # noqa: SIM115 - closed after untrace, below
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        traces.append((conn, out))
    call()
    sent: list[str] = []
    for conn, out in traces:
        conn.pgconn.untrace()
        out.seek(0)
        for line in out.read().decode().splitlines():
            fields = line.split("\t")
            if fields[0] == "F" and fields[2] in ("Query", "Parse", "Sync"):
                sent.append(" ".join(f.strip() for f in fields[2:]).strip())
        out.close()
    return sent


def round_trips(sent: list[str]) -> int:
    return sum(1 for m in sent if m.startswith(("Query", "Sync")))


def test_a_recorder_feed_is_two_messages_locks_then_rows_and_commit(
        recorder: tuple[Any, list[Any]]) -> None:
    """A feed is two round trips on the store's append line: BEGIN with the locking
    message, then every row with COMMIT."""
    rec, connections = recorder
    data = CAPTURE.read_bytes()
    half = len(data) // 2
    warm = rec.trace("t0").attempt("a0", api="anthropic-messages")
    warm.feed(data[:half])  # the line holds a used connection, as in a long-lived service
    attempt = rec.trace("t1").attempt("a1", api="anthropic-messages")
    for piece in (data[:half], data[half:]):  # a blob a0 stored already, then a new one
        sent = messages(connections, lambda piece=piece: attempt.feed(piece))
        assert round_trips(sent) == 2, sent
        locking, rows = sent
        assert locking.startswith('Query "BEGIN; SELECT pg_advisory_xact_lock_shared(')
        assert "ts_reserve_positions" in locking
        assert "WHERE trace_key = E't1' ORDER BY ts_events.trace_version DESC LIMIT 1" \
            in locking
        assert "INSERT" not in locking
        assert rows.startswith('Query "INSERT INTO ts_blobs') and rows.endswith('; COMMIT"')
        assert rows.count("INSERT INTO ts_blobs") == 1 and "ON CONFLICT" in rows
        assert rows.count("INSERT INTO ts_events") == 1
        assert "pg_advisory_xact_lock(7245001)" not in " ".join(sent)  # never exclusive
    before = rec.store.head_position()
    attempt.drain()
    assert rec.store.head_position() > before
    assert rec.store.verify().ok


def test_a_pooled_connection_the_server_ended_while_idle_is_replaced(
        recorder: tuple[Any, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from tracestore.store import engine as engines

    rec, connections = recorder
    rec.store.outage_s = 0.0  # no retry: the checkout itself must notice
    rec.trace("t0").attempt("a0", api="anthropic-messages")
    pids = [conn.info.backend_pid for conn in connections if not conn.closed]
    assert pids
    libpq = rec.store.url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(libpq, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    monkeypatch.setattr(engines, "POOL_PING_IDLE_S", 0.0)
    rec.trace("t1").attempt("a1", api="anthropic-messages")  # no error: connected anew
    assert rec.store.verify().ok


def test_an_append_of_known_events_of_one_trace_is_two_messages(
        recorder: tuple[Any, list[Any]]) -> None:
    """A release decision (``append`` of events naming their trace) goes on the append
    line: BEGIN with the trace's lock, its positions, its head, the streams' versions and
    which ids are stored; then the insert with COMMIT -- never the store-wide lock taken
    exclusively.  Appended again, its id is found stored: the line's transaction is
    rolled back and the engine path reports the id skipped."""
    from tracestore.events import FrameReceived, NewEvent, attempt_stream

    rec, connections = recorder
    rec.trace("t0")  # the pool holds a used connection
    event = NewEvent(attempt_stream("a0"), FrameReceived(
        attempt_id="a0", api="openai-responses",
        native={"type": "response.output_text.delta", "delta": "x"}), trace_id="t0")
    rec.store.append([NewEvent(attempt_stream("w"), event.event, trace_id="tw")])  # the line
    sent = messages(connections, lambda: rec.store.append([event]))
    assert round_trips(sent) == 2, sent
    locking, rows = sent
    assert locking.startswith('Query "BEGIN; SELECT pg_advisory_xact_lock_shared(')
    assert "ts_reserve_positions(1)" in locking
    assert "WHERE stream = E'attempt:a0' ORDER BY ts_events.version DESC LIMIT 1" in locking
    assert "id::text, NULL, NULL FROM ts_events WHERE id = ANY(" in locking
    assert rows.startswith('Query "INSERT INTO ts_events') and rows.endswith('; COMMIT"')
    assert "pg_advisory_xact_lock(7245001)" not in " ".join(sent)
    head = rec.store.head_position()
    again = rec.store.append([event])
    assert again.skipped_ids == (event.id,) and len(again.positions) == 0
    assert rec.store.head_position() == head
    assert rec.store.verify().ok


def test_a_recorded_attempt_reads_nothing_outside_its_appends(
        recorder: tuple[Any, list[Any]]) -> None:
    """Opening a trace, starting an attempt, two feeds, and the drain with the decision
    it makes final: five transactions, and no statement outside them (the recorder decides
    from the rows it wrote, inside the drain's transaction; nothing is read back)."""
    rec, connections = recorder
    data = CAPTURE.read_bytes()
    half = len(data) // 2
    rec.trace("t0").attempt("a0", api="anthropic-messages")  # the line holds a connection
    rec.trace("t00")  # and the pool one (the line took the pool's first out of it)

    def record() -> None:
        attempt = rec.trace("t1").attempt("a1", api="anthropic-messages")
        attempt.feed(data[:half])
        attempt.feed(data[half:])
        attempt.drain()

    sent = messages(connections, record)
    outside, inside, transactions = [], False, 0
    for message in sent:
        if message.startswith('Query "BEGIN'):
            inside, transactions = True, transactions + 1
        elif not inside:
            outside.append(message)
        if message.endswith('COMMIT"'):
            inside = False
    assert outside == []
    assert transactions == 5, sent
    # the locking message with BEGIN, then the rows with COMMIT, for the trace's opening,
    # the start, each feed and the drain
    assert round_trips(sent) == 10, sent
    stored = rec.store.read(stream="attempt:a1")
    assert [e.type for e in stored][-2:] == ["transport.drained", "release.decided"]
    assert stored[-1].position == stored[-2].position + 1  # one insert, one transaction
    assert stored[-1].event.status == "held"


@pytest.mark.parametrize("standard_strings", ["on", "off"])
def test_a_text_array_literal_reads_back_every_value_as_given(standard_strings: str) -> None:
    from sqlalchemy import create_engine

    from tracestore.store.pg_bulk import pg_result_sets, pg_text_array

    values = ["t", "it's", "back\\slash", "\\'", 'quo"te', "{br,ace}", "ünï cødé ✓",
              "NULL", "", "\\x41", "E'x'"]
    engine = create_engine(_fresh_pg_url())
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"SET LOCAL standard_conforming_strings = {standard_strings}")
            literal = pg_text_array(conn, values)
            (rows,) = pg_result_sets(conn, f"SELECT unnest({literal})")
            assert [row[0] for row in rows] == values
            (rows,) = pg_result_sets(conn, f"SELECT cardinality({pg_text_array(conn, [])})")
            assert rows == [(0,)]
    finally:
        engine.dispose()
