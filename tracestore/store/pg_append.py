"""A recorder's append on PostgreSQL in two round trips, on a connection kept for it.

Through the engine an append of a few rows costs BEGIN, the locking message, one insert per
table and COMMIT -- four or five round trips -- and most of the writer's CPU goes to
SQLAlchemy's transaction and statement machinery and psycopg's parameter adaptation, not
to the rows.  ``PgAppendLine`` holds one psycopg connection out of the writer engine's pool
(so it is set up as every other connection is) in autocommit mode, and an append sends:

1. ``BEGIN``, the append lock shared and the traces' locks, then one statement reading a
   block of positions, the traces' heads and the versions of the streams the caller does
   not hold (``locking_message``), as ONE simple query;
2. every row as literals -- ``INSERT … ON CONFLICT DO NOTHING`` of the blobs, one
   multi-row ``INSERT`` of the events -- and ``COMMIT``, as ONE simple query.

The rows' hashes need the positions and heads the first message returns, so two is the
least.  The statements, locks, constraints and triggers are the ones the engine path runs:
only their transport differs.  A database error leaves nothing written (the transaction is
rolled back before the error is raised); a lost or interrupted connection is dropped and
the next append opens another.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from tracestore.errors import ExpectedVersionConflict
from tracestore.store.chain import GENESIS_HASH
from tracestore.store.pg_bulk import pg_literal_array, pg_trace_locks_sql, text_literal

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sqlalchemy import Engine

#: An append larger than this (payload and blob characters) takes the engine path instead.
LITERAL_MAX_CHARS = 1 << 20
_TRACE_ID = 7  # where an event row tuple holds its trace id

#: Connections a forked child inherited: kept referenced, never closed (see ``_drop``).
_INHERITED: list[Any] = []

_EVENT_COLUMNS = ("position, id, stream, version, type, schema_version, recorded_at, "
                  "trace_id, payload, hash, trace_version, trace_key")


def row_literal(row: Sequence[Any]) -> str:
    """One ``VALUES`` tuple: integers as they are, None as NULL, text escaped."""
    return "(" + ",".join("NULL" if value is None else str(value)
                          if value.__class__ is int else text_literal(value)
                          for value in row) + ")"


def event_row_literal(row: Sequence[Any]) -> str:
    """``row_literal`` of an event row (``_EVENT_COLUMNS``: integers where they are, the
    trace id text or None, every other field text), written out for speed."""
    (position, event_id, stream, version, type_name, schema_version, recorded_at, trace_id,
     payload, digest, trace_version, trace_key) = row
    trace = "NULL" if trace_id is None else text_literal(trace_id)
    return (f"({int(position)},{text_literal(event_id)},{text_literal(stream)},{int(version)},"
            f"{text_literal(type_name)},{int(schema_version)},{text_literal(recorded_at)},"
            f"{trace},{text_literal(payload)},{text_literal(digest)},{int(trace_version)},"
            f"{text_literal(trace_key)})")


def insert_message(blobs: Sequence[tuple[str, bytes]], rows: Sequence[Sequence[Any]]) -> str:
    """The second message of an append: its blobs (``(sha256, data)``, stored ones
    skipped), its event rows (``_EVENT_COLUMNS`` order), ``COMMIT``."""
    parts = []
    if blobs:
        values = ",".join(f"('{sha}',{len(data)},E'\\\\x{data.hex()}'::bytea)"
                          for sha, data in blobs)
        parts.append(f"INSERT INTO ts_blobs (sha256, size, data) VALUES {values} "
                     "ON CONFLICT (sha256) DO NOTHING")
    if rows:
        parts.append(f"INSERT INTO ts_events ({_EVENT_COLUMNS}) VALUES "
                     + ",".join(event_row_literal(row) for row in rows))
    parts.append("COMMIT")
    return "; ".join(parts)


class PgAppendLine:
    """The connection ``EventStore`` sends its recorder appends on (PostgreSQL only).

    One thread at a time: ``taken()`` yields None while another thread holds it (that
    append takes the engine path).  The connection is not pinged, however long it sat
    idle: one the server ended fails the first message, which writes nothing, so that
    append takes the engine path (whose pool pings) and the next connects anew.  One
    made before a fork is left to the parent."""

    def __init__(self, engine: Engine, lock: int) -> None:
        self._engine = engine
        self.append_lock = lock
        "The advisory lock recorder appends take shared (``store.log``)."
        self._lock = threading.Lock()
        self._raw: Any = None
        self._driver_conn: Any = None
        self._pid = 0

    @contextmanager
    def taken(self) -> Iterator[Any]:
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            yield self._driver()
        finally:
            self._lock.release()

    def _driver(self) -> Any:
        if self._raw is not None and (self._pid != os.getpid() or self._driver_conn.closed):
            self._drop()
        if self._raw is None:
            raw = self._engine.raw_connection()
            driver: Any = raw.driver_connection
            raw.detach()  # ours until dropped: the pool neither counts nor resets it
            driver.autocommit = True
            driver.prepare_threshold = None  # every message is new text: nothing to prepare
            self._raw, self._driver_conn, self._pid = raw, driver, os.getpid()
        return self._driver_conn

    def send(self, driver: Any, message: bytes) -> Any:
        """The result of the last statement of ``message`` (several statements, one simple
        query through libpq's ``PQexec``: no cursor, no row objects, and the GIL released
        while it waits).  On a database error the transaction is rolled back (or the
        connection dropped) and the error raised as psycopg's."""
        from psycopg import errors, pq

        try:
            result = driver.pgconn.exec_(message)
        except errors.Error:  # libpq returned no result: the connection failed
            self.abandon(driver)
            raise
        except BaseException:  # interrupted mid-message: closing it rolls the server back
            self._drop()
            raise
        if result.status == pq.ExecStatus.FATAL_ERROR:
            error = errors.error_from_result(result, encoding=driver.info.encoding)
            if driver.pgconn.status != pq.ConnStatus.OK:  # the connection, not the SQL
                error = errors.OperationalError(str(error))
            self.abandon(driver)
            raise error
        return result

    @property
    def lost(self) -> bool:
        """Whether the last error dropped the connection (it is gone, not just refused)."""
        return self._raw is None

    def abandon(self, driver: Any) -> None:
        """End the open transaction unwritten: ROLLBACK, or drop a connection that cannot."""
        import psycopg

        if driver.closed or driver.pgconn.status != psycopg.pq.ConnStatus.OK:
            self._drop()
            return
        try:
            done = driver.pgconn.exec_(b"ROLLBACK").status == psycopg.pq.ExecStatus.COMMAND_OK
        except psycopg.Error:
            done = False
        if not done:
            self._drop()

    def _drop(self) -> None:
        raw, self._raw = self._raw, None
        driver, self._driver_conn = self._driver_conn, None
        if raw is None:
            return
        if self._pid != os.getpid():
            # The parent's session: closing (or collecting) it here would end it there.
            _INHERITED.append(raw)
            return
        driver.close()  # the driver's own close: no reset, which a lost connection fails

    def close(self) -> None:
        with self._lock:
            self._drop()


