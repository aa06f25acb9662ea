"""Appends into a SQLite file on plain sqlite3 connections (``store/driver.py``, issue 25).

A SQLite file's write transactions no longer go through SQLAlchemy's writer engine; these
tests hold that path to the store's contract where the engine path was held to it: a row
the database refuses is ``append_refused`` and leaves nothing, a failure mid-append leaves
nothing, a refused group rolls back alone, the connection is reused after a failure, and a
plain SQLite URL reads as SQLAlchemy reads it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url as sqlalchemy_make_url

from clihelp import run

from tracestore.errors import StoreError
from tracestore.events import FrameReceived, NewEvent, attempt_stream
from tracestore.store import engine as engines
from tracestore.store.driver import DriverConnection
from tracestore.store.log import EventStore
from tracestore.store.schema import events


def frame(attempt: str, n: int) -> NewEvent:
    return NewEvent(attempt_stream(attempt),
                    FrameReceived(attempt_id=attempt, api="bedrock-converse-stream",
                                  native={"contentBlockDelta": {"n": n}}, index=n),
                    trace_id="t")


@pytest.fixture
def store(tmp_path: Path) -> EventStore:
    opened = EventStore(f"sqlite:///{tmp_path / 's.db'}")
    yield opened
    opened.close()


def test_a_new_sqlite_file_is_created_without_an_engine(store: EventStore) -> None:
    assert store._engines is None  # the schema came from store/sqlite_schema.py's statements
    store.append([frame("a", 0)])
    assert store._engines is None  # and the append ran on a driver connection
    assert [type(c) for c in store._write_pool] == [DriverConnection]
    assert store.verify().ok  # (verify builds the read engine)


def test_a_row_the_database_refuses_is_typed_and_leaves_nothing(
        store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    first = frame("a", 0)
    store.append([first, frame("a", 1)])
    # The store no longer sees the stored id, so the INSERT itself meets the unique id.
    monkeypatch.setattr(EventStore, "_existing_ids", lambda self, conn, ids: set())
    with pytest.raises(StoreError) as caught:
        store.append([frame("b", 0), first, frame("b", 1)])
    assert caught.value.code == "append_refused"
    assert "UNIQUE constraint failed: ts_events.id" in str(caught.value)
    monkeypatch.undo()
    assert store.head_position() == 2
    assert store.stream_version("attempt:b") == 0
    assert store.append([frame("b", 0)]).positions == (3,)  # the same connection, reused
    assert len(store._write_pool) == 1
    assert store.verify().ok


def test_a_failure_in_the_middle_of_an_append_leaves_no_event(store: EventStore) -> None:
    store.append([frame("a", 0)])

    class Exploding:
        def written(self, position: int, version: int, new: object, digest: str) -> None:
            if position == 3:
                raise RuntimeError("injected failure mid-append")

        def then(self, view: object, result: object) -> list:
            return []

    batch = [frame("a", n) for n in range(1, 4)]
    with pytest.raises(RuntimeError, match="mid-append"):
        store.append_with(lambda _view: (batch, []), tap=Exploding())
    assert store.head_position() == 1
    assert store.append([frame("a", 1)]).positions == (2,)
    assert store.verify().count == 2


def test_a_refused_group_rolls_back_alone(store: EventStore,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first = frame("a", 0)
    store.append([first])
    monkeypatch.setattr(EventStore, "_existing_ids", lambda self, conn, ids: set())
    outcomes = store.append_groups([
        ("b", [frame("b", 0)], None, ()),
        ("a", [frame("a", 1), first], None, ()),
        ("a", [frame("a", 2)], None, ()),
        ("c", [frame("c", 0)], None, ()),
    ])
    monkeypatch.undo()
    assert [getattr(o, "code", None) or o.positions for o in outcomes] == [
        (2,), "append_refused", "append_refused", (3,)]
    assert [(e.stream, e.version) for e in store.read()] == [
        ("attempt:a", 1), ("attempt:b", 1), ("attempt:c", 1)]
    assert store.verify().ok


def test_a_blob_is_stored_once_inside_the_append(store: EventStore) -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: written piece by piece (incremental blob I/O)
    first = store.append([frame("a", 0)], blob_data=[big, b"small"])
    again = store.append([frame("a", 1)], blob_data=[big])
    assert first.blobs_stored == (hashlib.sha256(big).hexdigest(),
                                  hashlib.sha256(b"small").hexdigest())
    assert again.blobs_stored == first.blobs_stored[:1]
    assert store.get_blob(first.blobs_stored[0]) == big
    assert store.get_blob(first.blobs_stored[1]) == b"small"
    rows = store.fetch_driver("SELECT count(*) FROM ts_blobs")
    assert rows == [(2,)]


def test_a_core_statement_runs_on_the_driver_connection(tmp_path: Path) -> None:
    raw = sqlite3.connect(":memory:", isolation_level=None)
    conn = DriverConnection(raw)
    conn.exec_driver_sql("CREATE TABLE ts_events (position INTEGER PRIMARY KEY, id TEXT, "
                         "stream TEXT, version INTEGER, type TEXT, schema_version INTEGER, "
                         "recorded_at TEXT, trace_id TEXT, payload TEXT, hash TEXT)")
    conn.begin()
    conn.exec_driver_sql("INSERT INTO ts_events (position, id, stream) VALUES (?, ?, ?)",
                         [(1, "e1", "s"), (2, "e2", "s"), (3, "e3", "u")])
    savepoint = conn.begin_nested()
    conn.exec_driver_sql("INSERT INTO ts_events (position, id, stream) VALUES (?, ?, ?)",
                         (4, "e4", "s"))
    savepoint.rollback()
    found = conn.execute(select(events.c.id).where(events.c.id.in_(["e1", "e3", "e4"]))
                         .order_by(events.c.position)).scalars().all()
    conn.commit()
    assert found == ["e1", "e3"]
    assert conn.exec_driver_sql("SELECT count(*) FROM ts_events").scalar() == 3


@pytest.mark.parametrize("url", [
    "sqlite:///a.db", "sqlite:////tmp/a.db", "sqlite://", "sqlite:///:memory:", "sqlite:///",
    "sqlite:///a b.db", "sqlite:///~/a.db", "sqlite:///a@b.db", "sqlite:///a:b.db",
    "sqlite:///a/../b.db",
])
def test_a_plain_sqlite_url_reads_as_sqlalchemy_reads_it(url: str) -> None:
    ours, theirs = engines.make_url(url), sqlalchemy_make_url(url)
    assert isinstance(ours, engines.SQLiteURL)
    assert (ours.database, ours.drivername, dict(ours.query), ours.port,
            ours.get_backend_name(), ours.render_as_string(hide_password=True)) == (
        theirs.database, theirs.drivername, dict(theirs.query), theirs.port,
        theirs.get_backend_name(), theirs.render_as_string(hide_password=True))


@pytest.mark.parametrize("url", ["sqlite:///a%20b.db", "sqlite:///x.db?mode=ro",
                                 "sqlite+pysqlite:///a.db", "postgresql://u:p@h/db"])
def test_any_other_url_goes_to_sqlalchemys_parser(url: str) -> None:
    assert not isinstance(engines.make_url(url), engines.SQLiteURL)
    assert engines.make_url(url).database == sqlalchemy_make_url(url).database


def test_release_of_an_attempt_in_a_sqlite_file_imports_no_sqlalchemy(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    t1 = Path(__file__).resolve().parent.parent / "fixtures/projections/t1.json"
    # the store is written in-process; only the release under test runs in a fresh one
    assert run("ingest", str(t1), "--attempt", "a1", db=db)[0] == 0
    probe = ("import runpy, sys; sys.argv = ['tracestore', 'release', 'a1', '--json', "
             f"'--db', {str(db)!r}]\n"
             "try:\n    runpy.run_module('tracestore', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('SA' if 'sqlalchemy' in sys.modules else 'no SA', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    decision = json.loads(done.stdout)
    assert (decision["attempt_id"], decision["status"], decision["reasons"]) == (
        "a1", "held", ["no_semantic_rule"])
    assert done.stderr.strip().splitlines()[-1] == "no SA"


def test_a_store_that_cannot_be_created_is_a_typed_error_and_writes_nothing(
        tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "s.db"
    with pytest.raises(StoreError) as caught:
        EventStore(f"sqlite:///{missing}")
    assert caught.value.code == "database_unavailable"
    assert str(caught.value) == (f"database_unavailable: cannot open sqlite:///{missing}: "
                                 "unable to open database file")
    assert not missing.parent.exists()
