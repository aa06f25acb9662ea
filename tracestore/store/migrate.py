"""Create and upgrade the schema with Alembic, and refuse databases that are not ours.

The schema is created only by the migrations in ``migrations/``.  A brand-new database is
migrated on first use (a new SQLite file gets the statements they produce replayed without
Alembic: ``store/sqlite_schema.py``, checked against them by a test); an existing database must carry the tracestore marker row, otherwise
we refuse to touch it (``not_our_database``) rather than add tables to someone else's data.
"""

from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING, Any

from tracestore.errors import StoreError
from tracestore.store import STORE_MARKER, sqlite_schema

if TYPE_CHECKING:  # SQLAlchemy is imported by the checks that run through an engine
    from alembic.config import Config
    from sqlalchemy import Connection, Engine

# The newest revision in migrations/versions (tests/test_store_migrate.py checks it against
# Alembic).  Knowing it lets an up-to-date database open without importing Alembic or
# reading the migration scripts, and without taking the write lock: every command opens the
# store, most only read.
SCHEMA_HEAD = "0007"  # 0002 the review queue index, 0003 the SQL views, 0004 the audit
# index, 0005 ts_destinations and the queue's review states in ts_attempts, 0006 one chain
# and one order per trace, 0007 the trace key in every uniqueness of ts_events (PostgreSQL)


def migrations_dir() -> Path:
    """The ``migrations/`` folder: beside the package in a checkout, inside it when installed."""
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").exists():
        return checkout
    installed = Path(__file__).resolve().parents[1] / "_migrations"
    if (installed / "env.py").exists():
        return installed
    raise StoreError("the tracestore migrations are missing from this installation",
                     code="migrations_missing")


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The head revision as Alembic computes it from the scripts (slow; see SCHEMA_HEAD)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def known_revisions(config: Config) -> set[str]:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}