class Outbox:
    """Where ``EventStore._append_fresh_in`` puts an append line's blobs and rows
    (``insert_message`` sends them): the rows as ``_row_sink`` would insert them, trace
    key last."""

    def __init__(self) -> None:
        self.blobs: list[tuple[str, bytes]] = []
        self.rows: list[tuple[Any, ...]] = []

    def put_blobs(self, blob_data: Sequence[bytes]) -> list[str]:
        shas = [sha256(data).hexdigest() for data in blob_data]
        self.blobs = list({sha: (sha, data) for sha, data in zip(shas, blob_data)}.values())
        return shas

    @contextmanager
    def row_sink(self) -> Iterator[Callable[[tuple[Any, ...]], None]]:
        rows = self.rows
        yield lambda row: rows.append((*row, row[_TRACE_ID] or ""))


def append_on_line(store: Any, line: PgAppendLine, groups: Sequence[Any],
                   known: Mapping[str, int], unknown: list[str],
                   then: Callable[[list[Any]], Sequence[Any]] | None, then_rows: int,
                   ids: Sequence[str] = ()) -> tuple[list[Any], dict[str, int]] | None:
    """``EventStore.append_fresh_groups``' try on the append line: its results and stream
    versions, or None, with nothing written, when the line cannot take it -- another
    thread holds it, a row of the store's own chain, text holding NUL, more rows or bytes
    than literals should carry, a connection found lost before anything was sent, one
    of ``ids`` (events that are not fresh) stored already, or an expected version of one
    group among several that does not hold.  ``ExpectedVersionConflict`` (nothing
    written) when the one group's expected version does not hold.  A database error is raised as
    the engine path raises it (SQLAlchemy's), the transaction rolled back."""
    traces = sorted({e.trace_id for _, batch, _, _ in groups for e in batch},
                    key=lambda t: (t is None, t or ""))
    rows = sum(len(batch) for _, batch, _, _ in groups) + (then_rows if then else 0)
    size = sum(len(e.payload) for _, batch, _, _ in groups for e in batch) + \
        2 * sum(len(b) for *_, blob_data in groups for b in blob_data)
    if not traces or traces[-1] is None or rows >= store.COPY_MIN_ROWS or \
            size > LITERAL_MAX_CHARS or "\x00" in "".join([*traces, *unknown, *ids]):
        return None
    with line.taken() as driver:
        if driver is None:
            return None
        sql = locking_message(line.append_lock, traces, rows, unknown, ids)
        try:
            return _sent(store, line, driver, sql, groups, known, then, then_rows)
        except _psycopg_errors() as exc:
            from sqlalchemy.exc import DBAPIError

            raise DBAPIError.instance(sql, None, exc, _psycopg_errors()[0],
                                      dialect=store._writer.dialect) from exc


