"""Migration 0007: a PostgreSQL store at 0006 holding rows gains ``trace_key`` (filled from
``trace_id``, ``''`` for the store's own chain) and every uniqueness of ``ts_events``
includes it; the upgraded store verifies and takes appends.  A SQLite store is left as it
was (no ``trace_key``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import PG_URL, _fresh_pg_url
from tracestore.errors import StoreError
from tracestore.events import SCHEMA_VERSIONS, FrameReceived, NewEvent, attempt_stream
from tracestore.store.append_types import canonical_payload
from tracestore.store.chain import GENESIS_HASH, trace_chain_hash
from tracestore.store.log import EventStore

# (trace, frame text) stored at 0006; None: the store's own chain
ROWS = [("a", "1"), ("b", "1"), (None, "s"), ("a", "2")]


def frame(trace: str | None, delta: str) -> NewEvent:
    return NewEvent(attempt_stream(trace or "own"), FrameReceived(
        attempt_id=trace or "own", api="openai-responses",
        native={"type": "response.output_text.delta", "delta": delta}), trace_id=trace)


def _store_at_0006(url: str) -> None:
    """A database migrated to 0006 holding ``ROWS`` on their traces' chains, written as
    0006's code wrote them (no trace key)."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from tracestore.store import migrate

    engine = create_engine(url)
    heads: dict[str | None, tuple[int, str]] = {}
    with engine.begin() as conn:
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "0006")
        for position, (trace, delta) in enumerate(ROWS, 1):
            new = frame(trace, delta)
            payload = canonical_payload(new.event)
            version, prev = heads.get(trace, (0, GENESIS_HASH))
            at = f"2026-01-01T00:00:0{position}.000000+00:00"
            # each trace here has one stream: its stream version is its trace version
            digest = trace_chain_hash(prev, position, version + 1, new.id, new.stream,
                                      version + 1,
                                      new.event.type, SCHEMA_VERSIONS[new.event.type], at,
                                      trace, payload)
            heads[trace] = (version + 1, digest)
            conn.execute(text(
                "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
                "recorded_at, trace_id, payload, hash, trace_version) VALUES (:p, :i, :s, :tv, "
                ":t, :sv, :r, :tr, :pl, :h, :tv)"),
                {"p": position, "i": new.id, "s": new.stream, "t": new.event.type,
                 "sv": SCHEMA_VERSIONS[new.event.type], "r": at, "tr": trace,
                 "pl": payload.decode(), "h": digest, "tv": version + 1})
        if conn.dialect.name == "postgresql":
            conn.execute(text(f"SELECT setval('ts_events_position_seq', {len(ROWS)})"))
    engine.dispose()


def _constraints(store: EventStore) -> dict[str, str]:
    rows = store.fetch_driver(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'ts_events'::regclass AND contype IN ('p', 'u')", (),
        during="the test")
    return {str(name): str(definition) for name, definition in rows}


@pytest.fixture
def pg_url() -> str:
    if not PG_URL:
        pytest.skip("no PostgreSQL server (set TRACESTORE_TEST_PG_URL)")
    return _fresh_pg_url()


def test_a_postgresql_store_at_0006_gains_the_trace_key_and_verifies(pg_url: str) -> None:
    _store_at_0006(pg_url)
    with EventStore(pg_url) as store:
        keys = store.fetch_driver("SELECT position, trace_id, trace_key FROM ts_events "
                                  "ORDER BY position", (), during="the test")
        assert [tuple(row) for row in keys] == [(1, "a", "a"), (2, "b", "b"), (3, None, ""),
                                                (4, "a", "a")]
        assert _constraints(store) == {
            "ts_events_pkey": 'PRIMARY KEY ("position", trace_key)',
            "uq_ts_events_id": "UNIQUE (id, trace_key)",
            "uq_ts_events_stream_version": "UNIQUE (stream, version, trace_key)",
            "uq_ts_events_trace_version": "UNIQUE (trace_key, trace_version)",
        }
        nullable = store.fetch_driver(
            "SELECT is_nullable FROM information_schema.columns "
            "WHERE table_name = 'ts_events' AND column_name = 'trace_key'", (),
            during="the test")
        assert [tuple(row) for row in nullable] == [("NO",)]
        result = store.verify()
        assert (result.ok, result.count) == (True, 4)
        store.append([frame("a", "3"), frame(None, "t")])
        store.append_with(lambda _view: ([frame("c", "1")], []))
        keys = store.fetch_driver("SELECT position, trace_key, trace_version FROM ts_events "
                                  "WHERE position > 4 ORDER BY position", (), during="the test")
        assert [tuple(row) for row in keys] == [(5, "a", 3), (6, "", 2), (7, "c", 1)]
        result = store.verify()
        assert (result.ok, result.count) == (True, 7)


def test_the_database_refuses_a_second_version_of_a_trace_with_the_trace_key(
        pg_url: str) -> None:
    with EventStore(pg_url) as store:
        store.append([frame("a", "1")])
        first = store.read()[0]
        with pytest.raises(StoreError) as refused:
            store.fetch_driver(
                "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
                "recorded_at, trace_id, payload, hash, trace_version, trace_key) "
                "SELECT 99, 'x', 'other', 1, type, schema_version, recorded_at, trace_id, "
                "payload, hash, trace_version, trace_key FROM ts_events RETURNING position",
                (), during="the test")
        assert "uq_ts_events_trace_version" in refused.value.message
        assert [e.id for e in store.read()] == [first.id]


def test_a_sqlite_store_at_0006_upgrades_without_a_trace_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _store_at_0006(url)
    with EventStore(url) as store:
        result = store.verify()
        assert (result.ok, result.count) == (True, 4)
        store.append([frame("a", "3")])
        assert store.verify().ok
    with sqlite3.connect(tmp_path / "old.db") as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(ts_events)")]
        assert "trace_key" not in columns
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("0007",)]
