"""Migrations: the code's idea of the head revision matches Alembic's, and opening an
up-to-date store needs neither Alembic nor the write lock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracestore.store import migrate
from tracestore.store.log import EventStore


def test_schema_head_is_alembics_head() -> None:
    assert migrate.head_revision() == migrate.SCHEMA_HEAD


def test_a_current_store_opens_while_another_process_holds_the_write_lock(db_file: Path) -> None:
    EventStore(f"sqlite:///{db_file}").close()  # created and migrated
    holder = sqlite3.connect(db_file, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a long ingest in another process
    try:
        store = EventStore(f"sqlite:///{db_file}")
        assert store.head_position() == 0
        store.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_new_sqlite_file_holds_exactly_what_the_migrations_create(tmp_path: Path) -> None:
    """A new SQLite store gets ``sqlite_schema.STATEMENTS`` replayed instead of Alembic
    (issue 25 item 2): every ``sqlite_master`` entry and every row must be what Alembic
    running the migrations leaves on an empty file."""
    from alembic import command
    from sqlalchemy import create_engine

    from tracestore.store import sqlite_schema

    by_alembic = tmp_path / "alembic.db"
    engine = create_engine(f"sqlite:///{by_alembic}")
    with engine.begin() as conn:
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    engine.dispose()
    new = tmp_path / "new.db"
    EventStore(f"sqlite:///{new}").close()
    assert sqlite_schema.REVISION == migrate.SCHEMA_HEAD
    with sqlite3.connect(by_alembic) as want_conn, sqlite3.connect(new) as got_conn:
        want = sqlite_schema.dump(want_conn)
        assert want == sqlite_schema.STATEMENTS, (
            "the migrations changed: put this in tracestore/store/sqlite_schema.py\n"
            + sqlite_schema.render(want))
        assert sqlite_schema.dump(got_conn) == want
        for pragma in ("user_version", "application_id", "encoding", "auto_vacuum"):
            assert got_conn.execute(f"PRAGMA {pragma}").fetchall() == \
                want_conn.execute(f"PRAGMA {pragma}").fetchall()
    with EventStore(f"sqlite:///{new}") as store:
        assert store.verify().ok


def test_creating_a_sqlite_store_does_not_import_alembic(tmp_path: Path) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'new.db'}"
    code = ("import sys\nfrom tracestore.store.log import EventStore\n"
            f"EventStore({url!r}).close()\nprint('alembic' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False"]
    store = EventStore(url)
    try:
        assert migrate._is_current(store._reader)
    finally:
        store.close()