def locking_message(lock: int, traces: Sequence[str], rows: int, streams: Sequence[str],
                    ids: Sequence[str]) -> str:
    """The first message of an append: BEGIN, the locks, then ONE statement (one
    snapshot, taken once the locks are held) whose rows ``(kind, name, value, hash)``
    hold all the append needs: ``p`` the first of ``rows`` positions reserved, ``h``
    each trace's head (none for a new trace), ``v`` the version of each of ``streams``
    that holds events, ``i`` each of ``ids`` stored.  Each head and version is its own
    branch reading one row backwards from its unique index: a plan the server makes in
    a fraction of a join's."""
    quoted = [text_literal(trace) for trace in traces]
    if len(traces) == 1:
        locks = (f"SELECT pg_advisory_xact_lock_shared({lock}); "
                 f"SELECT pg_advisory_xact_lock(hashtextextended({quoted[0]}, 0))")
    else:
        locks = pg_trace_locks_sql(lock, pg_literal_array(traces))
    parts = [f"SELECT 'p'::text, NULL::text, ts_reserve_positions({int(rows)})::text, "
             "NULL::text"]
    # ORDER BY names the table's column: a bare ``version`` would sort the text output
    # column of that name ("9" after "10").
    parts += [f"(SELECT 'h', {trace}, trace_version::text, hash::text FROM ts_events "
              f"WHERE trace_key = {trace} ORDER BY ts_events.trace_version DESC LIMIT 1)"
              for trace in quoted]
    parts += [f"(SELECT 'v', {stream}, version::text, NULL FROM ts_events "
              f"WHERE stream = {stream} ORDER BY ts_events.version DESC LIMIT 1)"
              for stream in map(text_literal, streams)]
    if ids:
        parts.append(f"SELECT 'i', id::text, NULL, NULL FROM ts_events WHERE id = ANY("
                     f"{pg_literal_array(ids)})")
    return f"BEGIN; {locks}; " + " UNION ALL ".join(parts)


