"""How an ``EventStore`` reaches its database: SQLAlchemy engines built on first use, and
for a SQLite file a small pool of plain ``sqlite3`` connections for one-statement reads.

Building the two engines (writer with ``BEGIN IMMEDIATE``, reader) and checking the schema
through them cost ~0.8 ms, more than the indexed query a reviewer's filter is.
A SQLite file whose schema is current opens on ONE plain connection with ONE statement
(``migrate.is_current_quick``); reads that are one statement (``fetch_driver``) or a few in
one snapshot (``driver_reads``) run on such connections, and the engines are built only when
something needs them (a write, a whole-store read through SQLAlchemy).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tracestore.store import engine as engines
from tracestore.store import migrate
from tracestore.store.dberrors import driver_errors
from tracestore.store.reads import database_error

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from tracestore.store.driver import DriverConnection

#: Plain connections a store keeps for reuse (more are opened when threads read at once).
_QUICK_KEPT = 4


class StoreConnections:
    """The connection half of ``EventStore`` (it supplies ``url`` and ``read_only``)."""

    url: str
    read_only: bool

    def _init_connections(self) -> None:
        self._engines: tuple[Engine, Engine] | None = None
        self._quick_lock = threading.Lock()
        self._quick_pool: list[Any] = []
        self._write_pool: list[DriverConnection] = []
        self._sqlite_path = engines.sqlite_file(self.url)
        self._line: Any = None
        "PostgreSQL: the connection recorder appends are sent on (``store.pg_append``)."

    def _engine_pair(self) -> tuple[Engine, Engine]:
        pair = self._engines
        if pair is None:
            with self._quick_lock:
                pair = self._engines
                if pair is None:
                    pair = self._engines = engines.make_engines(self.url,
                                                                read_only=self.read_only)
        return pair

    @property
    def _writer(self) -> Engine:
        return self._engine_pair()[0]

    @property
    def _reader(self) -> Engine:
        return self._engine_pair()[1]

    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[Any]:
        """One write transaction: on a SQLite file a plain ``sqlite3`` connection kept by
        the store (``store.driver``: ``BEGIN IMMEDIATE`` ... ``COMMIT``, as the writer engine
        does, without building it or importing SQLAlchemy); elsewhere the writer engine's
        ``begin()``.  Rolled back when the block raises."""
        if self._sqlite_path is None or self.read_only:
            with self._writer.begin() as econn:
                yield econn
            return
        conn = self._write_take()
        try:
            conn.begin()
            yield conn
            conn.commit()
        except BaseException:
            try:
                conn.rollback()
            except driver_errors():
                conn.close()  # a connection that cannot roll back is not reused
                raise
            self._write_give(conn)
            raise
        self._write_give(conn)

    def _write_take(self) -> DriverConnection:
        with self._quick_lock:
            if self._write_pool:
                return self._write_pool.pop()
        from tracestore.store.driver import DriverConnection

        assert self._sqlite_path is not None
        return DriverConnection(engines.write_connect(self._sqlite_path))

    def _write_give(self, conn: DriverConnection) -> None:
        with self._quick_lock:
            if len(self._write_pool) < _QUICK_KEPT:
                self._write_pool.append(conn)
                return
        conn.close()

    def _quick_current(self) -> bool:
        """Whether the SQLite file is ours at SCHEMA_HEAD, on a quick connection (kept for
        the reads that follow)."""
        conn = self._quick_take()
        if conn is None:
            return False
        try:
            ok = migrate.is_current_quick(conn)
        except BaseException:
            conn.close()
            raise
        if ok:
            self._quick_give(conn)
        else:
            conn.close()
        return ok

    def _quick_take(self) -> Any:
        with self._quick_lock:
            if self._quick_pool:
                return self._quick_pool.pop()
        assert self._sqlite_path is not None
        return engines.quick_connect(self._sqlite_path, read_only=self.read_only)

    def _quick_give(self, conn: Any) -> None:
        with self._quick_lock:
            if len(self._quick_pool) < _QUICK_KEPT:
                self._quick_pool.append(conn)
                return
        conn.close()

    def fetch_driver(self, sql: str, params: Sequence[Any] = (), *,
                     during: str = "in a read") -> list[tuple[Any, ...]]:
        """Every row of ONE read statement in driver SQL (``self._mark`` placeholders).

        On a SQLite file: a plain ``sqlite3`` connection kept by the store (no engine, no
        statement compile; autocommit, so the statement is its own read transaction).
        Elsewhere: a connection of the read engine.  A driver error is a ``StoreError``
        (``store_damaged`` / ``database_unavailable``)."""
        if self._sqlite_path is None:
            try:
                with self._reader.connect() as conn:
                    return [tuple(r) for r in conn.exec_driver_sql(sql, tuple(params)).all()]
            except driver_errors() as exc:
                raise database_error(exc, self.url, during) from exc
        import sqlite3

        conn = self._quick_take()
        if conn is None:  # the file went away: the engine path says what is wrong
            try:
                with self._reader.connect() as econn:
                    return [tuple(r) for r in econn.exec_driver_sql(sql, tuple(params)).all()]
            except driver_errors() as exc:
                raise database_error(exc, self.url, during) from exc
        try:
            rows = conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            conn.close()
            raise database_error(exc, self.url, during) from exc
        except BaseException:
            conn.close()
            raise
        self._quick_give(conn)
        return rows

    @contextlib.contextmanager
    def driver_reads(self) -> Iterator[Callable[..., list[tuple[Any, ...]]]]:
        """``fetch(sql, params)`` for several read statements in ONE read transaction
        (SQLite: one snapshot on the store's quick connection; elsewhere one connection of
        the read engine at its isolation level).  Driver errors are ``StoreError``."""
        import sqlite3

        conn = self._quick_take() if self._sqlite_path is not None else None
        if conn is None:
            try:
                with self._reader.connect() as econn:
                    def fetch_engine(sql: str, params: Sequence[Any] = ()) -> list[Any]:
                        return [tuple(r) for r in econn.exec_driver_sql(sql, tuple(params))]
                    yield fetch_engine
            except driver_errors() as exc:
                raise database_error(exc, self.url, "in a read") from exc
            return

        def fetch(sql: str, params: Sequence[Any] = ()) -> list[Any]:
            return conn.execute(sql, tuple(params)).fetchall()

        try:
            conn.execute("BEGIN")
            yield fetch
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            conn.close()
            raise database_error(exc, self.url, "in a read") from exc
        except BaseException:
            conn.close()
            raise
        self._quick_give(conn)

    def close(self) -> None:
        with self._quick_lock:
            pool, self._quick_pool = self._quick_pool, []
            writers, self._write_pool = self._write_pool, []
        for conn in pool + writers:
            conn.close()
        line, self._line = self._line, None
        if line is not None:
            line.close()
        pair, self._engines = self._engines, None
        if pair is not None:
            pair[0].dispose()
            if pair[1] is not pair[0]:
                pair[1].dispose()
