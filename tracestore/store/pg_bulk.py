"""PostgreSQL bulk writes for the event log.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only ever given a PostgreSQL connection: SQLAlchemy is loaded by then
    from sqlalchemy import Connection

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
        from sqlalchemy.exc import DBAPIError

        raise DBAPIError.instance(sql, None, exc, psycopg.Error,
                                  dialect=conn.dialect) from exc


def pg_last_row(conn: Connection, sql: str) -> tuple[Any, ...] | None:
    """The first row of the LAST statement of ``sql`` (several statements, no parameters),
    sent as ONE simple-query message on ``conn``'s psycopg connection, in its transaction:
    one round trip for all of them.  Each statement still takes its own snapshot (at READ
    COMMITTED), so a statement after a lock sees what the lock's previous holder
    committed.  A driver error is raised as SQLAlchemy's (a lost connection invalidates
    ``conn``, as an ``execute`` would)."""
    sets = pg_result_sets(conn, sql)
    return sets[-1][0] if sets and sets[-1] else None


#: libc collations that order text by its bytes (so ASCII as Python orders it).
_BYTEWISE = {"c", "posix", "c.utf-8", "c.utf8"}
#: The effective collation of ``ts_events.id``: its own, or the database's default
#: (``to_jsonb`` reads the provider columns where the server has them: 10+ and 15+).
_ID_COLLATION_SQL = (
    "SELECT c.collname, to_jsonb(c) ->> 'collprovider', c.collcollate, "
    "to_jsonb(d) ->> 'datlocprovider', d.datcollate "
    "FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
    "JOIN pg_database d ON d.datname = current_database() "
    "WHERE a.attrelid = 'ts_events'::regclass AND a.attname = 'id'")
_IDS_IN_RANGE_SQL = "SELECT id FROM ts_events WHERE id >= %s AND id <= %s LIMIT %s"


def pg_ids_order_bytewise(conn: Connection) -> bool:
    """Whether the server orders ``ts_events.id`` by its bytes (a libc ``C``/``POSIX``
    collation, the column's own or the database's default): then a range of ASCII ids on
    the server is the range Python computes, and ``pg_existing_ids`` may ask by range."""
    row = conn.exec_driver_sql(_ID_COLLATION_SQL).first()
    if row is None:
        return False
    name, provider, collate, db_provider, db_collate = row
    if name == "default":
        provider, collate = db_provider or "c", db_collate
    return provider in ("c", None) and str(collate).lower() in _BYTEWISE


def pg_existing_ids(conn: Connection, ids: Sequence[str], *, bytewise: bool = False,
                    ) -> set[str]:
    """Which of ``ids`` are stored already, one query per chunk: the ids travel as ONE text
    parameter joined with the unit separator (which ``NewEvent`` refuses in an id) and
    split by the server -- half the cost of an array parameter of 5,000 strings, and a
    fraction of 500 bound ids in a new SQL text each time.  Ids holding the separator
    anyway go as an array.

    With ``bytewise`` (``pg_ids_order_bytewise``) a chunk of ASCII ids is first asked as ONE
    bounded range of the id index, as on SQLite (``store.log._sqlite_ids_in_range``): at
    most ``len(chunk) + 1`` rows, and a range holding more stored ids than asked falls
    back to the ids themselves.  A planned ingest's 5,000 ascending ids then cost the
    server one index range instead of 5,000 probes (~10 ms a chunk)."""
    if bytewise and len(ids) >= 64 and "".join(ids).isascii():
        limit = len(ids) + 1
        rows = conn.exec_driver_sql(_IDS_IN_RANGE_SQL, (min(ids), max(ids), limit)).scalars()
        stored = rows.all()
        if len(stored) < limit:
            return set(stored).intersection(ids)
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


def pg_result_sets(conn: Connection, sql: str) -> list[list[tuple[Any, ...]]]:
    """Every statement's rows of ``sql`` (several statements, no parameters), sent as ONE
    simple-query message in ``conn``'s transaction, as ``pg_last_row`` sends them; a
    statement returning no rows gives ``[]``.  Errors are raised as ``pg_last_row``'s."""
    import psycopg

    driver = conn.connection.driver_connection
    assert driver is not None
    out: list[list[tuple[Any, ...]]] = []
    try:
        with driver.cursor() as cursor:
            cursor.execute(sql)
            while True:
                out.append(cursor.fetchall() if cursor.description is not None else [])
                if not cursor.nextset():
                    return out
    except psycopg.Error as exc:
        from sqlalchemy.exc import DBAPIError

        lost = conn.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
        if lost:
            conn.invalidate(exc)
        raise DBAPIError.instance(sql, None, exc, psycopg.Error, dialect=conn.dialect,
                                  connection_invalidated=lost) from exc


def pg_text_array(conn: Connection, values: Sequence[str]) -> str:
    """``values`` as a quoted ``text[]`` literal for a parameterless statement.

    Each value is an escape string constant (``E'…'``, its backslashes and quotes
    escaped), which reads the same whatever ``standard_conforming_strings`` says; an
    append builds two or three of these, and psycopg's quoting cost ~50 µs each.  A value
    holding NUL (which no text column can store) goes through psycopg, which refuses it."""
    if any("\x00" in value for value in values):
        from psycopg import sql

        driver = conn.connection.driver_connection
        assert driver is not None
        return f"{sql.Literal(list(values)).as_string(driver)}::text[]"
    return pg_literal_array(values)


