"""Blobs and whole rows: a capture's bytes stored once by content hash (streamed into SQLite
piece by piece when large), and the export/import of rows exactly as stored.  A mixin of
``EventStore`` (``store/log.py``), which supplies the connections and the row writer."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracestore.errors import InputError, StoreError
from tracestore.store.bulk import paused_gc
from tracestore.store.chain import GENESIS_HASH, chain_hash, trace_chain_hash
from tracestore.store.dberrors import driver_message, integrity_errors

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

_BLOB_PIECE = 1 << 20  # bytes per write when a large capture is streamed into SQLite


class RowsIO:
    """Blob writes and row export/import for ``EventStore``."""

    if TYPE_CHECKING:  # supplied by EventStore and its other bases
        _dialect: str
        _mark: str

        @property
        def _writer(self) -> Engine: ...
        def _head(self, conn: Connection) -> tuple[int, str]: ...
        def _write_rows(self, conn: Connection, rows: list[tuple[Any, ...]]) -> None: ...
        def settled_sql(self, alias: str = "") -> str: ...

        def fetch_driver(self, sql: str, params: tuple[Any, ...], *,
                         during: str) -> list[Any]: ...

    def _put_blobs(self, conn: Connection, blob_data: Sequence[bytes]) -> list[str]:
        if self._dialect == "postgresql":  # one insert that skips stored ones, no look-up
            shas = [hashlib.sha256(data).hexdigest() for data in blob_data]
            rows = list({sha: (sha, len(data), data)
                         for sha, data in zip(shas, blob_data)}.values())
            if rows:
                conn.exec_driver_sql("INSERT INTO ts_blobs (sha256, size, data) VALUES "
                                     "(%s, %s, %s) ON CONFLICT (sha256) DO NOTHING", rows)
            return shas
        stored: list[str] = []
        for data in blob_data:
            sha = hashlib.sha256(data).hexdigest()
            present = conn.exec_driver_sql(
                f"SELECT 1 FROM ts_blobs WHERE sha256 = {self._mark}", (sha,)).first()
            if present is None:
                if not self._stream_blob(conn, sha, data):
                    conn.exec_driver_sql(
                        f"INSERT INTO ts_blobs (sha256, size, data) VALUES ({self._mark}, "
                        f"{self._mark}, {self._mark})", (sha, len(data), data))
            stored.append(sha)
        return stored

    def _stream_blob(self, conn: Connection, sha: str, data: bytes) -> bool:
        """Write a large capture into SQLite piece by piece (incremental blob I/O, in the
        same transaction): bound as one parameter, SQLite would hold its own copies of the
        whole capture -- as large as the input -- at the ingest's peak."""
        raw = conn.connection  # SQLAlchemy's pool proxy, or a plain sqlite3 connection
        driver = getattr(raw, "driver_connection", raw)
        if (self._dialect != "sqlite" or len(data) <= _BLOB_PIECE or driver is None
                or not hasattr(driver, "blobopen")):
            return False
        conn.exec_driver_sql("INSERT INTO ts_blobs (sha256, size, data) VALUES "
                             f"({self._mark}, {self._mark}, zeroblob({self._mark}))",
                             (sha, len(data), len(data)))
        rowid = conn.exec_driver_sql(f"SELECT rowid FROM ts_blobs WHERE sha256 = {self._mark}",
                                     (sha,)).scalar_one()
        view = memoryview(data)
        with driver.blobopen("ts_blobs", "data", rowid) as blob:
            for start in range(0, len(data), _BLOB_PIECE):
                blob.write(view[start:start + _BLOB_PIECE])
        return True

    # -- export and import (rows exactly as stored) -----------------------------------

    def iter_rows(self, *, trace_id: str | None = None, batch_size: int = 5000,
                  ) -> Iterator[dict[str, Any]]:
        """Rows exactly as stored (payload text, recorded-at, hash), in position order:
        driver tuples in batches of ``batch_size`` (keyset on position, so memory holds
        one batch), no per-row SQLAlchemy result processing."""
        from tracestore.store.reads import ROW_COLUMNS, _COLUMN_NAMES

        mark = self._mark
        names = (*_COLUMN_NAMES, "trace_version")
        sql = (f"SELECT {ROW_COLUMNS}, trace_version FROM ts_events WHERE position > {mark}"
               + (f" AND trace_id = {mark}" if trace_id is not None
                  else f" AND {self.settled_sql()}")
               + f" ORDER BY position LIMIT {int(batch_size)}")
        last = 0
        while True:
            params = (last,) if trace_id is None else (last, trace_id)
            rows = self.fetch_driver(sql, params, during="in iter_rows")
            for row in rows:
                yield dict(zip(names, row))
            if len(rows) < batch_size:
                return
            last = rows[-1][0]

    def legacy_chain_end(self) -> int:
        """The last position hashed by the global chain (rows stored before per-trace
        chains, migration 0006); 0 when every row is on its trace's chain."""
        rows = self.fetch_driver("SELECT value FROM ts_meta WHERE key = 'legacy_chain_end'",
                                 (), during="reading the store's chain marker")
        return int(rows[0][0]) if rows else 0

    def import_rows(self, rows: Iterable[Mapping[str, Any]], blob_data: Iterable[bytes] = (),
                    *, same_hashes: bool, batch_size: int = 1000,
                    legacy_chain_end: int = 0) -> tuple[int, str]:
        """Load exported rows into an EMPTY store in one transaction; (count, last hash).

        Ids, streams, versions, recorded-at times and payload text are kept as given.
        With ``same_hashes`` (a complete, unredacted export) positions are kept too, rows
        up to ``legacy_chain_end`` are hashed on the global chain they were written with and
        later ones on their trace's chain, and every recomputed hash must equal the
        exported one: the imported log is the exported log, byte for byte.  Otherwise
        positions are numbered from 1 in the order given and every row goes on its trace's
        chain.
        """
        count, digest = 0, GENESIS_HASH
        global_prev = GENESIS_HASH
        heads: dict[str | None, tuple[int, str]] = {}
        try:
            with paused_gc(), self._writer.begin() as conn:
                if self._head(conn)[0] != 0:
                    raise StoreError("import needs an empty store; this one already holds "
                                     "events", code="store_not_empty")
                batch: list[tuple[Any, ...]] = []
                for row in rows:
                    count += 1
                    position = row["position"] if same_hashes else count
                    trace = row["trace_id"]
                    trace_version = heads.get(trace, (0, ""))[0] + 1
                    args = (row["id"], row["stream"], row["version"], row["type"],
                            row["schema_version"], row["recorded_at"], trace,
                            row["payload"].encode("utf-8"))
                    if position <= legacy_chain_end:
                        digest = global_prev = chain_hash(global_prev, position, *args)
                    else:
                        prev = heads.get(trace, (0, GENESIS_HASH))[1]
                        digest = trace_chain_hash(prev, position, trace_version, *args)
                    if same_hashes and digest != row["hash"]:
                        raise InputError(f"event {count} of the export does not hash to its "
                                         "recorded hash: the file was changed",
                                         code="export_hash_mismatch", position=position)
                    heads[trace] = (trace_version, digest)
                    batch.append((position, row["id"], row["stream"], row["version"],
                                  row["type"], row["schema_version"], row["recorded_at"],
                                  trace, row["payload"], digest, trace_version))
                    if len(batch) >= batch_size:
                        self._write_rows(conn, batch)
                        batch = []
                if batch:
                    self._write_rows(conn, batch)
                self._put_blobs(conn, list(blob_data))
                self._mark_legacy_end(conn, legacy_chain_end if same_hashes else 0,
                                      global_prev if same_hashes and legacy_chain_end else "")
        except integrity_errors() as exc:
            raise StoreError(f"the database refused the import: {driver_message(exc)}",
                             code="import_refused") from exc
        return count, digest

    def _mark_legacy_end(self, conn: Connection, end: int, head: str) -> None:
        """Record where an imported store's global chain ends and its hash there (and the
        position sequence on PostgreSQL continues past the imported rows)."""
        mark = self._mark
        for key, value in (("legacy_chain_end", str(end)), ("legacy_chain_head", head)):
            conn.exec_driver_sql(f"UPDATE ts_meta SET value = {mark} WHERE key = {mark}",
                                 (value, key))
        if self._dialect == "postgresql":
            conn.exec_driver_sql("SELECT setval('ts_events_position_seq', m) FROM "
                                 "(SELECT max(position) AS m FROM ts_events) AS h "
                                 "WHERE m IS NOT NULL")
