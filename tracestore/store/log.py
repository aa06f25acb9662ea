"""The append-only event log.

Contract (each point is tested in tests/test_store_*.py):

* ``append`` writes a batch in ONE transaction: all of it or none of it.
* Positions are assigned here as ``head + 1, head + 2, …`` in the order given: under
  SQLite's write lock, or on PostgreSQL from a block reserved for the append
  (``ts_reserve_positions``).  Callers that must know positions in advance (the replay
  planner embeds ``decided_at_position`` in payloads) read the head inside the same
  transaction through ``append_with``: a planned append.
* Each event's trace version is its trace's last + 1, and its ``hash`` chains onto its
  trace's last row (``chain.trace_chain_hash``).  On PostgreSQL an append of rows it was
  given (``append_fresh_groups``, a recorder's) takes the append lock SHARED and a lock per
  trace it writes, so appends to different traces never wait on each other; a planned
  append takes the append lock exclusively (it alone picks the next positions).
* Each event's stream version is the stream's current version + 1; an ``expected_versions``
  entry that does not match raises ``ExpectedVersionConflict``.
* An event whose id is already stored is skipped and reported, never duplicated.
* ``verify`` recomputes every trace's chain (and the global chain of rows stored before
  the per-trace chains, migration 0006).
"""

from __future__ import annotations

import functools
import dataclasses
from hashlib import sha256
from contextlib import contextmanager
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracestore.store.bulk import paused_gc
from tracestore.store.pg_bulk import (
    COPY_MIN_ROWS, pg_copying, pg_existing_ids, pg_ids_order_bytewise, pg_last_row,
    pg_lookups_sql, pg_result_sets, pg_versions_sql, pg_text_array, pg_trace_append_sql, pg_trace_lock_sql,
)
from tracestore.store.pg_append import PgAppendLine, Outbox, append_on_line
from tracestore.errors import ExpectedVersionConflict, StoreError, TracestoreError
from tracestore.events import (
    SCHEMA_VERSIONS, NewEvent, SerializedEvent,
)
from tracestore.store import engine as engines
from tracestore.store import migrate
from tracestore.store.append_types import (
    AppendResult, Positions, Tap, WriteView, canonical_payload, utc_now,
)
from tracestore.store.chain import GENESIS_HASH, Expected, VerifyResult, chain_hash
from tracestore.store.connections import StoreConnections
from tracestore.store.dberrors import driver_errors, driver_message, integrity_errors
from tracestore.store.outage import outlasting
from tracestore.store.rows_io import RowsIO
from tracestore.store.reads import _HEAD_SQL, ID_QUERY_CHUNK, LogReads, database_error

if TYPE_CHECKING:  # a SQLite file's appends run on a plain sqlite3 connection (store.driver)
    from sqlalchemy import Connection

__all__ = ["GENESIS_HASH", "AppendResult", "EventStore", "Expected", "Positions", "Tap",
           "VerifyResult", "WriteView", "canonical_payload", "chain_hash", "database_error"]

_PG_APPEND_LOCK = 7_245_001  # advisory lock: shared by recorder appends, exclusive otherwise
_PG_INDEX_LOCK = 7_245_003  # advisory lock of the review indexes' rebuild
# The lock and the head read in ONE round trip (``pg_last_row``): the head statement takes
# its snapshot after the lock is granted, so it sees the previous holder's rows.
_PG_LOCKED_HEAD_SQL = (f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK}); "
                       f"SELECT pg_current_xact_id(); {_HEAD_SQL}")
# After a planned append: the position sequence moves past what it wrote (still under the
# exclusive lock, so no reservation runs meanwhile).
_PG_ADVANCE_SQL = (
    "SELECT setval('ts_events_position_seq', m) FROM (SELECT max(position) AS m "
    "FROM ts_events) AS head, ts_events_position_seq AS seq "
    "WHERE m > CASE WHEN seq.is_called THEN seq.last_value ELSE 0 END")
_TRACE_HEAD_SQL = {True: "SELECT trace_version, hash FROM ts_events WHERE trace_id IS NULL "
                         "ORDER BY position DESC LIMIT 1",
                   False: "SELECT trace_version, hash FROM ts_events WHERE trace_id = {mark} "
                          "ORDER BY position DESC LIMIT 1"}
_LINE_KNOWN_MAX = 100  # events of an ``append`` sent on the append line at most
_APPEND_CHUNK = 5000  # rows planned, checked and inserted at a time within one append
_COPY_EVENTS_SQL = ("COPY ts_events (position, id, stream, version, type, schema_version, "
                    "recorded_at, trace_id, payload, hash, trace_version, trace_key) FROM STDIN")
_TRACE_ID = 7  # where a row tuple holds its trace id (PostgreSQL adds its trace key from it)
Heads = dict  # trace id (None: the store's own) -> (trace version, hash) of its last row


def _given(events: Sequence[NewEvent], blobs: Sequence[bytes],
           ) -> Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]]:
    """An append plan that ignores the write view: the events were planned already."""
    return lambda _view: (events, blobs)

