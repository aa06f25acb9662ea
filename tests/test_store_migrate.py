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
