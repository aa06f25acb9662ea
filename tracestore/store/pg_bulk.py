"""PostgreSQL bulk writes for the event log (issue 25 item 3).

A large append sends its event rows with ``COPY ... FROM STDIN`` (psycopg's
``cursor.copy``, text format) instead of ``executemany``: the rows are the same tuples the
INSERT would bind, so the stored values are the same; ``COPY`` runs in the caller's
transaction (and savepoint), checks the same constraints (the id and ``(stream, version)``
uniqueness) and fires the same row triggers, so an append stays all or nothing.  A
database error from the copy is raised as the SQLAlchemy error an ``execute`` would have
raised (``IntegrityError`` for a refused row), so callers handle both paths alike.

Id look-ups ("already stored?") send one array parameter per chunk instead of hundreds of
bound ids in a fresh SQL text (each such text was parsed and planned anew).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

COPY_MIN_ROWS = 1000
"A chunk of at least this many rows is copied; smaller appends keep the plain INSERT."

_ID_ARRAY_CHUNK = 10_000
_IDS_JOINED_SQL = ("SELECT id FROM ts_events "
                   "WHERE id = ANY(string_to_array(%s, chr(31)))")


@contextmanager
def pg_copying(conn: Connection, sql: str) -> Iterator[Callable[[tuple[Any, ...]], None]]:
    """A ``COPY ... FROM STDIN`` on ``conn``'s own psycopg connection (its transaction):
    yields ``write_row``; the rows are sent as they are written (psycopg flushes every few
    dozen KiB), the copy ends when the block does.  An exception in the block cancels the
    copy (nothing of it is stored) and propagates unchanged."""
    import psycopg

    driver = conn.connection.driver_connection
    assert driver is not None
    try:
        with driver.cursor() as cursor, cursor.copy(sql) as copy:
            yield copy.write_row
    except psycopg.Error as exc:
        raise DBAPIError.instance(sql, None, exc, psycopg.Error,
                                  dialect=conn.dialect) from exc


def pg_existing_ids(conn: Connection, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are stored already, one query per chunk: the ids travel as ONE text
    parameter joined with the unit separator (which ``NewEvent`` refuses in an id) and
    split by the server -- half the cost of an array parameter of 5,000 strings, and a
    fraction of 500 bound ids in a new SQL text each time.  Ids holding the separator
    anyway go as an array."""
    found: set[str] = set()
    for start in range(0, len(ids), _ID_ARRAY_CHUNK):
        chunk = list(ids[start:start + _ID_ARRAY_CHUNK])
        joined = "\x1f".join(chunk)
        if joined.count("\x1f") == len(chunk) - 1:
            result = conn.exec_driver_sql(_IDS_JOINED_SQL, (joined,))
        else:
            result = conn.exec_driver_sql("SELECT id FROM ts_events WHERE id = ANY(%s)",
                                          (chunk,))
        found.update(result.scalars())
    return found
