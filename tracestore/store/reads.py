"""Reading the event log: the ``EventStore`` read methods and the error translation.

Kept apart from the write path (``store.log``): every read opens a connection on the read
engine (SQLite: deferred ``BEGIN``, never the write lock) and raises ``StoreError``, never
a driver exception.  Whole-store reads (``attempt_summaries``, ``iter_traces``) are one
set-based query each, not a query per attempt.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tracestore.errors import InputError, StoreError
from tracestore.events import SCHEMA_VERSIONS, StoredEvent, parse_event, parse_event_json, upcast
from tracestore.store.chain import GENESIS_HASH, Expected, VerifyResult
from tracestore.store.dberrors import driver_errors, driver_message

if TYPE_CHECKING:  # SQLAlchemy is imported by the reads that build Core queries
    from sqlalchemy import Connection, Engine

_HEAD_SQL = "SELECT position, hash FROM ts_events ORDER BY position DESC LIMIT 1"
MAX_POSITION = 2**63 - 1  # positions are 64-bit signed integers in every backend
ID_QUERY_CHUNK = 500  # ids per "already stored?" query; well under SQLite's variable limit


def database_error(exc: Exception, url: str, during: str) -> StoreError:
    """The one translation of a driver error into the store's vocabulary.

    A missing table or column, or text SQLite cannot decode, means the database was
    damaged or edited behind our back (``store_damaged``); anything else is the database
    being unreachable or busy (``database_unavailable``).
    """
    message = driver_message(exc)
    damaged = ("no such table", "no such column", "does not exist", "could not decode",
               "malformed", "undefinedtable", "undefinedcolumn", "has no column")
    from tracestore.store.engine import make_url

    url = make_url(url).render_as_string(hide_password=True)  # never print a password
    if any(mark in message.lower() for mark in damaged):
        return StoreError(f"{url} is damaged: {message.splitlines()[0]} ({during})",
                          code="store_damaged")
    return StoreError(f"database error {during}: {message.splitlines()[0]}",
                      code="database_unavailable")


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _translated(method: _Method) -> _Method:
    """Read methods raise ``StoreError``, never a driver exception."""

    @functools.wraps(method)
    def wrapper(self: LogReads, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except driver_errors() as exc:
            raise database_error(exc, self.url, f"in {method.__name__}") from exc

    return wrapper  # type: ignore[return-value]


def _check_positions(**positions: int | None) -> None:
    for name, value in positions.items():
        if value is not None and not 0 <= value <= MAX_POSITION:
            raise InputError(f"{name} position {value} is outside 0…{MAX_POSITION}",
                             code="position_out_of_range", **{name: value})


def _driver_fetch(conn: Connection, cursor: Any, sql: str, params: tuple[Any, ...],
                  ) -> list[Any]:
    """All rows of ``sql`` from a driver cursor; a driver error is raised as SQLAlchemy's
    ``DBAPIError`` (``sqlite3.Error`` as it is), so it is translated like any other read's."""
    dialect = conn.dialect
    try:
        cursor.execute(sql, params)
        return cursor.fetchall()
    except dialect.loaded_dbapi.Error as exc:
        if dialect.loaded_dbapi.__name__ == "sqlite3":
            raise
        from sqlalchemy.exc import DBAPIError

        raise DBAPIError.instance(sql, params, exc, dialect.loaded_dbapi.Error,
                                  dialect=dialect) from exc