def current_revision(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _is_current(read_engine: Engine) -> bool:
    """True when the database is ours and at SCHEMA_HEAD, checked with plain reads.

    Anything else (a new file, an old schema, a foreign database, an unreadable file) is
    left to ``upgrade``'s full checks under the write lock.
    """
    from sqlalchemy import text
    from sqlalchemy.exc import DatabaseError

    try:
        with read_engine.connect() as conn:
            marker = conn.execute(text("SELECT value FROM ts_meta WHERE key = :k"),
                                  {"k": STORE_MARKER[0]}).scalar()
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DatabaseError:
        return False
    return marker == STORE_MARKER[1] and version == SCHEMA_HEAD


#: The schema check as ONE driver statement (the quick SQLite path: no engine, no compile).
QUICK_CHECK_SQL = ("SELECT (SELECT value FROM ts_meta WHERE key = ?), "
                   "(SELECT version_num FROM alembic_version)")


def is_current_quick(dbapi_conn: Any) -> bool:
    """``_is_current`` on a plain ``sqlite3`` connection: one statement; any error (a new
    file, a foreign database) is "not known to be current", left to the full checks."""
    import sqlite3

    try:
        row = dbapi_conn.execute(QUICK_CHECK_SQL, (STORE_MARKER[0],)).fetchone()
    except sqlite3.Error:
        return False
    return row is not None and tuple(row) == (STORE_MARKER[1], SCHEMA_HEAD)


def _check_ours(conn: Connection, url: str) -> bool:
    """True when the database holds tracestore tables, False when it is empty."""
    from sqlalchemy import inspect, text

    tables = set(inspect(conn).get_table_names())
    if not tables:
        return False
    if "ts_meta" not in tables:
        raise StoreError(
            f"{url} already holds tables that are not a tracestore event log "
            f"({', '.join(sorted(tables)[:5])}); refusing to write to it",
            code="not_our_database",
        )
    row = conn.execute(
        text("SELECT value FROM ts_meta WHERE key = :k"), {"k": STORE_MARKER[0]}
    ).first()
    if row is None or row[0] != STORE_MARKER[1]:
        raise StoreError(f"{url} has an unknown tracestore format marker",
                         code="not_our_database")
    return True


def _require_tables(engine: Engine, url: str) -> None:
    from sqlalchemy import inspect
    from sqlalchemy.exc import DatabaseError

    from tracestore.store.engine import no_store

    try:
        with engine.connect() as conn:
            empty = not inspect(conn).get_table_names()
    except DatabaseError:
        return  # unreadable: upgrade's own checks say what is wrong
    if empty:
        raise no_store(url)


#: The advisory lock key migrations take on PostgreSQL ("tracest" as a 64-bit integer).
MIGRATION_LOCK_KEY = int.from_bytes(b"tracest\x00", "big") >> 1


def require_current(read_engine: Engine, url: str) -> None:
    """For a store opened read-only: ours and at SCHEMA_HEAD, checked with reads only."""
    if _is_current(read_engine):
        return
    _require_tables(read_engine, url)
    from sqlalchemy.exc import DatabaseError, OperationalError

    from tracestore.text.masking import masked_url

    try:
        with read_engine.connect() as conn:
            _check_ours(conn, masked_url(url))
            current = current_revision(conn)
    except (DatabaseError, OperationalError) as exc:
        message = str(exc.orig) if getattr(exc, "orig", None) else str(exc)
        if "not a database" in message or "file is encrypted" in message:
            raise StoreError(f"{masked_url(url)} is not a SQLite database",
                             code="not_our_database") from exc
        raise StoreError(f"cannot open {masked_url(url)} read-only: {message}",
                         code="database_unavailable") from exc
    if current is not None and current not in known_revisions(alembic_config()):
        raise StoreError(
            f"{masked_url(url)} is at schema revision {current}, newer than this tracestore "
            f"knows ({SCHEMA_HEAD}); upgrade tracestore to use it", code="schema_too_new",
            revision=current)
    raise StoreError(f"{masked_url(url)} is at schema revision {current}, not {SCHEMA_HEAD}; "
                     "a read-only command cannot upgrade it (run tracestore init on a "
                     "writable copy)", code="schema_not_current", revision=current)


def create_new_sqlite(conn: Any) -> bool:
    """Create the schema in a brand-new SQLite file on ``conn`` (a ``store.driver``
    connection), without an engine or Alembic: ``sqlite_schema``'s statements in ONE
    ``BEGIN IMMEDIATE`` transaction, as ``upgrade`` replays them.  False (nothing written)
    when the file holds anything by then -- another process created it first, or it is not
    empty: ``upgrade``'s full checks decide."""
    import sqlite3

    try:
        conn.begin()
    except sqlite3.Error:
        return False
    try:
        if conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar() != 0:
            conn.rollback()
            return False
        sqlite_schema.create(conn)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return True


def upgrade(write_engine: Engine, url: str, read_engine: Engine | None = None, *,
            create: bool = True) -> str:
    """Bring the database to the newest migration; return the revision it is at.

    An up-to-date database is recognised with two reads.  Otherwise this runs inside one
    write transaction (``BEGIN IMMEDIATE`` on SQLite), so two processes opening a new
    database at once cannot both create the tables.  With ``create=False`` an empty
    database is ``NotFound(no_store)`` and nothing is written to it.
    """
    from sqlalchemy import text
    from sqlalchemy.exc import DatabaseError, OperationalError

    if _is_current(read_engine or write_engine):
        return SCHEMA_HEAD
    if not create:
        _require_tables(read_engine or write_engine, url)
    head = SCHEMA_HEAD
    try:
        with write_engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # PostgreSQL's DDL does not serialize itself: 8 processes creating the tables
                # of an empty database at once failed 0-4 of 8 (duplicate pg_type rows,
                # "relation already exists").  One transaction-scoped advisory lock makes
                # them take turns; the later ones then find the schema current below.
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                             {"key": MIGRATION_LOCK_KEY})
            ours = _check_ours(conn, url)
            if not ours and conn.dialect.name == "sqlite" and head == sqlite_schema.REVISION:
                # An empty SQLite file: the statements the migrations produce, replayed
                # without Alembic (``store/sqlite_schema.py``; a test keeps them equal).
                sqlite_schema.create(conn)
                return head
            current = current_revision(conn)
            if current == head:
                return head
            config = alembic_config()
            if current is not None and current not in known_revisions(config):
                raise StoreError(
                    f"{url} is at schema revision {current}, newer than this tracestore "
                    f"knows ({head}); upgrade tracestore to use it", code="schema_too_new",
                    revision=current)
            config.attributes["connection"] = conn
            from alembic import command

            command.upgrade(config, "head")
    except (DatabaseError, OperationalError) as exc:
        message = str(exc.orig) if getattr(exc, "orig", None) else str(exc)
        if "not a database" in message or "file is encrypted" in message:
            raise StoreError(f"{url} is not a SQLite database", code="not_our_database") from exc
        from tracestore.text.masking import mask_secrets, masked_url

        raise StoreError(f"cannot open {masked_url(url)}: {mask_secrets(message)}",
                         code="database_unavailable") from exc
    return head
