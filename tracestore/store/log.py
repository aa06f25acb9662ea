"""The append-only event log.

Contract (each point is tested in tests/test_store_*.py):

* ``append`` writes a batch in ONE transaction: all of it or none of it.
* Positions are assigned here, under the write lock, as ``head + 1, head + 2, …`` in the
  order given.  Callers that must know positions in advance (the replay planner embeds
  ``decided_at_position`` in payloads) read the head inside the same transaction through
  ``append_with``.
* Each event's stream version is the stream's current version + 1; an ``expected_versions``
  entry that does not match raises ``ExpectedVersionConflict``.
* An event whose id is already stored is skipped and reported, never duplicated.
* ``hash`` = sha256(previous hash + canonical bytes); ``verify`` recomputes the chain.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Connection, func, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from tracestore.bulk import paused_gc
from tracestore.errors import ExpectedVersionConflict, InputError, StoreError
from tracestore.events import (
    SCHEMA_VERSIONS, NewEvent, SerializedEvent, StoredEvent, parse_event, parse_event_json,
    to_json_bytes, upcast,
)
from tracestore.store import engine as engines
from tracestore.store import migrate
from tracestore.store.schema import blobs, events
from tracestore.store.verify import GENESIS_HASH, Expected, VerifyResult, chain_hash, verify_log

__all__ = ["GENESIS_HASH", "AppendResult", "EventStore", "Expected", "VerifyResult",
           "WriteView", "canonical_payload", "chain_hash", "database_error"]

MAX_POSITION = 2**63 - 1  # positions are 64-bit signed integers in every backend
_ID_QUERY_CHUNK = 500  # ids per "already stored?" query; well under SQLite's variable limit
_PG_APPEND_LOCK = 7_245_001  # advisory lock key serialising PostgreSQL writers
_APPEND_CHUNK = 5000  # rows planned, checked and inserted at a time within one append


def canonical_payload(event: Any) -> bytes:
    """The payload's stored bytes: compact JSON, key order as given (natives stay as decoded).

    pydantic's serializer writes non-ASCII as UTF-8 and keeps dict order; whatever it
    writes is what gets hashed, so the stored text itself is the canonical form.  (Lone
    surrogates are kept as escapes: see ``to_json_bytes``.)
    """
    return to_json_bytes(event)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class AppendResult:
    positions: tuple[int, ...]
    "Positions of the events written, in order."
    skipped_ids: tuple[str, ...] = ()
    "Ids that were already stored (idempotent re-append): reported, not duplicated."
    blobs_stored: tuple[str, ...] = ()

    @property
    def appended(self) -> int:
        return len(self.positions)


@dataclass
class WriteView:
    """What a builder may see inside the write transaction of ``append_with``."""

    conn: Connection
    head_position: int
    recorded_at: str
    store: EventStore = field(repr=False)

    def read(self, **filters: Any) -> list[StoredEvent]:
        return self.store._read(self.conn, **filters)

    def has_event(self, event_id: str) -> bool:
        return bool(self.store._existing_ids(self.conn, [event_id]))


def database_error(exc: DBAPIError, url: str, during: str) -> StoreError:
    """The one translation of a driver error into the store's vocabulary.

    A missing table or column, or text SQLite cannot decode, means the database was
    damaged or edited behind our back (``store_damaged``); anything else is the database
    being unreachable or busy (``database_unavailable``).
    """
    message = str(exc.orig) if getattr(exc, "orig", None) is not None else str(exc)
    damaged = ("no such table", "no such column", "does not exist", "could not decode",
               "malformed", "undefinedtable", "undefinedcolumn", "has no column")
    from sqlalchemy.engine import make_url

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
    def wrapper(self: EventStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except DBAPIError as exc:
            raise database_error(exc, self.url, f"in {method.__name__}") from exc

    return wrapper  # type: ignore[return-value]


def _check_positions(**positions: int | None) -> None:
    for name, value in positions.items():
        if value is not None and not 0 <= value <= MAX_POSITION:
            raise InputError(f"{name} position {value} is outside 0…{MAX_POSITION}",
                             code="position_out_of_range", **{name: value})


class EventStore:
    """An event log in a SQL database (SQLite file by default)."""

    def __init__(self, url: str | None = None, *, migrate_schema: bool = True,
                 create: bool = True) -> None:
        """Open the log at ``url``; ``create=False`` (read-only commands) refuses to create
        a database or its tables where none exists (``NotFound``, code ``no_store``)."""
        self.url = engines.resolve_url(url)
        if not create:
            engines.require_existing_file(self.url)
        self._writer, self._reader = engines.make_engines(self.url)
        self._dialect = self._writer.dialect.name
        mark = self._mark = "?" if self._writer.dialect.paramstyle == "qmark" else "%s"
        self._insert_sql = (
            "INSERT INTO ts_events (position, id, stream, version, type, schema_version, "
            f"recorded_at, trace_id, payload, hash) VALUES ({', '.join([mark] * 10)})")
        if migrate_schema:
            try:
                migrate.upgrade(self._writer, self.url, self._reader, create=create)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        self._writer.dispose()
        if self._reader is not self._writer:
            self._reader.dispose()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------

    def append(self, new_events: Iterable[NewEvent], *,
               expected_versions: Mapping[str, int] | None = None,
               blob_data: Sequence[bytes] = ()) -> AppendResult:
        """Append events (and store blobs) in one transaction."""
        return self.append_with(lambda _view: (list(new_events), list(blob_data)),
                                expected_versions=expected_versions)

    def append_with(
        self,
        build: Callable[[WriteView], tuple[Iterable[NewEvent], Sequence[bytes]]],
        *, expected_versions: Mapping[str, int] | None = None,
    ) -> AppendResult:
        """Run ``build`` inside the write transaction, then append what it returns.

        ``build`` sees the head position, so it can plan positions ``head + 1 …``.
        """
        try:
            with paused_gc(), self._writer.begin() as conn:
                if self._dialect == "postgresql":
                    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_APPEND_LOCK})")
                head_position, head_hash = self._head(conn)
                view = WriteView(conn, head_position, utc_now(), self)
                batch, blob_data = build(view)
                stored_blobs = self._put_blobs(conn, blob_data)
                positions, skipped = self._insert(
                    conn, batch, expected_versions or {}, head_position, head_hash,
                    view.recorded_at,
                )
        except IntegrityError as exc:
            raise StoreError(f"the database refused the append: {exc.orig}",
                             code="append_refused") from exc
        except DBAPIError as exc:
            raise database_error(exc, self.url, "during append") from exc
        return AppendResult(tuple(positions), tuple(skipped), tuple(stored_blobs))

    def _head(self, conn: Connection) -> tuple[int, str]:
        row = conn.execute(
            select(events.c.position, events.c.hash).order_by(events.c.position.desc()).limit(1)
        ).first()
        return (0, GENESIS_HASH) if row is None else (row[0], row[1])

    def _existing_ids(self, conn: Connection, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _ID_QUERY_CHUNK):
            chunk = ids[start:start + _ID_QUERY_CHUNK]
            found.update(conn.execute(select(events.c.id).where(events.c.id.in_(chunk))).scalars())
        return found

    def _stream_versions(self, conn: Connection, streams: Sequence[str]) -> dict[str, int]:
        versions: dict[str, int] = {}
        for start in range(0, len(streams), _ID_QUERY_CHUNK):
            chunk = streams[start:start + _ID_QUERY_CHUNK]
            rows = conn.execute(
                select(events.c.stream, func.max(events.c.version))
                .where(events.c.stream.in_(chunk)).group_by(events.c.stream)
            )
            versions.update({stream: version for stream, version in rows})
        return versions

    def _insert(self, conn: Connection, batch: Iterable[NewEvent | SerializedEvent],
                expected: Mapping[str, int], head_position: int, head_hash: str,
                recorded_at: str) -> tuple[list[int], list[str]]:
        """Write ``batch`` in chunks of ``_APPEND_CHUNK`` rows, all in the caller's
        transaction: a lazily planned ingest of a million events never exists in memory
        at once, and the chain, versions and idempotence carry across chunks."""
        versions = self._stream_versions(conn, sorted(expected))
        for stream, want in expected.items():
            have = versions.get(stream, 0)
            if have != want:
                raise ExpectedVersionConflict(
                    f"stream {stream!r} is at version {have}, the append expected {want}",
                    stream=stream, expected=want, actual=have,
                )
        known_streams = set(expected)
        positions: list[int] = []
        skipped: list[str] = []
        seen: set[str] = set()
        position, prev_hash = head_position, head_hash
        for chunk in _chunks(batch, _APPEND_CHUNK):
            existing = self._existing_ids(conn, [e.id for e in chunk if not e.fresh_id])
            fresh_streams = sorted({e.stream for e in chunk} - known_streams)
            versions.update(self._stream_versions(conn, fresh_streams))
            known_streams.update(fresh_streams)
            rows: list[tuple[Any, ...]] = []
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
                digest = chain_hash(prev_hash, position, event_id, stream, version, type_name,
                                    schema_version, recorded_at, new.trace_id, payload_bytes)
                rows.append((position, event_id, stream, version, type_name, schema_version,
                             recorded_at, new.trace_id, payload_bytes.decode("utf-8"), digest))
                prev_hash = digest
            if rows:
                # The driver's executemany directly: SQLAlchemy's per-row parameter
                # processing would double the cost of a large ingest for no added safety.
                conn.exec_driver_sql(self._insert_sql, rows)
                positions.extend(row[0] for row in rows)
        return positions, skipped

    def _put_blobs(self, conn: Connection, blob_data: Sequence[bytes]) -> list[str]:
        stored: list[str] = []
        for data in blob_data:
            sha = hashlib.sha256(data).hexdigest()
            present = conn.execute(select(blobs.c.sha256).where(blobs.c.sha256 == sha)).first()
            if present is None:
                conn.execute(blobs.insert(), {"sha256": sha, "size": len(data), "data": data})
            stored.append(sha)
        return stored

    # -- reading ---------------------------------------------------------------------

    @_translated
    def read(self, *, stream: str | None = None, trace_id: str | None = None,
             attempt_id: str | None = None, after: int = 0, upto: int | None = None,
             limit: int | None = None) -> list[StoredEvent]:
        """Events in global order, optionally filtered by stream, trace or attempt."""
        _check_positions(after=after, upto=upto)
        with self._reader.connect() as conn:
            return self._read(conn, stream=stream, trace_id=trace_id, attempt_id=attempt_id,
                              after=after, upto=upto, limit=limit)

    def _read(self, conn: Connection, *, stream: str | None = None,
              trace_id: str | None = None, attempt_id: str | None = None, after: int = 0,
              upto: int | None = None, limit: int | None = None) -> list[StoredEvent]:
        from tracestore.events import attempt_stream

        query = select(events).where(events.c.position > after).order_by(events.c.position)
        if attempt_id is not None:
            stream = attempt_stream(attempt_id)
        if stream is not None:
            query = query.where(events.c.stream == stream)
        if trace_id is not None:
            query = query.where(events.c.trace_id == trace_id)
        if upto is not None:
            query = query.where(events.c.position <= upto)
        if limit is not None:
            query = query.limit(limit)
        return [_to_stored(row) for row in conn.execute(query).mappings()]

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
        ids = (select(events.c.trace_id).where(events.c.trace_id.is_not(None))
               .group_by(events.c.trace_id).order_by(func.min(events.c.position)))
        columns = ", ".join(c.name for c in events.columns)
        per_trace = (f"SELECT {columns} FROM ts_events WHERE trace_id = {self._mark} "
                     "ORDER BY position")
        try:  # a generator: ``_translated`` would not see errors raised while it runs
            with self._reader.connect() as conn:
                for (trace_id,) in conn.execution_options(yield_per=batch_size).execute(ids):
                    rows = conn.exec_driver_sql(per_trace, (trace_id,)).mappings().all()
                    yield trace_id, [_to_stored(row) for row in rows]
        except DBAPIError as exc:
            raise database_error(exc, self.url, "in iter_traces") from exc

    @_translated
    def trace_ids(self) -> list[str]:
        """Every trace id in the log, in order of its first event."""
        with self._reader.connect() as conn:
            rows = conn.execute(
                select(events.c.trace_id).where(events.c.trace_id.is_not(None))
                .group_by(events.c.trace_id).order_by(func.min(events.c.position)))
            return [trace for (trace,) in rows]

    @_translated
    def get_blob(self, sha256: str) -> bytes | None:
        with self._reader.connect() as conn:
            row = conn.execute(select(blobs.c.data).where(blobs.c.sha256 == sha256)).first()
            return None if row is None else bytes(row[0])

    # -- export and import (rows exactly as stored) -----------------------------------

    def iter_rows(self, *, trace_id: str | None = None, batch_size: int = 1000,
                  ) -> Iterator[dict[str, Any]]:
        """Rows exactly as stored (payload text, recorded-at, hash), in position order."""
        last = 0
        while True:
            query = select(events).where(events.c.position > last)
            if trace_id is not None:
                query = query.where(events.c.trace_id == trace_id)
            with self._reader.connect() as conn:
                rows = [dict(r) for r in conn.execute(
                    query.order_by(events.c.position).limit(batch_size)).mappings()]
            yield from rows
            if len(rows) < batch_size:
                return
            last = rows[-1]["position"]

    def import_rows(self, rows: Iterable[Mapping[str, Any]], blob_data: Iterable[bytes] = (),
                    *, same_hashes: bool, batch_size: int = 1000) -> tuple[int, str]:
        """Load exported rows into an EMPTY store in one transaction; (count, head hash).

        Ids, streams, versions, recorded-at times and payload text are kept as given;
        positions are numbered from 1 in the order given and the chain is computed anew.
        With ``same_hashes`` (a complete, unredacted export) every recomputed hash must
        equal the exported one, so the imported log is the exported log, byte for byte.
        """
        count, prev_hash = 0, GENESIS_HASH
        try:
            with paused_gc(), self._writer.begin() as conn:
                if self._head(conn)[0] != 0:
                    raise StoreError("import needs an empty store; this one already holds "
                                     "events", code="store_not_empty")
                batch: list[tuple[Any, ...]] = []
                for row in rows:
                    count += 1
                    digest = chain_hash(prev_hash, count, row["id"], row["stream"],
                                        row["version"], row["type"], row["schema_version"],
                                        row["recorded_at"], row["trace_id"],
                                        row["payload"].encode("utf-8"))
                    if same_hashes and digest != row["hash"]:
                        raise InputError(f"event {count} of the export does not hash to its "
                                         "recorded hash: the file was changed",
                                         code="export_hash_mismatch", position=count)
                    batch.append((count, row["id"], row["stream"], row["version"],
                                  row["type"], row["schema_version"], row["recorded_at"],
                                  row["trace_id"], row["payload"], digest))
                    prev_hash = digest
                    if len(batch) >= batch_size:
                        conn.exec_driver_sql(self._insert_sql, batch)
                        batch = []
                if batch:
                    conn.exec_driver_sql(self._insert_sql, batch)
                self._put_blobs(conn, list(blob_data))
        except IntegrityError as exc:
            raise StoreError(f"the database refused the import: {exc.orig}",
                             code="import_refused") from exc
        return count, prev_hash

    @_translated
    def verify(self, batch_size: int = 5000, *, expected: Expected | None = None,
               ) -> VerifyResult:
        """Recompute the hash chain and re-hash referenced captures (see ``store.verify``);
        with ``expected``, also prove the log still extends that signed head."""
        with self._reader.connect() as conn:
            return verify_log(conn, batch_size=batch_size, expected=expected)


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _field(payload: Any, name: str) -> Any:
    value = payload.get(name) if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


def _to_stored(row: Mapping[str, Any]) -> StoredEvent:
    try:
        type_name, schema_version = row["type"], row["schema_version"]
        if SCHEMA_VERSIONS.get(type_name) == schema_version:
            event = parse_event_json(row["payload"])
        else:
            event = parse_event(upcast(type_name, schema_version, json.loads(row["payload"])))
        return StoredEvent(
            position=row["position"], id=row["id"], stream=row["stream"],
            version=row["version"], type=type_name, schema_version=schema_version,
            recorded_at=dt.datetime.fromisoformat(row["recorded_at"]),
            trace_id=row["trace_id"], event=event, hash=row["hash"],
        )
    except (ValueError, TypeError, KeyError, RecursionError, InputError) as exc:
        # A row the store wrote always loads; one that does not was changed behind its back.
        position = row.get("position")
        raise StoreError(f"the event at position {position} cannot be read "
                         f"({str(exc).splitlines()[0][:200]}); run tracestore verify",
                         code="store_damaged", position=position) from None
