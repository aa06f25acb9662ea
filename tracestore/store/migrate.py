"""Create and upgrade the schema with Alembic, and refuse databases that are not ours.

The schema is created only by the migrations in ``migrations/``.  A brand-new database is
migrated on first use; an existing database must carry the tracestore marker row, otherwise
we refuse to touch it (``not_our_database``) rather than add tables to someone else's data.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DatabaseError, OperationalError

from tracestore.errors import StoreError
from tracestore.store.schema import STORE_MARKER


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
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def _check_ours(conn: Connection, url: str) -> bool:
    """True when the database holds tracestore tables, False when it is empty."""
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


def upgrade(write_engine: Engine, url: str) -> str:
    """Bring the database to the newest migration; return the revision it is at.

    Runs inside one write transaction (``BEGIN IMMEDIATE`` on SQLite), so two processes
    opening a new database at once cannot both create the tables.
    """
    head = head_revision()
    try:
        with write_engine.begin() as conn:
            _check_ours(conn, url)
            if current_revision(conn) == head:
                return head
            config = alembic_config()
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
    except (DatabaseError, OperationalError) as exc:
        message = str(exc.orig) if getattr(exc, "orig", None) else str(exc)
        if "not a database" in message or "file is encrypted" in message:
            raise StoreError(f"{url} is not a SQLite database", code="not_our_database") from exc
        raise StoreError(f"cannot open {url}: {message}", code="database_unavailable") from exc
    return head