class LogReads:
    """The read half of ``EventStore`` (it supplies ``url``, the engines and ``_mark``)."""

    url: str
    _mark: str
    _dialect: str
    if TYPE_CHECKING:  # supplied by StoreConnections (a lazily built engine)
        @property
        def _reader(self) -> Engine: ...

        def fetch_driver(self, sql: str, params: Sequence[Any] = (), *,
                         during: str = "in a read") -> list[tuple[Any, ...]]: ...

    def _head(self, conn: Connection) -> tuple[int, str]:
        row = conn.exec_driver_sql(_HEAD_SQL).first()
        return (0, GENESIS_HASH) if row is None else (row[0], row[1])

    def _stream_versions(self, conn: Connection, streams: Sequence[str]) -> dict[str, int]:
        versions: dict[str, int] = {}
        for start in range(0, len(streams), ID_QUERY_CHUNK):
            chunk = tuple(streams[start:start + ID_QUERY_CHUNK])
            marks = ", ".join([self._mark] * len(chunk))
            rows = conn.exec_driver_sql(
                f"SELECT stream, max(version) FROM ts_events WHERE stream IN ({marks}) "
                "GROUP BY stream", chunk).all()
            versions.update({stream: version for stream, version in rows})
        return versions

    @_translated
    def read(self, *, stream: str | None = None, trace_id: str | None = None,
             attempt_id: str | None = None, after: int = 0, upto: int | None = None,
             limit: int | None = None) -> list[StoredEvent]:
        """Events in global order, optionally filtered by stream, trace or attempt."""
        _check_positions(after=after, upto=upto)
        fetch = getattr(self, "fetch_driver", None)
        if fetch is not None:  # one driver statement: no engine, no compile (a command
            # reading one attempt pays neither; the indexes are the same)
            sql, params = self._read_sql(stream=stream, trace_id=trace_id,
                                         attempt_id=attempt_id, after=after, upto=upto,
                                         limit=limit, settled=True)
            times: dict[str, dt.datetime] = {}
            return [_stored_from_row(row, times)
                    for row in fetch(sql, params, during="in read")]
        with self._reader.connect() as conn:
            return self._read(conn, stream=stream, trace_id=trace_id, attempt_id=attempt_id,
                              after=after, upto=upto, limit=limit, settled=True)

    def _read_sql(self, *, stream: str | None, trace_id: str | None, attempt_id: str | None,
                  after: int, upto: int | None, limit: int | None, settled: bool = False,
                  ) -> tuple[str, list[str | int]]:
        """``read``'s one driver statement and its parameters.  ``settled``: a read
        outside any write transaction, across traces, stops below the oldest open
        transaction on PostgreSQL (``settled_sql``), so paging by position never steps
        over a row that commits later."""
        from tracestore.events import attempt_stream

        if attempt_id is not None:
            stream = attempt_stream(attempt_id)
        mark, where = self._mark, [f"position > {self._mark}"]
        params: list[str | int] = [after]
        for column, op, value in (("stream", "=", stream), ("trace_id", "=", trace_id),
                                  ("position", "<=", upto)):
            if value is not None:
                where.append(f"{column} {op} {mark}")
                params.append(value)
        if settled and stream is None and trace_id is None:
            where.append(self.settled_sql())
        sql = (f"SELECT {ROW_COLUMNS} FROM ts_events WHERE {' AND '.join(where)} "
               "ORDER BY position" + (f" LIMIT {int(limit)}" if limit is not None else ""))
        return sql, params

    def _read(self, conn: Connection, *, stream: str | None = None,
              trace_id: str | None = None, attempt_id: str | None = None, after: int = 0,
              upto: int | None = None, limit: int | None = None,
              settled: bool = False) -> list[StoredEvent]:
        """``read`` on ``conn`` (inside its transaction)."""
        sql, params = self._read_sql(stream=stream, trace_id=trace_id, attempt_id=attempt_id,
                                     after=after, upto=upto, limit=limit, settled=settled)
        times: dict[str, dt.datetime] = {}
        return [_stored_from_row(row, times)
                for row in conn.exec_driver_sql(sql, tuple(params)).all()]

    def iter_events(self, *, batch_size: int = 1000, after: int = 0, **filters: Any,
                    ) -> Iterator[StoredEvent]:
        """Like ``read`` but in batches, so memory stays bounded on a large store."""
        upto = filters.pop("upto", None)
        limit = filters.pop("limit", None)
        remaining = limit
        while remaining is None or remaining > 0:
            size = batch_size if remaining is None else min(batch_size, remaining)
            batch = self.read(after=after, upto=upto, limit=size, **filters)
            yield from batch
            if len(batch) < size:
                return
            after = batch[-1].position
            if remaining is not None:
                remaining -= len(batch)

    def settled_sql(self, alias: str = "") -> str:
        """A condition keeping the rows every later reader will also see below them.

        PostgreSQL positions are reserved per append and appends to different traces
        commit in any order, so a row at position 100 may commit after one at 106.  Rows
        written by a transaction older than the oldest one still open (in this
        database: ``pg_bulk.pg_settled_condition``) are final, and
        ``ts_reserve_positions`` hands out positions in transaction order, so those rows
        are a prefix of the position order: a reader that stops there and resumes after
        the last position it read misses nothing.  Rows within one trace commit in
        position order (the trace's lock), so a read of one trace needs no such bound.
        SQLite commits one writer at a time, in position order: always true."""
        if self._dialect != "postgresql":
            return "1 = 1"
        from tracestore.store.pg_bulk import pg_settled_condition

        return pg_settled_condition(f"{alias}.txid" if alias else "txid")

    def tree_leaves(self, position: int) -> list[Any]:
        """Every trace's head as of ``position`` as tree leaves, in tree order
        (``store.tree_head``): the leaves a checkpoint at ``position`` signs."""
        from tracestore.store.tree_head import leaves

        mark = self._mark
        rows = self.fetch_driver(
            "SELECT e.trace_id, e.trace_version, e.hash FROM ts_events e JOIN (SELECT "
            "max(position) AS p FROM ts_events WHERE position <= "
            f"{mark} GROUP BY coalesce(trace_id, '')) h ON e.position = h.p",
            (position,), during="reading the trace heads")
        return leaves({trace: (int(version), digest) for trace, version, digest in rows})

    def trace_rows(self, trace_id: str | None, *, batch_size: int = 5000,
                   ) -> Iterator[tuple[Any, ...]]:
        """One trace's rows in order: (position, id, stream, version, type, schema_version,
        recorded_at, trace_id, payload, hash, trace_version), a batch at a time."""
        mark = self._mark
        where = "trace_id IS NULL" if trace_id is None else f"trace_id = {mark}"
        sql = (f"SELECT {ROW_COLUMNS}, trace_version FROM ts_events WHERE {where} AND "
               f"position > {mark} ORDER BY position LIMIT {int(batch_size)}")
        last = 0
        while True:
            params = (last,) if trace_id is None else (trace_id, last)
            rows = self.fetch_driver(sql, params, during="reading a trace")
            yield from rows
            if len(rows) < batch_size:
                return
            last = rows[-1][0]

    @_translated
    def head_position(self) -> int:
        with self._reader.connect() as conn:
            return self._head(conn)[0]

    @_translated
    def stream_version(self, stream: str) -> int:
        with self._reader.connect() as conn:
            return self._stream_versions(conn, [stream]).get(stream, 0)

    @_translated
    def streams(self, prefix: str = "") -> list[tuple[str, int]]:
        """``(stream, event count)`` for every stream starting with ``prefix``."""
        from sqlalchemy import func, select

        from tracestore.store.schema import events

        with self._reader.connect() as conn:
            rows = conn.execute(
                select(events.c.stream, func.count()).where(events.c.stream.startswith(prefix))
                .group_by(events.c.stream).order_by(func.min(events.c.position))
            )
            return [(stream, count) for stream, count in rows]

    @_translated
    def attempt_summaries(self) -> list[dict[str, Any]]:
        """Per attempt stream, in order of its first event: id, event count, first position,
        and the trace and API its first event names -- ONE grouped query joined to each
        stream's first row (payloads read as JSON, no model per row)."""
        from sqlalchemy import func, select

        from tracestore.store.schema import events

        first = (select(events.c.stream, func.count().label("n"),
                        func.min(events.c.position).label("first"))
                 .where(events.c.stream.startswith("attempt:"))
                 .group_by(events.c.stream).subquery())
        query = (select(first.c.stream, first.c.n, first.c.first, events.c.type,
                        events.c.schema_version, events.c.payload)
                 .join(events, events.c.position == first.c.first).order_by(first.c.first))
        listing = []
        with self._reader.connect() as conn:
            for stream, count, position, type_name, schema_version, payload in conn.execute(
                    query):
                try:
                    fields = upcast(type_name, schema_version, json.loads(payload))
                except (ValueError, TypeError, KeyError) as exc:
                    raise StoreError(f"the event at position {position} cannot be read "
                                     f"({exc}); run tracestore verify", code="store_damaged",
                                     position=position) from None
                listing.append({
                    "attempt_id": stream.split(":", 1)[1], "events": count,
                    "trace_id": _field(fields, "trace_id"), "api": _field(fields, "api"),
                    "first_position": position,
                })
        return listing

    def iter_traces(self, batch_size: int = 1000,
                    ) -> Iterator[tuple[str, list[StoredEvent]]]:
        """``(trace id, its events)`` for every trace, in order of the trace's first event.

        Trace ids stream from one grouped query (``yield_per``: never all in memory); each
        trace's events come from one prepared driver-level query on the same connection,
        so memory holds one trace at a time and no SQL is compiled per trace.
        """
        from sqlalchemy import func, select

        from tracestore.store.schema import events

        ids = (select(events.c.trace_id).where(events.c.trace_id.is_not(None))
               .group_by(events.c.trace_id).order_by(func.min(events.c.position)))
        per_trace = (f"SELECT {ROW_COLUMNS} FROM ts_events WHERE trace_id = {self._mark} "
                     "ORDER BY position")
        try:  # a generator: ``_translated`` would not see errors raised while it runs
            with self._reader.connect() as conn:
                # The driver's own cursor: tuples, no per-row SQLAlchemy result processing.
                cursor = conn.connection.cursor()
                times: dict[str, dt.datetime] = {}
                trace_ids = conn.execution_options(yield_per=batch_size).execute(ids)
                try:
                    for (trace_id,) in trace_ids:
                        rows = _driver_fetch(conn, cursor, per_trace, (trace_id,))
                        yield trace_id, [_stored_from_row(row, times) for row in rows]
                        if len(times) > 64:  # bounded: a store has many append times
                            times.clear()
                finally:
                    cursor.close()
        except driver_errors() as exc:
            raise database_error(exc, self.url, "in iter_traces") from exc

    @_translated
    def trace_ids(self) -> list[str]:
        """Every trace id in the log, in order of its first event."""
        from sqlalchemy import func, select

        from tracestore.store.schema import events

        with self._reader.connect() as conn:
            rows = conn.execute(
                select(events.c.trace_id).where(events.c.trace_id.is_not(None))
                .group_by(events.c.trace_id).order_by(func.min(events.c.position)))
            return [trace for (trace,) in rows]

    @_translated
    def get_blob(self, sha256: str) -> bytes | None:
        from sqlalchemy import select

        from tracestore.store.schema import blobs

        with self._reader.connect() as conn:
            row = conn.execute(select(blobs.c.data).where(blobs.c.sha256 == sha256)).first()
            return None if row is None else bytes(row[0])

    @_translated
    def verify(self, batch_size: int = 5000, *, expected: Expected | None = None,
               jobs: int | None = None) -> VerifyResult:
        """Recompute the hash chain and re-hash referenced captures (see ``store.verify``);
        with ``expected``, also prove the log still extends that signed head.  ``jobs``:
        worker processes on PostgreSQL (``store.verify_parallel``; default one per CPU on
        a large store)."""
        from tracestore.store.verify import verify_store
        from tracestore.store.verify_parallel import check_jobs

        check_jobs(jobs)
        with self._reader.connect() as conn:
            return verify_store(conn, batch_size=batch_size, expected=expected, jobs=jobs)




