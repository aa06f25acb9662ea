"""Issue 21 (performance): the structural properties behind "the queue in about the time of
one indexed query" -- a command on a store whose index is up to date builds no SQLAlchemy
engine and runs a handful of driver statements; the index (first build or catch-up) is
built with bulk statements, not a compiled statement per trace; the rows equal a rebuild."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.clihelp import run
from tests.test_review_amend import replay_into
from tracestore.review import queue_index as qi
from tracestore.store import engine as engines
from tracestore.store.log import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "queue.db"
    with EventStore(f"sqlite:///{path}") as opened:
        for name in ("t7", "t1", "t8"):
            replay_into(opened, name)
        qi.sync(opened)
    return path


def _rows(path: Path) -> tuple[list[tuple], list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return (conn.execute("SELECT * FROM ts_attempt_index ORDER BY attempt_id").fetchall(),
                conn.execute("SELECT * FROM ts_review_index ORDER BY attempt_id").fetchall())
    finally:
        conn.close()


def test_a_queue_command_on_a_current_index_builds_no_engine(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = engines.make_engines

    def counting(url: str, **kwargs: object) -> object:
        made.append(url)
        return real(url, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engines, "make_engines", counting)
    code, out, err = run("attempts", "--status", "stopped", "--json", db=db)
    assert code == 0, err
    assert [a["attempt_id"] for a in json.loads(out)["attempts"]] == ["t7", "t8-old"]
    code, out, err = run("reviews", "--state", "stale", "--json", db=db)
    assert code == 0, err
    assert json.loads(out) == {"reviews": []}
    assert made == []
    # The engines are built on first use by whatever needs them (a write, a model read).
    with EventStore(f"sqlite:///{db}", create=False) as store:
        assert store._engines is None
        store.head_position()
        assert store._engines is not None


def test_the_queue_reads_through_a_few_driver_statements(db: Path) -> None:
    statements: list[str] = []
    with EventStore(f"sqlite:///{db}", create=False) as store:
        conn = store._quick_take()
        conn.set_trace_callback(statements.append)
        store._quick_give(conn)
        statements.clear()
        qi.sync(store)
        rows = qi.query_attempts(store, status="released")
    assert [r["attempt_id"] for r in rows] == ["t1", "t8-new"]
    assert len(statements) == 2  # the freshness check, the indexed SELECT


def test_the_bulk_build_equals_a_rebuild_and_compiles_nothing_per_trace(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _rows(db)
    assert len(built[0]) == 4
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM ts_attempt_index")
    conn.execute("DELETE FROM ts_review_index")
    conn.execute("DELETE FROM ts_index_state")
    conn.commit()
    conn.close()
    executed: list[str] = []
    with EventStore(f"sqlite:///{db}", create=False) as store:
        from sqlalchemy import event

        event.listen(store._writer, "before_cursor_execute",
                     lambda *a: executed.append(a[2]))
        assert qi.sync(store) == 3  # three traces rebuilt
    assert _rows(db) == built
    # Through SQLAlchemy: BEGIN, the lock/head/position reads, the trace list, the state
    # row -- a fixed number, whatever the number of traces (their reads and the row
    # replacement go through one driver cursor with executemany).
    assert len(executed) <= 8, executed
