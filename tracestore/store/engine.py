"""Database URLs and engines: SQLite by default, PostgreSQL by URL.

SQLite facts that shape this module (see docs/store.md):

* Writers must start with ``BEGIN IMMEDIATE``.  With pysqlite's deferred ``BEGIN``, several
  processes doing read-head-then-append lose transactions to "database is locked" even with
  a busy timeout, because a reader cannot upgrade to a writer while another writes.  We use
  the documented SQLAlchemy recipe: autocommit at the driver (``isolation_level=None``) and
  emit ``BEGIN IMMEDIATE`` ourselves on ``begin``.
* Readers use a second engine with a plain deferred ``BEGIN``; in WAL mode they never block
  writers and never take the write lock.
* WAL persists in the file; ``busy_timeout`` and ``synchronous`` are per connection.
* Read-only commands (``verify``, ``events``, ``export`` …) open a SQLite file read-only
  (issue 26 item 7): ``file:…?mode=ro``, and on an archive nobody can write -- neither the
  file nor its folder writable, no ``-wal`` file beside it -- also ``immutable=1``, because
  a WAL database otherwise needs to create its ``-shm`` file next to it.  Nothing is
  written: no WAL switch, no migration.
"""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from tracestore.errors import InputError, NotFound, StoreError
from tracestore.store import ENV_VAR  # noqa: F401 - defined import-free for the CLI

DEFAULT_URL = "sqlite:///tracestore.db"

# How long a writer waits for another writer's lock before "database is locked" (ms).
SQLITE_BUSY_TIMEOUT_MS = 30_000

# FULL: each committed ingest survives power loss.  An ingest is one transaction, so the
# sync is paid once per capture or scenario, not per event; NORMAL would save little and
# could silently lose the last ingests, which an evidence store must not do.
SQLITE_SYNCHRONOUS = "FULL"


def resolve_url(url: str | None) -> str:
    """The database URL: the option, else ``$TRACESTORE_DB``, else ``tracestore.db`` here."""
    chosen = url or os.environ.get(ENV_VAR) or DEFAULT_URL
    if "://" not in chosen:  # a bare path is a SQLite file; be kind to people
        chosen = f"sqlite:///{chosen}"
    from tracestore.text.masking import masked_url

    try:
        parsed = make_url(chosen)
        parsed.port  # noqa: B018 - a port that is not a number fails here, not in the driver
    except (ArgumentError, ValueError) as exc:
        raise InputError(f"{masked_url(chosen)!r} is not a database URL",
                         code="invalid_db_url") from None if isinstance(exc, ValueError) else exc
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise InputError(f"{masked_url(chosen)!r} names port {parsed.port}, which is not "
                         "between 1 and 65535", code="invalid_db_url")
    return chosen


def no_store(url: str) -> NotFound:
    shown = make_url(url).database if is_sqlite(url) else make_url(url).render_as_string()
    return NotFound(f"no tracestore store exists at {shown}; check --db / ${ENV_VAR}, or "
                    "create one with tracestore init", code="no_store", db=shown)


def require_existing_file(url: str) -> None:
    """For read-only commands: a SQLite file that does not exist is a mistyped path.

    Connecting would create it (and setting WAL would write a header into an empty file),
    so this is checked before any engine is made.
    """
    if is_sqlite(url) and not is_memory_sqlite(url):
        path = make_url(url).database or ""
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            raise no_store(url)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def is_memory_sqlite(url: str) -> bool:
    parsed = make_url(url)
    return is_sqlite(url) and parsed.database in (None, "", ":memory:")


def _sqlite_pragmas(dbapi_conn: Any, wal: bool) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see module docstring)
    cursor = dbapi_conn.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    if wal:
        cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute(f"PRAGMA synchronous = {SQLITE_SYNCHRONOUS}")
    cursor.close()


def cannot_write(url: str) -> bool:
    """Whether ``url`` is a SQLite file this process cannot write (the file or its folder,
    where SQLite keeps its ``-wal`` and ``-shm``): an archive, opened read-only."""
    if not is_sqlite(url) or is_memory_sqlite(url):
        return False
    absolute = os.path.abspath(make_url(url).database or "")
    return os.path.exists(absolute) and not (
        os.access(absolute, os.W_OK) and os.access(os.path.dirname(absolute), os.W_OK))


def read_only_uri(path: str) -> str:
    """The SQLite URI opening ``path`` read-only (``immutable=1`` on an unwritable archive)."""
    from urllib.parse import quote

    absolute = os.path.abspath(path)
    folder = os.path.dirname(absolute)
    wal = absolute + "-wal"
    archived = (not os.access(absolute, os.W_OK) and not os.access(folder, os.W_OK)
                and (not os.path.exists(wal) or os.path.getsize(wal) == 0))
    return f"file:{quote(absolute)}?mode=ro" + ("&immutable=1" if archived else "")


def _read_only_engine(url: str) -> Engine:
    import sqlite3

    uri = read_only_uri(make_url(url).database or "")
    timeout_s = SQLITE_BUSY_TIMEOUT_MS / 1000
    engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
        uri, uri=True, timeout=timeout_s, check_same_thread=False))
    _install_sqlite_hooks(engine, immediate=False, wal=False)
    return engine


def make_engines(url: str, *, read_only: bool = False) -> tuple[Engine, Engine]:
    """Return ``(write_engine, read_engine)`` for ``url``.

    For SQLite the write engine begins every transaction with ``BEGIN IMMEDIATE``.  An
    in-memory SQLite database has one connection shared by both (StaticPool), otherwise each
    engine would see its own empty database.
    """
    if not is_sqlite(url):
        try:
            engine = create_engine(url, pool_pre_ping=True)
        except NoSuchModuleError as exc:
            raise InputError(f"{make_url(url).drivername!r} is not a database this tracestore "
                             "can use (sqlite:///file.db or postgresql+psycopg://…)",
                             code="invalid_db_url") from exc
        except ModuleNotFoundError as exc:
            raise StoreError(
                f"the database driver for {make_url(url).drivername} is not installed "
                f"({exc.name}); for PostgreSQL: pip install 'tracestore[postgres]'",
                code="driver_missing") from exc
        return engine, engine
    if read_only and not is_memory_sqlite(url):
        engine = _read_only_engine(url)
        return engine, engine
    if is_memory_sqlite(url):
        engine = create_engine(
            "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
        _install_sqlite_hooks(engine, immediate=True, wal=False)
        return engine, engine
    timeout_s = SQLITE_BUSY_TIMEOUT_MS / 1000
    writer = create_engine(url, connect_args={"timeout": timeout_s})
    reader = create_engine(url, connect_args={"timeout": timeout_s})
    _install_sqlite_hooks(writer, immediate=True, wal=True)
    _install_sqlite_hooks(reader, immediate=False, wal=True)
    return writer, reader


def _install_sqlite_hooks(engine: Engine, *, immediate: bool, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        _sqlite_pragmas(dbapi_conn, wal)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
