"""SQLite-specific guarantees: triggers, tamper evidence, WAL, concurrency, foreign files."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from tracestore.errors import StoreError
from tracestore.events import FrameReceived, NewEvent, attempt_stream
from tracestore.store.log import EventStore


def frames(attempt: str, count: int) -> list[NewEvent]:
    return [NewEvent(attempt_stream(attempt),
                     FrameReceived(attempt_id=attempt, api="openai-responses",
                                   native={"type": "response.output_text.delta", "delta": f"{n}"}),
                     trace_id=attempt) for n in range(count)]


def filled(db_file: Path, count: int = 5) -> EventStore:
    store = EventStore(f"sqlite:///{db_file}")
    store.append(frames("a", count))
    return store


@pytest.mark.parametrize("statement", [
    "UPDATE ts_events SET payload = '{}' WHERE position = 2",
    "DELETE FROM ts_events WHERE position = 2",
    "UPDATE ts_blobs SET size = 0",
    "DELETE FROM ts_blobs",
])
def test_raw_update_or_delete_through_sqlite3_fails(db_file: Path, statement: str) -> None:
    store = filled(db_file)
    store.append([], blob_data=[b"bytes"])
    store.close()
    conn = sqlite3.connect(db_file)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(statement)
    conn.close()
    assert EventStore(f"sqlite:///{db_file}").verify().count == 5


def _tamper(db_file: Path, sql: str) -> None:
    conn = sqlite3.connect(db_file)
    conn.execute("DROP TRIGGER ts_events_no_update")
    conn.execute("DROP TRIGGER ts_events_no_delete")
    conn.execute(sql)
    conn.commit()
    conn.close()


def test_verify_names_the_position_of_one_changed_byte(db_file: Path) -> None:
    filled(db_file, 6).close()
    conn = sqlite3.connect(db_file)
    payload = conn.execute("SELECT payload FROM ts_events WHERE position = 4").fetchone()[0]
    conn.close()
    changed = payload.replace('"delta":"3"', '"delta":"4"')
    assert len(changed) == len(payload) and changed != payload
    _tamper(db_file, f"UPDATE ts_events SET payload = '{changed}' WHERE position = 4")
    result = EventStore(f"sqlite:///{db_file}").verify()
    assert (result.ok, result.first_broken_position, result.count) == (False, 4, 3)


def test_verify_names_a_deleted_position(db_file: Path) -> None:
    filled(db_file, 6).close()
    _tamper(db_file, "DELETE FROM ts_events WHERE position = 3")
    result = EventStore(f"sqlite:///{db_file}").verify()
    assert (result.ok, result.first_broken_position) == (False, 4)
    assert result.reason == ("trace 'a' is missing version 3 (the next stored is version 4, "
                             "at position 4)")


def test_database_is_in_wal_mode(db_file: Path) -> None:
    filled(db_file).close()
    conn = sqlite3.connect(db_file)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_a_foreign_sqlite_database_is_refused_untouched(db_file: Path) -> None:
    conn = sqlite3.connect(db_file)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as caught:
        EventStore(f"sqlite:///{db_file}")
    assert caught.value.code == "not_our_database"
    conn = sqlite3.connect(db_file)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"customers"}


def test_a_file_that_is_not_sqlite_is_refused(db_file: Path) -> None:
    db_file.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(StoreError) as caught:
        EventStore(f"sqlite:///{db_file}")
    assert caught.value.code == "not_our_database"


def _append_worker(url: str, worker: int, count: int) -> None:
    store = EventStore(url)
    for n in range(count):
        # One event per transaction: the worst case for lock contention.
        store.append([NewEvent(attempt_stream(f"w{worker}"),
                               FrameReceived(attempt_id=f"w{worker}", api="x",
                                             native={"n": n}))])
    store.close()


def test_four_processes_appending_250_each_lose_nothing(db_file: Path) -> None:
    url = f"sqlite:///{db_file}"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_worker, args=(url, w, 250)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=240)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    store = EventStore(url)
    stored = store.read()
    assert len(stored) == 1000
    assert [e.position for e in stored] == list(range(1, 1001))
    assert len({e.id for e in stored}) == 1000
    for worker in range(4):
        versions = [e.version for e in stored if e.stream == f"attempt:w{worker}"]
        assert versions == list(range(1, 251))
        assert [e.event.native["n"] for e in stored if e.stream == f"attempt:w{worker}"] \
            == list(range(250))
    assert store.verify().ok
