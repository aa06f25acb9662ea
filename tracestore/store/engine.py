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
  (an archive must verify without write access): ``file:…?mode=ro``, and on an archive nobody can write -- neither the
  file nor its folder writable, no ``-wal`` file beside it -- also ``immutable=1``, because
  a WAL database otherwise needs to create its ``-shm`` file next to it.  Nothing is
  written: no WAL switch, no migration.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from typing import TYPE_CHECKING

from tracestore.errors import InputError, NotFound, StoreError
from tracestore.store import ENV_VAR  # noqa: F401 - defined import-free for the CLI

if TYPE_CHECKING:  # SQLAlchemy loads when an engine is built, or a URL needs its parser
    from sqlalchemy import Engine
    from sqlalchemy.engine import URL

DEFAULT_URL = "sqlite:///tracestore.db"

# How long a writer waits for another writer's lock before "database is locked" (ms).
SQLITE_BUSY_TIMEOUT_MS = 30_000

# A pooled PostgreSQL connection idle longer than this is pinged before it is used again
# (a server restart or an idle timeout ends connections that sit in the pool).  A pre-ping
# on every checkout cost one round trip per append and per read; a connection handed back
# moments ago is alive, and one that died mid-burst fails its statement, which invalidates
# the pool and is retried by an append that outlasts outages (``store.outage``).
POOL_PING_IDLE_S = 5.0

# FULL: each committed ingest survives power loss.  An ingest is one transaction, so the
# sync is paid once per capture or scenario, not per event; NORMAL would save little and
# could silently lose the last ingests, which an evidence store must not do.
SQLITE_SYNCHRONOUS = "FULL"


class SQLiteURL:
    """What ``make_url`` tells of a plain SQLite URL (``sqlite:///path``, ``sqlite://``),
    read without SQLAlchemy: a command on a SQLite file then never imports it (~0.1 s of
    CPU, more than the work of ``release ATTEMPT``).  Only URLs whose path has no ``%``,
    ``?`` or ``#`` are read here -- for them SQLAlchemy's parse is the text after
    ``sqlite:///`` (``tests/test_store_urls.py`` compares the two); any other URL goes to
    SQLAlchemy's parser."""

    drivername = "sqlite"
    port = None
    query: dict[str, str] = {}  # noqa: RUF012 - never mutated: no query is read here

    def __init__(self, url: str, database: str | None) -> None:
        self._url, self.database = url, database

    def get_backend_name(self) -> str:
        return "sqlite"

    def render_as_string(self, hide_password: bool = True) -> str:  # noqa: ARG002 - none
        if self.database is None:
            return self._url
        from urllib.parse import quote

        return "sqlite:///" + quote(self.database, safe=" +/")  # as SQLAlchemy renders it


def _plain_sqlite(url: str) -> SQLiteURL | None:
    if url == "sqlite://":
        return SQLiteURL(url, None)
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not any(mark in path for mark in "%?#"):
            return SQLiteURL(url, path)
    return None


@functools.lru_cache(maxsize=64)
def make_url(url: str) -> URL | SQLiteURL:
    """SQLAlchemy's URL parse (a plain SQLite URL: ``SQLiteURL``), cached (URLs are
    immutable): opening a store asks about the same URL a dozen times (backend, file,
    memory, writability), ~12 µs a parse."""
    plain = _plain_sqlite(url)
    if plain is not None:
        return plain
    from sqlalchemy.engine import make_url as sqlalchemy_make_url

    return sqlalchemy_make_url(url)


def _argument_error() -> type[Exception]:
    """SQLAlchemy's "not a URL" error (only SQLAlchemy's parser raises it)."""
    from sqlalchemy.exc import ArgumentError

    return ArgumentError


def resolve_url(url: str | None) -> str:
    """The database URL: the option, else ``$TRACESTORE_DB``, else ``tracestore.db`` here."""
    chosen = url or os.environ.get(ENV_VAR) or DEFAULT_URL
    if "://" not in chosen:  # a bare path is a SQLite file; be kind to people
        chosen = f"sqlite:///{chosen}"
    from tracestore.text.masking import masked_url

    try:
        parsed = make_url(chosen)
        parsed.port  # noqa: B018 - a port that is not a number fails here, not in the driver
    except (ValueError, _argument_error()) as exc:  # (evaluated only when one is raised)
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

    from sqlalchemy import create_engine

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
    from sqlalchemy import create_engine
    from sqlalchemy.exc import NoSuchModuleError
    from sqlalchemy.pool import StaticPool

    if not is_sqlite(url):
        try:
            engine = create_engine(url)
        except NoSuchModuleError as exc:
            raise InputError(f"{make_url(url).drivername!r} is not a database this tracestore "
                             "can use (sqlite:///file.db or postgresql+psycopg://…)",
                             code="invalid_db_url") from exc
        except ModuleNotFoundError as exc:
            raise StoreError(
                f"the database driver for {make_url(url).drivername} is not installed "
                f"({exc.name}); for PostgreSQL: pip install 'tracestore[postgres]'",
                code="driver_missing") from exc
        _install_idle_ping(engine)
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


def _install_idle_ping(engine: Engine) -> None:
    """Ping a pooled connection on checkout only when it sat idle longer than
    ``POOL_PING_IDLE_S``; a dead one invalidates the pool and the checkout connects anew."""
    import time

    from sqlalchemy import event, exc

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since <= POOL_PING_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as error:  # noqa: BLE001 - any failure means: connect anew
            raise exc.InvalidatePoolError(f"idle connection failed its ping: {error}") \
                from error


def _install_sqlite_hooks(engine: Engine, *, immediate: bool, wal: bool) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        _sqlite_pragmas(dbapi_conn, wal)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def sqlite_file(url: str) -> str | None:
    """The file path of a SQLite file URL (``None`` for another backend or ``:memory:``)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    if parsed.query or parsed.drivername != "sqlite":
        return None  # URL options or another driver: only the engine knows what they mean
    return parsed.database


def write_connect(path: str) -> Any:
    """A plain ``sqlite3`` connection to write ``path`` in transactions of its own
    (``store.driver``): set up as a connection of the writer engine is (autocommit at the
    driver, ``BEGIN IMMEDIATE`` issued by the caller; busy timeout, WAL, synchronous)."""
    import sqlite3

    conn = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False, isolation_level=None)
    _sqlite_pragmas(conn, wal=True)
    return conn


def quick_connect(path: str, *, read_only: bool) -> Any:
    """A plain ``sqlite3`` connection for one-statement reads (the queue, the schema check):
    what an engine's read connection is, without building an engine (~0.3 ms each, more
    than the indexed query a reviewer's filter is).  Autocommit at the driver, so each
    statement is its own read transaction (WAL: never blocks a writer); the same busy
    timeout.  ``None`` when the file does not exist or is empty: connecting would create
    it, which only the engine path (and its migration) may do."""
    import sqlite3

    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    timeout_s = SQLITE_BUSY_TIMEOUT_MS / 1000
    if read_only:
        conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=timeout_s,
                               check_same_thread=False, isolation_level=None)
    else:
        conn = sqlite3.connect(path, timeout=timeout_s, check_same_thread=False,
                               isolation_level=None)
    return conn