def text_literal(value: str) -> str:
    """``value`` as an escape string constant, read the same whatever
    ``standard_conforming_strings`` says (the caller refuses NUL, which no text holds)."""
    return "E'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def pg_literal_array(values: Sequence[str]) -> str:
    """``values`` as a ``text[]`` literal (no value holds NUL: the caller checked)."""
    return "ARRAY[" + ",".join(text_literal(value) for value in values) + "]::text[]"


def pg_trace_locks_sql(lock: int, traces_literal: str) -> str:
    """Two statements: the append lock SHARED (a planned append takes it exclusively),
    then each trace's own lock in one order (two writers of overlapping traces never
    deadlock)."""
    return (f"SELECT pg_advisory_xact_lock_shared({lock}); "
            f"SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT "
            f"hashtextextended(t, 0) AS k FROM unnest({traces_literal}) AS t ORDER BY 1) s")


def pg_heads_select(traces_literal: str) -> str:
    """A query of each trace's head: ``(trace, version, hash)`` of its last row, NULLs for
    a new trace (trace ids are never empty, so a trace's key is its id), read backwards
    from the ``(trace_key, trace_version)`` index: a partitioned or sharded table is asked
    in the trace's partition only, and one row is read however long the trace."""
    return (f"SELECT t, h.trace_version, h.hash FROM unnest({traces_literal}) AS t "
            "LEFT JOIN LATERAL (SELECT trace_version, hash FROM ts_events "
            "WHERE trace_key = t ORDER BY trace_version DESC LIMIT 1) h ON true")


def pg_versions_select(streams_literal: str) -> str:
    """A query of ``(stream, version)`` for those of the streams that hold events, each
    its last row's read backwards from the ``(stream, version, …)`` index (one row, however
    long the stream)."""
    return (f"SELECT s, v.version FROM unnest({streams_literal}) AS s JOIN LATERAL ("
            "SELECT version FROM ts_events WHERE stream = s ORDER BY version DESC LIMIT 1) v "
            "ON true")


def pg_trace_lock_sql(lock: int, traces_literal: str, rows: int = 0) -> str:
    """``pg_trace_append_sql`` without the positions (``rows`` 0): the locks, then the
    traces' heads (for a build that must see its traces before it knows how many rows
    it writes)."""
    reserve = f"SELECT ts_reserve_positions({int(rows)}); " if rows else ""
    return (f"{pg_trace_locks_sql(lock, traces_literal)}; "
            f"{reserve}{pg_heads_select(traces_literal)}")


def pg_trace_append_sql(lock: int, traces_literal: str, rows: int) -> str:
    """The one message that opens an append to known traces (``EventStore``'s engine
    path): the locks (``pg_trace_locks_sql``), a block of ``rows`` positions with the
    transaction id (``ts_reserve_positions``, after the trace locks so a trace's
    positions rise with its versions), then each trace's head (``pg_heads_select``)."""
    return pg_trace_lock_sql(lock, traces_literal, max(int(rows), 1))


def pg_lookups_sql(streams_literal: str, ids_literal: str) -> str:
    """Two statements to append to an append's locking message when its events are known
    before it (``EventStore.append`` of events naming their traces): the streams'
    versions, then which of the ids are stored -- read under the traces' locks, in the
    same round trip."""
    return (f"{pg_versions_sql(streams_literal)}; SELECT id FROM ts_events WHERE id = ANY("
            f"{ids_literal})")


def pg_versions_sql(streams_literal: str) -> str:
    """A statement to append to an append's locking message: the streams' versions
    (``pg_versions_select``)."""
    return f"; {pg_versions_select(streams_literal)}"


def pg_settled_threshold() -> str:
    """The transaction id below which ``pg_settled_condition`` keeps rows, as one SQL
    expression (a bigint): the oldest write transaction of THIS database still open when
    the statement's snapshot was taken, else the snapshot's ``xmax``.

    ``pg_snapshot_xip`` lists the transactions in progress at the snapshot, in every
    database of the server; one still running in another database cannot be appending
    here and is left out (a transaction that ended since the snapshot is kept, whichever
    database it wrote: it may have been an append).  Evaluated once per statement, in the
    statement's own snapshot."""
    return ("coalesce((SELECT min(x::text::bigint) FROM "
            "pg_snapshot_xip(pg_current_snapshot()) AS x WHERE NOT EXISTS (SELECT 1 FROM "
            "pg_stat_activity a WHERE a.datname <> current_database() AND "
            "a.backend_xid::text::bigint = mod(x::text::bigint, 4294967296))), "
            "pg_snapshot_xmax(pg_current_snapshot())::text::bigint)")


def pg_settled_condition(column: str = "txid") -> str:
    """A condition on ``ts_events`` rows keeping those a reader paging by position may
    pass (``LogReads.settled_sql``): written by a transaction older than every write
    transaction of this database still open when the statement's snapshot was taken
    (``pg_settled_threshold``)."""
    return f"({column} IS NULL OR {column} < {pg_settled_threshold()})"