def _answers(result: Any, encoding: str) -> tuple[int, dict[str, tuple[int, str]],
                                                  dict[str, int], set[str]]:
    """What ``locking_message`` read: (first position, heads, versions, stored ids)."""
    first = 0
    heads: dict[str, tuple[int, str]] = {}
    versions: dict[str, int] = {}
    stored: set[str] = set()
    for row in range(result.ntuples):
        kind, name, value, digest = (cell.decode(encoding) if cell is not None else ""
                                     for cell in (result.get_value(row, c) for c in range(4)))
        if kind == "p":
            first = int(value)
        elif kind == "h":
            heads[name] = (int(value), digest)
        elif kind == "v":
            versions[name] = int(value)
        else:
            stored.add(name)
    return first, heads, versions, stored


def _sent(store: Any, line: PgAppendLine, driver: Any, sql: str, groups: Sequence[Any],
          known: Mapping[str, int], then: Callable[[list[Any]], Sequence[Any]] | None,
          then_rows: int) -> tuple[list[Any], dict[str, int]] | None:
    import psycopg

    encoding = driver.info.encoding
    try:
        first, heads, looked_up, gone = _answers(line.send(driver, sql.encode(encoding)),
                                                 encoding)
        for trace in {e.trace_id for _, batch, _, _ in groups for e in batch} - set(heads):
            heads[trace] = (0, GENESIS_HASH)  # a new trace
    except UnicodeEncodeError:
        return None  # nothing was sent: the engine path says what the text cannot be
    except psycopg.OperationalError:
        if not line.lost:
            raise
        return None  # nothing was written: the engine path connects (or says why)
    skipped: tuple[str, ...] = ()
    if gone:  # events already in the log are skipped and reported, as the engine does
        (key, batch, expected, blobs), = groups  # ``ids`` come with one group
        kept = [e for e in batch if e.id not in gone]
        if not kept:
            line.abandon(driver)
            return None
        skipped = tuple(e.id for e in batch if e.id in gone)
        groups = [(key, kept, expected, blobs)]
    conflict = _conflict(groups, looked_up)
    if conflict is not None:
        line.abandon(driver)
        if len(groups) > 1:
            return None  # the engine path writes the groups whose expectations hold
        raise conflict
    out = Outbox()
    try:
        outcome = store._append_fresh_in(None, groups, known, first - 1, heads, looked_up,
                                         then, then_rows, out=out)
        message = insert_message(out.blobs, out.rows).encode(encoding)
    except UnicodeEncodeError:
        line.abandon(driver)
        return None
    except BaseException:
        line.abandon(driver)
        raise
    if b"\x00" in message:  # no text column holds NUL: the engine path says so
        line.abandon(driver)
        return None
    line.send(driver, message)
    if skipped:
        results, versions = outcome
        return [dataclasses.replace(results[0], skipped_ids=skipped)], versions
    return outcome


def _conflict(groups: Sequence[Any], versions: Mapping[str, int],
              ) -> ExpectedVersionConflict | None:
    """The first expected version (read with the locks) that does not hold."""
    for _, _, expected, _ in groups:
        for stream, want in (expected or {}).items():
            have = versions.get(stream, 0)
            if have != want:
                return ExpectedVersionConflict(
                    f"stream {stream!r} is at version {have}, the append expected {want}",
                    stream=stream, expected=want, actual=have)
    return None


def _psycopg_errors() -> tuple[type[Exception], ...]:
    import psycopg

    return (psycopg.Error,)


__all__ = ["LITERAL_MAX_CHARS", "Outbox", "PgAppendLine", "append_on_line", "insert_message",
           "event_row_literal", "locking_message", "pg_literal_array", "row_literal", "text_literal"]