class EventStore(StoreConnections, LogReads, RowsIO):
    """An event log in a SQL database (SQLite file by default)."""

    COPY_MIN_ROWS = COPY_MIN_ROWS
    #: Seconds an append keeps trying through a locked or unreachable database
    #: (``store.outage``); 0 for commands, set by a ``Recorder``.
    outage_s: float = 0.0

    def __init__(self, url: str | None = None, *, migrate_schema: bool = True,
                 create: bool = True, read_only: bool = False) -> None:
        """Open the log at ``url``; ``create=False`` refuses to create a database or its
        tables where none exists (``NotFound``, code ``no_store``); ``read_only`` (implies
        ``create=False``) opens a SQLite file read-only and never migrates, so an archived
        store on a read-only mount can be verified."""
        self.url = engines.resolve_url(url)
        self.read_only = read_only
        create = create and not read_only
        if not create:
            engines.require_existing_file(self.url)
        self._init_connections()
        # A SQLite file whose schema is current opens with ONE plain sqlite3 connection and
        # one statement: the engines are built on first use (the queue's filters and most
        # reads of one attempt never need them; building two cost ~0.8 ms, more than the
        # indexed query itself).
        current = False
        if self._sqlite_path is not None and (read_only or migrate_schema):
            current = self._quick_current()
        if self._sqlite_path is not None:
            self._dialect, self._mark = "sqlite", "?"
        else:
            self._dialect = self._writer.dialect.name
            self._mark = "?" if self._writer.dialect.paramstyle == "qmark" else "%s"
        if read_only and engines.is_sqlite(self.url):
            if not current:
                try:
                    migrate.require_current(self._reader, self.url)
                except BaseException:
                    self.close()
                    raise
            migrate_schema = False
        mark = self._mark
        self._pg_bytewise: bool | None = None
        "Whether the server orders ids by their bytes (PostgreSQL; asked on first need)."
        # PostgreSQL rows also carry ``trace_key`` (migration 0007: the column its
        # uniqueness, partitions and shards are keyed on); ``_row_sink`` appends it.
        keyed = self._dialect == "postgresql"
        self._insert_sql = (
            "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
            f"recorded_at, trace_id, payload, hash, trace_version"
            f"{', trace_key' if keyed else ''}) "
            f"VALUES ({', '.join([mark] * (12 if keyed else 11))})")
        if migrate_schema and not current and create and self._created_here():
            current = True
        if migrate_schema and not current:
            try:
                migrate.upgrade(self._writer, self.url, self._reader, create=create)
            except BaseException:
                self.close()
                raise

    def _created_here(self) -> bool:
        """A SQLite file that does not exist yet (or is empty) gets its schema on a plain
        connection (``migrate.create_new_sqlite``): a first ``ingest`` builds no engine and
        imports no SQLAlchemy.  False when it is not new, or another process won the race:
        ``upgrade`` then checks it as any existing database."""
        import os

        path = self._sqlite_path
        if path is None or (os.path.exists(path) and os.path.getsize(path) > 0):
            return False
        conn = None
        try:
            conn = self._write_take()
            created = migrate.create_new_sqlite(conn)
        except driver_errors() as exc:
            if conn is not None:
                conn.close()
            self.close()
            from tracestore.text.masking import mask_secrets, masked_url

            raise StoreError(f"cannot open {masked_url(self.url)}: "
                             f"{mask_secrets(driver_message(exc))}",
                             code="database_unavailable") from exc
        self._write_give(conn)
        return created

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------

    def append(self, new_events: Iterable[NewEvent], *,
               expected_versions: Mapping[str, int] | None = None,
               blob_data: Sequence[bytes] = ()) -> AppendResult:
        """Append events (and store blobs) in one transaction.  On PostgreSQL, events
        that all name their trace are appended as a recorder's are (their traces' locks,
        the append lock shared): a release decision does not wait on other traces."""
        batch = list(new_events)
        if self._dialect != "postgresql" or not batch or \
                any(e.trace_id is None for e in batch):
            return self.append_with(lambda _view: (batch, list(blob_data)),
                                    expected_versions=expected_versions)
        return self._append_known(batch, list(blob_data), expected_versions or {})

    @outlasting
    def _append_known(self, batch: list[NewEvent], blob_data: list[bytes],
                      expected: Mapping[str, int]) -> AppendResult:
        """``append`` on PostgreSQL of events that all name their trace: their count is
        known, so ONE message takes their traces' locks, reserves their positions and
        reads the heads, as a recorder's append does; a few events are sent on the
        append line (``store.pg_append``) when none of them is stored yet and every
        expected version holds."""
        if len(batch) <= _LINE_KNOWN_MAX and len({e.id for e in batch}) == len(batch):
            on_line = self._known_on_line(batch, blob_data, expected)
            if on_line is not None:
                return on_line
        lookups = None
        if len(batch) <= _APPEND_CHUNK:  # its streams and ids: asked with the locks
            lookups = (sorted({e.stream for e in batch} | set(expected)),
                       [e.id for e in batch])
        return self._append_to_traces(_given(batch, blob_data), expected,
                                      sorted({str(e.trace_id) for e in batch}), len(batch),
                                      lookups)

    def _known_on_line(self, batch: list[NewEvent], blob_data: list[bytes],
                       expected: Mapping[str, int]) -> AppendResult | None:
        serialized = [e if e.__class__ is SerializedEvent else SerializedEvent(
            e.stream, e.id, e.trace_id, e.event.type, canonical_payload(e.event)) for e in batch]
        try:
            on_line = self._fresh_on_line([(None, serialized, expected, blob_data)], {},
                                          ids=[e.id for e in batch])
        except _Unexpected:  # not seen with the locks: the engine path reads again
            return None
        except integrity_errors() as exc:
            raise _refused(exc) from exc
        except driver_errors() as exc:
            raise database_error(exc, self.url, "during append") from exc
        if on_line is None:
            return None
        for new in batch:
            if new.__class__ is not SerializedEvent:
                new.fresh_id = False  # stored now
        return on_line[0][0]

    def _append_to_traces(
        self, build: Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]],
        expected: Mapping[str, int], traces: Sequence[str], rows: int = 0,
        lookups: tuple[list[str], list[str]] | None = None,
    ) -> AppendResult:
        """``append_with(..., traces=)`` on PostgreSQL: the traces' locks and heads in one
        message (with ``rows`` positions reserved when the count is known), the build,
        its positions reserved after it otherwise (``ts_reserve_positions``), and its rows
        written.
        An event of another trace is refused (``append_refused``): it would be written
        without its trace's lock.  ``lookups`` ``(streams, ids)`` of a batch known before
        (one chunk): their versions and which ids are stored are read in that message too,
        and the insert asks nothing more."""
        try:
            with paused_gc(), self._write_transaction() as conn:
                literal = pg_text_array(conn, sorted(set(traces)))
                sql = pg_trace_lock_sql(_PG_APPEND_LOCK, literal, rows)
                if lookups is not None:
                    sql += pg_lookups_sql(pg_text_array(conn, lookups[0]),
                                          pg_text_array(conn, lookups[1]))
                sets = pg_result_sets(conn, sql)
                looked_up = None
                if lookups is not None:
                    *sets, versions, ids = sets
                    looked_up = ({stream: int(v) for stream, v in versions},
                                 {row[0] for row in ids})
                heads: Heads = {trace: (0, GENESIS_HASH) if version is None
                                else (int(version), digest) for trace, version, digest in sets[-1]}
                view = WriteView(conn, 0, utc_now(), self)
                built, blob_data = build(view)
                batch = list(built)
                if any(e.trace_id not in heads for e in batch):
                    raise StoreError("an append declared for some traces holds an event of "
                                     "another trace", code="append_refused")
                first = sets[-2][0][0] if rows else conn.exec_driver_sql(
                    f"SELECT ts_reserve_positions({max(len(batch), 1)})").scalar_one()
                return self._append_in(conn, _given(batch, blob_data), expected, None,
                                       int(first) - 1, heads, looked_up)
        except integrity_errors() as exc:
            raise _refused(exc) from exc
        except driver_errors() as exc:
            raise database_error(exc, self.url, "during append") from exc

    @outlasting
    def append_with(
        self,
        build: Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]],
        *, expected_versions: Mapping[str, int] | None = None, tap: Tap | None = None,
        traces: Sequence[str] | None = None,
    ) -> AppendResult:
        """Run ``build`` inside the write transaction, then append what it returns.

        ``build`` sees the head position, so it can plan positions ``head + 1 …``.
        ``tap`` (see ``Tap``) hears each event as it is written and may append more events
        after them in the same transaction (an ingest's release decisions).

        ``traces``: the build writes only events of these traces and plans no position
        (its view's ``head_position`` is 0): on PostgreSQL it then runs under those traces'
        locks with the append lock shared, as a recorder's append does, and the positions
        are reserved once the build has returned its events.
        """
        if traces is not None and tap is None and self._dialect == "postgresql":
            return self._append_to_traces(build, expected_versions or {}, traces)
        try:
            with paused_gc(), self._write_transaction() as conn:
                head = self._locked_head(conn)
                result = self._append_in(conn, build, expected_versions or {}, tap, head)
                self._advance_positions(conn)
                return result
        except integrity_errors() as exc:
            raise _refused(exc) from exc
        except driver_errors() as exc:
            raise database_error(exc, self.url, "during append") from exc

    def append_each(
        self, builds: Sequence[Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]]],
        *, check: Callable[[int, AppendResult], None] | None = None,
        taps: Sequence[Tap | None] = (),
    ) -> list[AppendResult | TracestoreError]:
        """Run each builder as ``append_with`` would, all in ONE transaction with a savepoint
        per builder, committed (and synced) once.

        A builder whose planning or append fails with a typed error (or whose rows the
        database refuses, or that ``check(index, result)`` rejects) is rolled back to its
        savepoint and its error takes its place in the result: the others stand.  Any other
        failure (the database unreachable, a bug) rolls back everything.
        """
        outcomes: list[AppendResult | TracestoreError] = []
        try:
            with paused_gc(), self._write_transaction() as conn:
                self._lock(conn)
                for index, build in enumerate(builds):
                    def run(index: int = index, build: Any = build) -> AppendResult:
                        tap = taps[index] if index < len(taps) else None
                        result = self._append_in(conn, build, {}, tap)
                        if check is not None:
                            check(index, result)
                        return result

                    outcomes.append(_savepointed(conn, run))
                self._advance_positions(conn)
        except driver_errors() as exc:
            raise database_error(exc, self.url, "during append") from exc
        return outcomes

    @outlasting
    def append_groups(
        self, groups: Sequence[tuple[Any, Sequence[NewEvent], Mapping[str, int] | None,
                                     Sequence[bytes]]],
    ) -> list[AppendResult | TracestoreError]:
        """Many appends ``(key, events, expected_versions, blobs)`` in ONE transaction,
        committed (and synced) once, in the order given; each under a savepoint.

        A group the store refuses (a stale expected version, rows the database refuses) is
        rolled back alone and its error takes its place; every later group with the same
        ``key`` gets that error too without being tried, so what one key (an attempt)
        appended stays a prefix of what it asked.  Any other failure rolls back all.
        """
        outcomes: list[AppendResult | TracestoreError] = []
        failed: dict[Any, TracestoreError] = {}
        try:
            with paused_gc(), self._write_transaction() as conn:
                self._lock(conn)
                for key, batch, expected, blob_data in groups:
                    if key in failed:
                        outcomes.append(failed[key])
                        continue
                    outcome = _savepointed(conn, functools.partial(
                        self._append_in, conn, _given(batch, blob_data), expected or {}))
                    if isinstance(outcome, TracestoreError):
                        failed[key] = outcome
                    outcomes.append(outcome)
                self._advance_positions(conn)
        except driver_errors() as exc:
            raise database_error(exc, self.url, "during append") from exc
        return outcomes

    @outlasting
    def append_fresh_groups(
        self, groups: Sequence[tuple[Any, Sequence[Any], Mapping[str, int] | None,
                                     Sequence[bytes]]],
        versions: dict[str, int] | None = None, *,
        then: Callable[[list[AppendResult]], Sequence[Any]] | None = None,
        then_rows: int = 0,
    ) -> list[AppendResult | TracestoreError]:
        """``append_groups`` of events whose payloads are already their canonical bytes
        and whose ids are fresh (a live recorder's frames): every group in ONE
        transaction with ONE insert of all their rows -- no savepoint, model, payload
        serialization or id look-up per group, and the head read once.

        Each event has ``stream``, ``id``, ``trace_id``, ``type`` and ``payload`` (the
        bytes ``canonical_payload`` writes for its model); the caller vouches that each id
        is freshly drawn (never stored), as ``NewEvent`` does for the ids it draws.
        ``versions`` is the caller's memory of stream versions (updated in place once the
        transaction commits): a stream it holds is not read back.  The unique (stream,
        version) constraint still guards it: when another writer moved a stream on, the
        insert is refused, and the batch is tried again with every version read.  A group
        whose expected version does not hold, or rows the database refuses again, send
        the whole batch to ``append_groups`` (a savepoint per group: the refused group's
        error in its place, ``ExpectedVersionConflict`` for a stale expectation), as if
        this method had not been asked.

        ``then(results)``, called inside the first try's transaction once every group is
        written (each trace's lock held), returns rows of the same traces (at most
        ``then_rows``) written right after them in that transaction: a recorder's decision
        made final by these rows commits with them.  The last result's ``followed`` holds
        their positions and ``then_ran`` says the committed transaction ran ``then``;
        a retry and the fallback do not call it."""
        if not groups:
            return []
        known = versions if versions is not None else {}
        for attempt in (0, 1):
            try:
                try:
                    on_line = self._fresh_on_line(groups, known, then, then_rows) \
                        if attempt == 0 else None
                except ExpectedVersionConflict as conflict:
                    for new in groups[0][1]:
                        known.pop(new.stream, None)
                    return [conflict]
                if on_line is not None:
                    results, written = on_line
                    if versions is not None:
                        versions.update(written)
                    return list(results)
                with paused_gc(), self._write_transaction() as conn:
                    memory = known if attempt == 0 else {}
                    head, heads, looked_up = self._locked_traces(
                        conn, groups, _unknown_streams(groups, memory)
                        if self._dialect == "postgresql" else (),
                        then_rows if then is not None else 0)
                    outcome = self._append_fresh_in(conn, groups, memory, head, heads,
                                                    looked_up, then if attempt == 0 else None,
                                                    then_rows)
            except integrity_errors():
                continue  # a version moved on behind the caller's memory: read them all
            except _Unexpected:
                break  # an expectation does not hold: ``append_groups`` says which
            except driver_errors() as exc:
                raise database_error(exc, self.url, "during append") from exc
            results, written = outcome
            if versions is not None:
                versions.update(written)
            return list(results)
        if versions is not None:
            for _, batch, _, _ in groups:
                for new in batch:
                    versions.pop(new.stream, None)
        serialized: list[Any] = [  # the same payload bytes (``_insert`` takes them as given)
            (key, [SerializedEvent(e.stream, e.id, e.trace_id, e.type, e.payload)
                   for e in batch], expected, blob_data)
            for key, batch, expected, blob_data in groups]
        return self.append_groups(serialized)

    def _fresh_on_line(
        self, groups: Sequence[tuple[Any, Sequence[Any], Mapping[str, int] | None,
                                     Sequence[bytes]]],
        known: Mapping[str, int],
        then: Callable[[list[AppendResult]], Sequence[Any]] | None = None, then_rows: int = 0,
        ids: Sequence[str] = (),
    ) -> tuple[list[AppendResult], dict[str, int]] | None:
        """``append_fresh_groups``' first try on PostgreSQL's append line
        (``store.pg_append.append_on_line``): two round trips, or None when the line
        cannot take it."""
        if self._dialect != "postgresql":
            return None
        if self._line is None:
            with self._quick_lock:
                if self._line is None:
                    self._line = PgAppendLine(self._writer, _PG_APPEND_LOCK)
        return append_on_line(self, self._line, groups, known,
                              _unknown_streams(groups, known), then, then_rows, ids)

    def _append_fresh_in(
        self, conn: Connection, groups: Sequence[tuple[Any, Sequence[Any],
                                                       Mapping[str, int] | None,
                                                       Sequence[bytes]]],
        known: Mapping[str, int], head: int, heads: Heads,
        looked_up: dict[str, int] | None = None,
        then: Callable[[list[AppendResult]], Sequence[Any]] | None = None, then_rows: int = 0,
        out: Outbox | None = None,
    ) -> tuple[list[AppendResult], dict[str, int]]:
        """The single insert of ``append_fresh_groups`` (``_Unexpected`` when an expected
        version does not hold: nothing is written).  ``looked_up``: the versions of the
        streams ``known`` lacks, read with the locks already.  With ``out`` (the append
        line: every head and version read already) nothing is sent on ``conn``: the blobs
        and rows are collected there."""
        mark = self._mark
        unknown = [] if looked_up is not None else _unknown_streams(groups, known)
        versions = {stream: known[stream] for _, batch, _, _ in groups for stream in
                    {e.stream for e in batch} if stream in known}
        versions.update(looked_up or {})
        for start in range(0, len(unknown), ID_QUERY_CHUNK):
            chunk = unknown[start:start + ID_QUERY_CHUNK]
            versions.update(conn.exec_driver_sql(
                f"SELECT stream, MAX(version) FROM ts_events WHERE stream IN "
                f"({', '.join([mark] * len(chunk))}) GROUP BY stream", tuple(chunk)).all())
        position = head
        self._load_heads(conn, heads, {e.trace_id for _, batch, _, _ in groups for e in batch})
        recorded_at = utc_now()
        every_blob = [b for *_, data in groups for b in data]
        stored_blobs = iter(out.put_blobs(every_blob) if out is not None
                            else self._put_fresh_blobs(conn, every_blob))
        results: list[AppendResult] = []
        total = sum(len(batch) for _, batch, _, _ in groups)
        with (out.row_sink() if out is not None else self._row_sink(conn, total)) as put:
            for _, batch, expected, blob_data in groups:
                for stream, want in (expected or {}).items():
                    if versions.get(stream, 0) != want:
                        raise _Unexpected  # nothing is written: the rows are not sent
                first = position + 1
                before = {trace: heads[trace][0] for trace in {e.trace_id for e in batch}}
                position = _put_rows(put, batch, position, versions, heads, recorded_at)
                shas = tuple(next(stored_blobs) for _ in blob_data)
                results.append(AppendResult(
                    Positions(first, position + 1 - first), (), shas,
                    trace_spans=tuple((t, v, heads[t][0]) for t, v in before.items())))
            if then is not None:
                more = list(then(results))
                if any(e.trace_id not in heads for e in more) or \
                        (self._dialect == "postgresql" and len(more) > then_rows):
                    raise StoreError("rows following an append must be of its traces and "
                                     "within the room reserved for them", code="append_refused")
                first = position + 1
                position = _put_rows(put, more, position, versions, heads, recorded_at)
                last = results[-1]
                results[-1] = dataclasses.replace(
                    last, followed=Positions(first, len(more)), then_ran=True,
                    trace_spans=tuple((t, v, heads[t][0]) for t, v, _ in last.trace_spans))
        return results, versions

    def _put_fresh_blobs(self, conn: Connection, blob_data: Sequence[bytes]) -> list[str]:
        """``_put_blobs`` of many blobs: one look-up of which are stored, one insert of
        the rest (a blob SQLite streams piece by piece goes alone, as there); on
        PostgreSQL one insert that skips the stored ones (``ON CONFLICT DO NOTHING``)."""
        if self._dialect == "postgresql":
            return self._put_blobs(conn, blob_data)
        shas = [sha256(data).hexdigest() for data in blob_data]
        mark, present = self._mark, set[str]()
        distinct = sorted(set(shas))
        for start in range(0, len(distinct), ID_QUERY_CHUNK):
            chunk = distinct[start:start + ID_QUERY_CHUNK]
            present.update(conn.exec_driver_sql(
                f"SELECT sha256 FROM ts_blobs WHERE sha256 IN "
                f"({', '.join([mark] * len(chunk))})", tuple(chunk)).scalars())
        rows = []
        for sha, data in zip(shas, blob_data):
            if sha in present:
                continue
            present.add(sha)
            if not self._stream_blob(conn, sha, data):
                rows.append((sha, len(data), data))
        if rows:
            conn.exec_driver_sql(f"INSERT INTO ts_blobs (sha256, size, data) VALUES "
                                 f"({mark}, {mark}, {mark})", rows)
        return shas

    def _lock_index(self, conn: Connection) -> None:
        """The lock of the review indexes' rebuild (``review.queue_index.sync``): its own
        on PostgreSQL, so a rebuild never holds back an append; SQLite's write lock
        (``BEGIN IMMEDIATE``) serialises it with everything else."""
        if self._dialect == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_INDEX_LOCK})")

    def _settled_head(self, conn: Connection) -> int:
        """The last position a reader may pass (``settled_sql``): every event up to it is
        committed or will never be."""
        if self._dialect != "postgresql":
            return self._head(conn)[0]
        return int(conn.exec_driver_sql("SELECT coalesce(max(position), 0) FROM ts_events "
                                        f"WHERE {self.settled_sql()}").scalar_one())

    def _lock(self, conn: Connection) -> None:
        if self._dialect == "postgresql":  # SQLite writers are serialised by BEGIN IMMEDIATE
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK})")

    def _locked_head(self, conn: Connection) -> int:
        """Take the write lock (exclusive) and read the head position."""
        if self._dialect != "postgresql":  # BEGIN IMMEDIATE took SQLite's write lock
            return self._head(conn)[0]
        row = pg_last_row(conn, _PG_LOCKED_HEAD_SQL)
        return 0 if row is None else int(row[0])

    def _advance_positions(self, conn: Connection) -> None:
        """After a planned append on PostgreSQL: reservations continue past its rows."""
        if self._dialect == "postgresql":
            conn.exec_driver_sql(_PG_ADVANCE_SQL)

    def _locked_traces(self, conn: Connection, groups: Sequence[tuple[Any, Sequence[Any],
                                                                     Any, Any]],
                       unknown: Sequence[str] = (), room: int = 0,
                       ) -> tuple[int, Heads, dict[str, int] | None]:
        """Lock what an append of given rows needs: ``(head position, trace heads, the
        versions of the ``unknown`` streams or None when they are still to be read)``.

        On PostgreSQL, when every row names its trace, ONE round trip takes the append
        lock shared, the traces' own locks, a block of positions, the traces' heads
        (``pg_trace_append_sql``) and the versions of the streams ``unknown`` names.
        Otherwise (SQLite; a row of the store's own chain) the write lock is taken whole
        and the heads are read as the rows need them."""
        traces = sorted({e.trace_id for _, batch, _, _ in groups for e in batch},
                        key=lambda t: (t is None, t or ""))
        if self._dialect != "postgresql" or not traces or traces[-1] is None:
            return self._locked_head(conn), {}, None
        rows = sum(len(batch) for _, batch, _, _ in groups) + room
        literal = pg_text_array(conn, traces)
        sql = pg_trace_append_sql(_PG_APPEND_LOCK, literal, rows)
        if unknown and len(unknown) <= ID_QUERY_CHUNK:
            sql += pg_versions_sql(pg_text_array(conn, unknown))
        sets = pg_result_sets(conn, sql)
        looked_up: dict[str, int] | None = {} if not unknown else None  # none to read
        if unknown and len(unknown) <= ID_QUERY_CHUNK:
            *sets, versions = sets
            looked_up = {stream: int(v) for stream, v in versions}
        *_, reserved, heads = sets
        return int(reserved[0][0]) - 1, {
            trace: (0, GENESIS_HASH) if version is None else (int(version), digest)
            for trace, version, digest in heads}, looked_up

    def _load_heads(self, conn: Connection, heads: Heads,
                    traces: Iterable[str | None]) -> None:
        """Read into ``heads`` the last row's (trace version, hash) of each of ``traces``
        not there yet: one indexed look-up each (``(trace_id, position)``)."""
        for trace in traces:
            if trace in heads:
                continue
            if trace is None:
                row = conn.exec_driver_sql(_TRACE_HEAD_SQL[True]).first()
            else:
                sql = _TRACE_HEAD_SQL[False].format(mark=self._mark)
                row = conn.exec_driver_sql(sql, (trace,)).first()
            heads[trace] = (0, GENESIS_HASH) if row is None else (int(row[0]), row[1])

    def _append_in(self, conn: Connection,
                   build: Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]],
                   expected: Mapping[str, int], tap: Tap | None = None,
                   head: int | None = None, heads: Heads | None = None,
                   looked_up: tuple[dict[str, int], set[str]] | None = None) -> AppendResult:
        """One append in the caller's locked transaction; ``head`` (position) when it was
        read under the lock just now (else it is read here), ``heads`` the trace heads
        read with it."""
        head_position = head if head is not None else self._head(conn)[0]
        heads = {} if heads is None else heads
        view = WriteView(conn, head_position, utc_now(), self)
        batch, blob_data = build(view)
        stored_blobs = self._put_blobs(conn, blob_data)
        heard = tap.written if tap is not None else None
        before: dict[str | None, int] = {}
        written, skipped = self._insert(conn, batch, expected, head_position, heads,
                                        view.recorded_at, heard, before, looked_up)
        result = AppendResult(Positions(head_position + 1, written), tuple(skipped),
                              tuple(stored_blobs), trace_spans=tuple(
                                  (t, v, heads[t][0]) for t, v in before.items()))
        if tap is None:
            return result
        more = tap.then(view, result)
        if more:
            after = head_position + written
            count, _ = self._insert(conn, more, {}, after, heads, view.recorded_at)
            result = dataclasses.replace(result, followed=Positions(after + 1, count))
        settled = getattr(tap, "settled", None)  # optional: everything is written
        if settled is not None:
            settled(view)
        return result

    def _existing_ids(self, conn: Connection, ids: Sequence[str]) -> set[str]:
        if self._dialect == "postgresql":  # one array parameter, not 500 bound ids a query
            bytewise = self._pg_bytewise
            if bytewise is None and len(ids) >= _RANGE_LOOKUP_MIN:
                bytewise = self._pg_bytewise = pg_ids_order_bytewise(conn)
            return pg_existing_ids(conn, ids, bytewise=bool(bytewise))
        if self._dialect == "sqlite" and len(ids) >= _RANGE_LOOKUP_MIN:
            in_range = _sqlite_ids_in_range(conn, ids)
            if in_range is not None:
                return in_range
        found: set[str] = set()
        for start in range(0, len(ids), ID_QUERY_CHUNK):
            chunk = tuple(ids[start:start + ID_QUERY_CHUNK])
            marks = ", ".join([self._mark] * len(chunk))
            found.update(conn.exec_driver_sql(
                f"SELECT id FROM ts_events WHERE id IN ({marks})", chunk).scalars())
        return found

    def _insert(self, conn: Connection, batch: Iterable[NewEvent | SerializedEvent],
                expected: Mapping[str, int], head_position: int, heads: Heads,
                recorded_at: str, heard: Callable[..., None] | None = None,
                before: dict[str | None, int] | None = None,
                looked_up: tuple[dict[str, int], set[str]] | None = None,
                ) -> tuple[int, list[str]]:
        """Write ``batch`` in chunks of ``_APPEND_CHUNK`` rows, all in the caller's
        transaction: a lazily planned ingest of a million events never exists in memory
        at once, and the chains, versions and idempotence carry across chunks.  Returns how
        many rows were written (at ``head_position + 1 …``) and the ids skipped; ``heads``
        (each trace's last version and hash) is read as needed and kept up to date.
        ``heard(position, version, new, digest)`` is called for each row written;
        ``before`` gets each trace's version as it stood before the batch.  ``looked_up``
        ``(versions, stored ids)`` of a one-chunk batch, read already under its locks."""
        versions = self._stream_versions(conn, sorted(expected)) if looked_up is None \
            else dict(looked_up[0])
        for stream, want in expected.items():
            have = versions.get(stream, 0)
            if have != want:
                raise ExpectedVersionConflict(
                    f"stream {stream!r} is at version {have}, the append expected {want}",
                    stream=stream, expected=want, actual=have,
                )
        known_streams = set(expected)
        skipped: list[str] = []
        seen: set[str] = set()
        position = head_position
        for chunk in _chunks(batch, _APPEND_CHUNK):
            traces = {e.trace_id for e in chunk}
            self._load_heads(conn, heads, traces)
            if before is not None:
                before.update((t, heads[t][0]) for t in traces if t not in before)
            if looked_up is not None:
                existing = looked_up[1]
            else:
                existing = self._existing_ids(conn, [e.id for e in chunk if not e.fresh_id])
                fresh_streams = sorted({e.stream for e in chunk} - known_streams)
                versions.update(self._stream_versions(conn, fresh_streams))
                known_streams.update(fresh_streams)
            with self._row_sink(conn, len(chunk)) as put:
                for new in chunk:
                    event_id, stream = new.id, new.stream
                    if new.__class__ is SerializedEvent:
                        # Ids of one serialized plan are distinct by construction; only the
                        # store can already hold them, so no ``seen`` entry (1M of them is
                        # ~100 MiB).
                        if event_id in existing:
                            skipped.append(event_id)
                            continue
                        type_name, payload_bytes = new.type, new.payload
                    else:
                        new.fresh_id = False  # once offered to the store, its id may exist
                        if event_id in existing or event_id in seen:
                            skipped.append(event_id)
                            continue
                        seen.add(event_id)
                        type_name = new.event.type
                        payload_bytes = canonical_payload(new.event)
                    position += 1
                    version = versions.get(stream, 0) + 1
                    versions[stream] = version
                    schema_version = SCHEMA_VERSIONS[type_name]
                    trace_id = new.trace_id
                    trace_version, prev_hash = heads[trace_id]
                    trace_version += 1
                    # ``trace_chain_hash``, inlined (a call per row was ~5% of a large
                    # ingest): the same fields, separators and payload bytes.
                    hasher = sha256(f"{prev_hash}\x1f{position}\x1f{trace_version}\x1f"
                                    f"{event_id}\x1f{stream}\x1f{version}\x1f{type_name}"
                                    f"\x1f{schema_version}\x1f{recorded_at}"
                                    f"\x1f{trace_id or ''}\x1f".encode())
                    hasher.update(payload_bytes)
                    digest = hasher.hexdigest()
                    put((position, event_id, stream, version, type_name, schema_version,
                         recorded_at, trace_id, payload_bytes.decode("utf-8"), digest,
                         trace_version))
                    heads[trace_id] = (trace_version, digest)
                    if heard is not None:
                        heard(position, version, new, digest)
        return position - head_position, skipped

    @contextmanager
    def _row_sink(self, conn: Connection, size: int) -> Iterator[Callable[[tuple[Any, ...]], None]]:
        """Where the event rows of one chunk of ``size`` events go, in the caller's
        transaction.  On PostgreSQL a chunk of at least ``COPY_MIN_ROWS`` events streams
        its rows into ``COPY ... FROM STDIN`` as they are made (the server inserts while
        the next rows are hashed; the same row values, so the same stored bytes;
        constraints and triggers apply to COPY as to INSERT).  Smaller chunks, and SQLite,
        collect the rows and hand them to the driver's executemany directly (SQLAlchemy's
        per-row parameter processing would double the cost of a large ingest for no added
        safety).  On PostgreSQL each row gets its ``trace_key`` (its trace id, ``''`` for
        the store's own) appended here, the one place every event row passes.  An error in
        the block writes nothing."""
        if self._dialect == "postgresql":
            if size >= self.COPY_MIN_ROWS:
                with pg_copying(conn, _COPY_EVENTS_SQL) as write:
                    yield lambda row: write((*row, row[_TRACE_ID] or ""))
                return
            keyed: list[tuple[Any, ...]] = []
            yield lambda row: keyed.append((*row, row[_TRACE_ID] or ""))
            if keyed:
                conn.exec_driver_sql(self._insert_sql, keyed)
            return
        rows: list[tuple[Any, ...]] = []
        yield rows.append
        if rows:
            conn.exec_driver_sql(self._insert_sql, rows)

    def _write_rows(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None:
        with self._row_sink(conn, len(rows)) as put:
            for row in rows:
                put(row)


def _put_rows(put: Callable[[tuple[Any, ...]], None], batch: Iterable[Any], position: int,
              versions: dict[str, int], heads: Heads, recorded_at: str) -> int:
    """Chain and hand ``put`` the rows of ``batch`` (fresh, serialized: ``stream``, ``id``,
    ``trace_id``, ``type``, ``payload``) from after ``position``; the last position."""
    for new in batch:
        event_id, stream, type_name, payload_bytes = new.id, new.stream, new.type, new.payload
        position += 1
        version = versions.get(stream, 0) + 1
        versions[stream] = version
        schema_version = SCHEMA_VERSIONS[type_name]
        trace_id = new.trace_id
        trace_version, prev_hash = heads[trace_id]
        trace_version += 1
        # ``trace_chain_hash``, inlined as in ``_insert`` (``verify`` recomputes it)
        hasher = sha256(f"{prev_hash}\x1f{position}\x1f{trace_version}\x1f{event_id}\x1f"
                        f"{stream}\x1f{version}\x1f{type_name}\x1f{schema_version}\x1f"
                        f"{recorded_at}\x1f{trace_id or ''}\x1f".encode())
        hasher.update(payload_bytes)
        digest = hasher.hexdigest()
        put((position, event_id, stream, version, type_name, schema_version, recorded_at,
             trace_id, payload_bytes.decode("utf-8"), digest, trace_version))
        heads[trace_id] = (trace_version, digest)
    return position


def _unknown_streams(groups: Sequence[tuple[Any, Sequence[Any], Any, Any]],
                     known: Mapping[str, int]) -> list[str]:
    """The streams of ``groups`` whose versions must be read: those ``known`` lacks, and
    every stream a group expects at a version."""
    return sorted({e.stream for _, batch, _, _ in groups for e in batch} - set(known)
                  | {s for _, _, expected, _ in groups for s in expected or ()})


class _Unexpected(Exception):
    """An expected version of ``append_fresh_groups`` does not hold (rolled back)."""


_RANGE_LOOKUP_MIN = 64
"From this many ids, an SQLite look-up first tries ONE range query (``_sqlite_ids_in_range``)."
_IDS_IN_RANGE_SQL = "SELECT id FROM ts_events WHERE id >= ? AND id <= ? LIMIT ?"


def _sqlite_ids_in_range(conn: Connection, ids: Sequence[str]) -> set[str] | None:
    """Which of ``ids`` are stored, as ONE indexed range query -- or None when that query
    cannot settle it (then the caller asks by the ids themselves).

    Every id of ``ids`` lies between their least and greatest, so the stored ids among
    them are exactly the stored ids of that range found in ``ids``.  The range is read from
    the ``id`` index (it covers the column) with a bound: at most ``len(ids) + 1`` rows, and
    more than ``len(ids)`` stored ids in the range (ids scattered across a large store, as
    random ids are) means "ask by id" -- so the query never reads more rows than the ids
    asked about.  A planned ingest's ids share one prefix and ascend (``ingest.plan``), so
    each 5,000-row chunk of a fresh attempt costs one query returning nothing, and a
    re-ingest one query returning its own ids.  Only for ASCII ids: SQLite compares text
    by its bytes (``BINARY``), which orders ASCII as Python does (any stored text ordered
    otherwise is outside the range or not among ``ids``; it does not matter which)."""
    if not "".join(ids).isascii():
        return None
    limit = len(ids) + 1
    rows = conn.exec_driver_sql(_IDS_IN_RANGE_SQL, (min(ids), max(ids), limit)).scalars().all()
    if len(rows) == limit:
        return None
    return set(rows).intersection(ids)


def _savepointed(conn: Connection, run: Callable[[], AppendResult],
                 ) -> AppendResult | TracestoreError:
    """``run()`` under a savepoint: its result, or -- rolled back to the savepoint -- the
    typed error it raised (rows the database refused: ``append_refused``).  The
    transaction goes on either way; any other exception ends it."""
    savepoint = conn.begin_nested()
    try:
        result = run()
    except TracestoreError as exc:
        savepoint.rollback()
        return exc
    except integrity_errors() as exc:
        savepoint.rollback()
        return _refused(exc)
    savepoint.commit()
    return result


def _refused(exc: Exception) -> StoreError:
    return StoreError(f"the database refused the append: {driver_message(exc)}",
                      code="append_refused")


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
