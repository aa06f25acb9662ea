"""A write transaction on a plain ``sqlite3`` connection, for a SQLite file.

An append into a SQLite file used to begin on SQLAlchemy's writer engine; importing
SQLAlchemy alone (~0.1-0.2 s of CPU) was then most of what ``tracestore ingest`` of a small
file cost, and 5-9% of a 100,000-frame one.  Every statement the append path
runs is driver SQL already (``exec_driver_sql``: the row inserts, the id range look-ups,
the audit index's follow-up), so :class:`DriverConnection` gives that path the few
methods of a SQLAlchemy ``Connection`` it uses, on a ``sqlite3`` connection set up as the
writer engine sets up its own (``engine.sqlite_pragmas``: busy timeout, WAL, synchronous
FULL; autocommit at the driver, ``BEGIN IMMEDIATE`` issued here).

A SQLAlchemy Core statement handed to :meth:`DriverConnection.execute` is compiled for
SQLite and run on the same connection (importing SQLAlchemy then): a path that still
speaks Core stays correct, it only pays the import.  Driver errors are ``sqlite3.Error``;
the store translates them as it translates SQLAlchemy's (``store.dberrors``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any


class _Dialect:
    """What callers ask of ``conn.dialect``."""

    name = "sqlite"
    paramstyle = "qmark"
    loaded_dbapi = sqlite3


class DriverResult:
    """The rows of one statement, read the ways the store's code reads a SQLAlchemy result
    (``all``, ``first``, ``scalar``, ``scalars().all()``, ``mappings()``, iteration)."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    def all(self) -> list[Any]:
        return self._cursor.fetchall()

    fetchall = all

    def first(self) -> Any:
        row = self._cursor.fetchone()
        self._cursor.close()
        return row

    def scalar(self) -> Any:
        row = self.first()
        return None if row is None else row[0]

    def scalar_one(self) -> Any:
        rows = self._cursor.fetchall()
        if len(rows) != 1:
            raise LookupError(f"expected one row, got {len(rows)}")
        return rows[0][0]

    def scalars(self) -> _Scalars:
        return _Scalars(self._cursor)

    def mappings(self) -> list[dict[str, Any]]:
        names = [column[0] for column in self._cursor.description or ()]
        return [dict(zip(names, row)) for row in self._cursor.fetchall()]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)


class _Scalars:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    def all(self) -> list[Any]:
        return [row[0] for row in self._cursor.fetchall()]

    def __iter__(self) -> Iterator[Any]:
        return (row[0] for row in self._cursor)


class _Savepoint:
    _count = 0

    def __init__(self, raw: sqlite3.Connection) -> None:
        _Savepoint._count += 1
        self._raw, self._name = raw, f"ts_sp_{_Savepoint._count}"
        raw.execute(f"SAVEPOINT {self._name}")

    def commit(self) -> None:
        self._raw.execute(f"RELEASE SAVEPOINT {self._name}")

    def rollback(self) -> None:
        self._raw.execute(f"ROLLBACK TO SAVEPOINT {self._name}")
        self._raw.execute(f"RELEASE SAVEPOINT {self._name}")


class DriverConnection:
    """One ``sqlite3`` connection of a store's SQLite file, for write transactions."""

    dialect = _Dialect()

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.connection = raw
        "The DBAPI connection (``conn.connection`` of a SQLAlchemy connection)."

    def exec_driver_sql(self, sql: str, parameters: Any = None) -> DriverResult:
        """Run ``sql``; a list of parameter tuples runs it once for each (executemany)."""
        raw = self.connection
        if parameters is None:
            return DriverResult(raw.execute(sql))
        if isinstance(parameters, list) and parameters \
                and isinstance(parameters[0], (tuple, list, dict)):
            return DriverResult(raw.executemany(sql, parameters))
        return DriverResult(raw.execute(sql, parameters))

    def execute(self, statement: Any, parameters: Any = None) -> DriverResult:
        """A SQLAlchemy Core statement, compiled for SQLite and run here."""
        from sqlalchemy.dialects import sqlite as sqlite_dialect

        compiled = statement.compile(dialect=sqlite_dialect.dialect(),
                                     compile_kwargs={"render_postcompile": True})
        if parameters is not None and not isinstance(parameters, dict):  # many rows
            rows = [_positional(compiled, row) for row in parameters]
            return DriverResult(self.connection.executemany(compiled.string, rows))
        return DriverResult(self.connection.execute(compiled.string,
                                                    _positional(compiled, parameters)))

    def begin_nested(self) -> _Savepoint:
        return _Savepoint(self.connection)

    def begin(self) -> None:
        self.connection.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.connection.execute("COMMIT")

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    def close(self) -> None:
        self.connection.close()


def _positional(compiled: Any, given: dict[str, Any] | None) -> Sequence[Any]:
    """The compiled statement's parameters in their ``?`` order (``given`` overrides)."""
    values = compiled.construct_params(given) if given else compiled.params
    return tuple(values[name] for name in compiled.positiontup or ())


__all__ = ["DriverConnection", "DriverResult"]