def _field(payload: Any, name: str) -> Any:
    value = payload.get(name) if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


#: The envelope columns in table order: what ``_stored_from_row`` unpacks.
ROW_COLUMNS = ("position, id, stream, version, type, schema_version, recorded_at, trace_id, "
               "payload, hash")


def _to_stored(row: Mapping[Any, Any]) -> StoredEvent:
    return _stored_from_row(tuple(row[name] for name in _COLUMN_NAMES))


_COLUMN_NAMES = tuple(name.strip() for name in ROW_COLUMNS.split(","))


def _stored_from_row(row: Sequence[Any], times: dict[str, dt.datetime] | None = None,
                     ) -> StoredEvent:
    """The event of one stored row (a tuple in ``ROW_COLUMNS`` order).

    ``times`` caches parsed recording times: one append stamps all its events with one
    time, so a trace's events usually share a single string.
    """
    (position, event_id, stream, version, type_name, schema_version, recorded_at, trace_id,
     payload, digest) = row
    try:
        if SCHEMA_VERSIONS.get(type_name) == schema_version:
            event = parse_event_json(payload, type_name)
        else:
            event = parse_event(upcast(type_name, schema_version, json.loads(payload)))
        when = times.get(recorded_at) if times is not None else None
        if when is None:
            when = dt.datetime.fromisoformat(recorded_at)
            if times is not None:
                times[recorded_at] = when
        return StoredEvent(position, event_id, stream, version, type_name, schema_version,
                           when, trace_id, event, digest)
    except (ValueError, TypeError, KeyError, RecursionError, InputError) as exc:
        # A row the store wrote always loads; one that does not was changed behind its back.
        raise StoreError(f"the event at position {position} cannot be read "
                         f"({str(exc).splitlines()[0][:200]}); run tracestore verify",
                         code="store_damaged", position=position) from None
