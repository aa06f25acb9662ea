"""``verify``: recompute the hash chains and re-hash every stored capture they reference.

What a pass proves (docs/store.md, "What verify proves, and what it cannot"): every
trace's rows from its version 1 to its last are present, in order, and unchanged since
they were appended *relative to their predecessors in the trace* (rows stored before
per-trace chains: every row from position 1 to ``ts_meta.legacy_chain_end``, on the one
global chain they were written with); every ``capture.stored`` or ``capture.segment`` event's
raw bytes are present and hash to the address it names; and, given a signed checkpoint,
that the log still extends the head that was signed.  Without a checkpoint, deleting a
trace's tail, a whole trace, or re-hashing every row after an edit cannot be detected by
looking at the database alone.

The pass reads plain tuples through the driver and confirms each row's hash.  A row it
cannot confirm is read again with its text columns as raw bytes on SQLite (``CAST … AS
BLOB``) and judged exactly, so a payload written with another type or with invalid UTF-8
is reported as a broken chain at its position instead of failing inside the driver; so is
any text column stored as another type (a BLOB of the same bytes included: every reader
fails on it) and a stream version or schema version that is not an integer.  A capture's row is read the
same way (its type and size asked of the database, its bytes cast to bytes), so one stored
as text, as a number or as NULL, or whose size column disagrees with its bytes, is
``blob_damaged`` at the position of the event naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, LargeBinary, cast, func, select
from sqlalchemy.exc import DBAPIError

from tracestore.store.chain import (
    GENESIS_HASH, Expected, VerifyResult, chain_hash, trace_chain_hash,
)
from tracestore.store.pg_bulk import pg_settled_condition
from tracestore.store.schema import blobs, events
from tracestore.store.tree_head import tree_head

# Events that name raw bytes in ts_blobs by sha256: an ingested capture, a live segment.
# a reviewer's attached receipt (``evidence.attached``) names its bytes the same way.
_CAPTURE_TYPES = frozenset({"capture.stored", "capture.segment", "evidence.attached"})
_TEXT_COLUMNS = ("id", "stream", "type", "recorded_at", "trace_id", "payload", "hash")




def _rows(conn: Connection, batch_size: int, *, after: int = 0,
          limit: int | None = None) -> Iterator[Mapping[Any, Any]]:
    """Rows after ``after`` (at most ``limit``) with text columns as raw bytes on SQLite."""
    sqlite = conn.dialect.name == "sqlite"
    columns: list[Any] = [events.c.position, events.c.version, events.c.schema_version,
                          events.c.trace_version]
    if sqlite:  # PostgreSQL text columns are typed and always valid UTF-8
        columns += [cast(events.c[name], LargeBinary).label(name) for name in _TEXT_COLUMNS]
        columns += [func.typeof(events.c[name]).label(f"{name}_type") for name in _TEXT_COLUMNS]
    else:
        columns += [events.c[name] for name in _TEXT_COLUMNS]
    last, left = after, limit
    while left is None or left > 0:
        size = batch_size if left is None else min(batch_size, left)
        rows = conn.execute(select(*columns).where(events.c.position > last)
                            .order_by(events.c.position).limit(size)).mappings().all()
        if not rows:
            return
        yield from rows
        last = rows[-1]["position"]
        if left is not None:
            left -= len(rows)


_INTEGER_COLUMNS = ("version", "schema_version", "trace_version")


def _stored_kind(value: Any) -> str:
    """The storage class a value came back as (SQLite lets any column hold any of them)."""
    if value is None:
        return "null"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return "blob" if isinstance(value, (bytes, bytearray, memoryview)) else \
            type(value).__name__
    return {int: "integer", float: "real", str: "text"}[type(value)]


def _text(row: Mapping[Any, Any], name: str) -> str | None:
    value = row[name]
    if value is None or isinstance(value, str):
        return value
    return bytes(value).decode("utf-8")  # UnicodeDecodeError: the caller reports it


def _check_row(row: Mapping[Any, Any], prev_hash: str, expected_position: int | None,
               trace_version: int) -> tuple[str | None, dict[str, Any]]:
    """(why the row breaks its chain or None, its decoded text columns).
    ``expected_position``: the position a global-chain row must have (None for a row on
    its trace's chain); ``trace_version``: the version its trace is at before it."""
    position = row["position"]
    if expected_position is not None and position != expected_position:
        return f"position {expected_position} is missing (next stored is {position})", {}
    for name in ("payload", *_TEXT_COLUMNS):  # readers fail on a text column of another type
        stored_as = row.get(f"{name}_type", "text")
        if stored_as != "text" and not (name == "trace_id" and stored_as == "null"):
            return f"{name} is stored as {stored_as}, not text", {}
    for name in _INTEGER_COLUMNS:
        if _stored_kind(row[name]) != "integer":
            return f"{name} is stored as {_stored_kind(row[name])}, not an integer", {}
    try:
        # Any: the None check below stands for each column's own narrowing.
        text: dict[str, Any] = {name: _text(row, name) for name in _TEXT_COLUMNS}
    except UnicodeDecodeError:
        bad = next(n for n in _TEXT_COLUMNS if not _utf8(row[n]))
        return f"{bad} is not valid UTF-8", {}
    payload = text["payload"]
    if payload is None or any(text[n] is None for n in _TEXT_COLUMNS if n != "trace_id"):
        return "a required column is empty", {}
    if row["trace_version"] != trace_version + 1:
        return _version_gap(text["trace_id"], trace_version, row["trace_version"],
                            position), {}
    fields = (text["id"], text["stream"], row["version"], text["type"],
              row["schema_version"], text["recorded_at"], text["trace_id"],
              payload.encode("utf-8"))
    digest = (chain_hash(prev_hash, position, *fields) if expected_position is not None
              else trace_chain_hash(prev_hash, position, row["trace_version"], *fields))
    if digest != text["hash"]:
        return "hash does not match the event's content and its predecessor", text
    return None, text


def _version_gap(trace_id: str | None, have: int, got: Any, position: int) -> str:
    name = "the store's own chain" if trace_id is None else f"trace {trace_id!r}"
    if isinstance(got, int) and got > have + 1:
        return (f"{name} is missing version {have + 1} (the next stored is version {got}, "
                f"at position {position})")
    return f"{name} has version {got!r} at position {position}, where {have + 1} follows"


def _utf8(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return True
    try:
        bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _capture_problem(conn: Connection, payload: str, checked: set[str],
                     ) -> tuple[str | None, str | None, str]:
    """(sha256 named by a capture.stored payload, why its blob fails or None, the code of
    that failure).

    A capture already re-hashed in this pass (``checked``) is not read again: captures are
    content-addressed, so a second reference names the same bytes.
    """
    try:
        sha = json.loads(payload).get("sha256")
    except (ValueError, AttributeError):
        return None, "the capture event's payload is not a JSON object", "chain_broken"
    if not isinstance(sha, str):
        return None, "the capture event's payload names no sha256", "chain_broken"
    if sha in checked:
        return sha, None, "chain_broken"
    row = conn.execute(_blob_select(conn, sha)).first()
    if row is None:
        return sha, f"stored capture {sha[:16]}… is missing from ts_blobs", "chain_broken"
    data_type = row._mapping.get("data_type") or _stored_kind(row.data)
    if data_type != "blob":
        return sha, f"stored capture {sha[:16]}… is stored as {data_type}, not bytes", \
            "blob_damaged"
    if hashlib.sha256(row.data).hexdigest() != sha:
        return sha, (f"stored capture {sha[:16]}… was changed (its bytes no longer hash to "
                     "it)"), "chain_broken"
    damage = _size_damage(row)
    if damage is not None:
        return sha, f"stored capture {sha[:16]}… {damage}", "blob_damaged"
    return sha, None, "chain_broken"


def _blob_select(conn: Connection, sha: str) -> Any:
    """A capture's row with what the database says of its columns' types: on SQLite the
    bytes are cast to a BLOB (a TEXT value that is not UTF-8 would fail in the driver)."""
    if conn.dialect.name != "sqlite":
        return select(blobs.c.size, blobs.c.data).where(blobs.c.sha256 == sha)
    return select(blobs.c.size, cast(blobs.c.data, LargeBinary).label("data"),
                  func.typeof(blobs.c.data).label("data_type"),
                  func.typeof(blobs.c.size).label("size_type")).where(blobs.c.sha256 == sha)


def _size_damage(row: Any) -> str | None:
    """Why a ts_blobs row's size column does not record its bytes' length, or None."""
    size_type = row._mapping.get("size_type") or _stored_kind(row.size)
    if size_type != "integer":
        return f"has a size stored as {size_type}, not an integer"
    if row.size != len(row.data):
        return f"holds {len(row.data)} bytes, not the {row.size} its size column records"
    return None


# The fast pass reads plain tuples through the driver; any row it cannot confirm (a
# position gap, a payload that is not text, a hash that differs) is re-read with every text
# column as raw bytes and judged by ``_check_row``, so the reasons reported are unchanged.
_FAST_COLUMNS = "position, id, stream, version, type, schema_version, recorded_at, " \
                "trace_id, payload, hash, trace_version"


class _Walk:
    """The state of one pass: each trace's head so far, the global chain of the rows
    before per-trace chains, the captures re-hashed, the anchor."""

    def __init__(self, conn: Connection, expected: Expected | None) -> None:
        self.conn, self.expected = conn, expected
        self.prev_hash, self.count, self.last = GENESIS_HASH, 0, 0
        "Global-chain hash so far; rows verified; the last position verified."
        self.head_hash = GENESIS_HASH
        "The hash of the last row verified."
        self.heads: dict[str | None, tuple[int, str]] = {}
        self.checked: set[str] = set()
        self.row_anchor = 0 if expected is None or expected.root is not None \
            else expected.position
        "A -1 checkpoint's position: the row there must carry its hash."
        self.anchored = self.row_anchor == 0
        self.tree_checked = expected is None or expected.root is None
        self.legacy_end, self.legacy_head = _legacy_marks(conn)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        settled = "" if conn.dialect.name != "postgresql" else \
            f" AND {pg_settled_condition()}"
        self.fast_sql = (f"SELECT {_FAST_COLUMNS} FROM ts_events WHERE position > {mark}"
                         f"{settled} ORDER BY position LIMIT {mark}")

    def broken(self, position: int, reason: str, code: str = "chain_broken") -> VerifyResult:
        anchor = self.expected.position if self.expected else None
        return VerifyResult(False, self.count, position, reason, self.head_hash,
                            len(self.checked), anchor, code)

    def finish(self) -> VerifyResult:
        expected = self.expected
        if self.last < self.legacy_end:
            return self.broken(self.last + 1,
                               f"the log ends at position {self.last}, before the end of its "
                               f"global chain at {self.legacy_end} (events were deleted)")
        if expected is not None and not self.anchored:
            return self.broken(expected.position,
                               f"the event at the signed head's position {expected.position} "
                               "is gone (events were deleted)")
        if not self.tree_checked:
            result = self.tree_check()
            if result is not None:
                return result
        head = tree_head(self.heads, self.last)
        return VerifyResult(True, self.count, None, None, self.head_hash, len(self.checked),
                            expected.position if expected else None,
                            last_position=self.last, tree_size=head.size, tree_root=head.root)

    def tree_check(self) -> VerifyResult | None:
        """A -2 checkpoint: every trace's head as of its position hashes to its root."""
        expected = self.expected
        assert expected is not None
        self.tree_checked = True
        head = tree_head(self.heads, expected.position)
        if (head.size, head.root) == (expected.tree_size, expected.root):
            return None
        return self.broken(expected.position,
                           f"the traces' heads as of position {expected.position} do not hash "
                           f"to the signed tree head ({expected.tree_size} traces signed, "
                           f"{head.size} found): a trace lost events, was removed or was "
                           "rewritten")

    def fast_batch(self, batch_size: int) -> Sequence[Any] | None:
        """The next rows as plain tuples from the driver's own cursor (SQLAlchemy's
        per-row fetch would double the pass), or None when SQLite cannot decode a text
        column in them (invalid UTF-8): that batch is then walked exactly."""
        dialect = self.conn.dialect
        cursor = self.conn.connection.cursor()
        try:
            cursor.execute(self.fast_sql, (self.last, batch_size))
            return cursor.fetchall()
        except dialect.loaded_dbapi.Error as exc:
            if "could not decode" in str(exc).lower():
                return None
            raise DBAPIError.instance(self.fast_sql, None, exc, dialect.loaded_dbapi.Error,
                                      dialect=dialect) from exc
        finally:
            cursor.close()

    def walk_fast(self, rows: Sequence[Any]) -> VerifyResult | None:
        """Chain-check tuples; hand any row it cannot confirm to ``step_exact``."""
        sha256, heads, legacy_end = hashlib.sha256, self.heads, self.legacy_end
        anchor = self.row_anchor
        for (position, event_id, stream, version, type_name, schema_version, recorded_at,
             trace_id, payload, digest, trace_version) in rows:
            have, prev = heads.get(trace_id, (0, GENESIS_HASH))
            if payload.__class__ is str and trace_version == have + 1:
                if position <= legacy_end:
                    ok = position == self.last + 1
                    h = sha256(f"{self.prev_hash}\x1f{position}\x1f{event_id}\x1f{stream}"
                               f"\x1f{version}\x1f{type_name}\x1f{schema_version}"
                               f"\x1f{recorded_at}\x1f{trace_id or ''}\x1f".encode())
                else:
                    ok = self.last >= legacy_end
                    h = sha256(f"{prev}\x1f{position}\x1f{trace_version}\x1f{event_id}"
                               f"\x1f{stream}\x1f{version}\x1f{type_name}\x1f{schema_version}"
                               f"\x1f{recorded_at}\x1f{trace_id or ''}\x1f".encode())
                h.update(payload.encode())
                if ok and h.hexdigest() == digest:
                    result = self.accept(position, trace_id, trace_version, digest,
                                         type_name, payload, anchor)
                    if result is not None:
                        return result
                    continue
            result = self.step_exact()
            if result is not None:
                return result
        return None

    def accept(self, position: int, trace_id: str | None, trace_version: int, digest: str,
               type_name: str, payload: str, anchor: int) -> VerifyResult | None:
        """Advance past a row whose hash holds: its capture, the legacy head, the anchor."""
        if not self.tree_checked and position > self.expected.position:  # type: ignore[union-attr]
            result = self.tree_check()
            if result is not None:
                return result
        if type_name in _CAPTURE_TYPES:
            result = self.capture(position, payload)
            if result is not None:
                return result
        self.heads[trace_id] = (trace_version, digest)
        self.head_hash, self.last, self.count = digest, position, self.count + 1
        if position <= self.legacy_end:
            self.prev_hash = digest
            if position == self.legacy_end and self.legacy_head and digest != self.legacy_head:
                return self.broken(position, "the global chain's last event has another hash "
                                             "than ts_meta recorded when chains were split "
                                             "per trace")
        if position == anchor:
            self.anchored = True
            if digest != self.expected.hash:  # type: ignore[union-attr]
                return self.broken(position, "the event at the checkpoint's position has "
                                             "another hash than the signed head (the log was "
                                             "rewritten or forked)")
        return None

    def step_exact(self) -> VerifyResult | None:
        """Judge the next row from its raw bytes (``_check_row``); advance if it holds."""
        row = next(_rows(self.conn, 1, after=self.last, limit=1))
        return self.walk_exact([row])

    def walk_exact(self, rows: Iterable[Mapping[Any, Any]]) -> VerifyResult | None:
        anchor = self.row_anchor
        for row in rows:
            position = row["position"]
            try:
                trace_id = _text(row, "trace_id")
            except UnicodeDecodeError:
                return self.broken(position, "trace_id is not valid UTF-8")
            have, prev = self.heads.get(trace_id, (0, GENESIS_HASH))
            if position <= self.legacy_end:
                reason, text = _check_row(row, self.prev_hash, self.last + 1, have)
            elif self.last < self.legacy_end:
                reason, text = (f"position {self.last + 1} is missing (next stored is "
                                f"{position})"), {}
            else:
                reason, text = _check_row(row, prev, None, have)
            if reason is not None:
                return self.broken(position, reason)
            result = self.accept(position, trace_id, row["trace_version"], text["hash"],
                                 text["type"], text["payload"], anchor)
            if result is not None:
                return result
        return None

    def capture(self, position: int, payload: str) -> VerifyResult | None:
        sha, problem, code = _capture_problem(self.conn, payload, self.checked)
        if problem is not None:
            return self.broken(position, problem, code)
        self.checked.add(sha)  # type: ignore[arg-type]
        return None


def _legacy_marks(conn: Connection) -> tuple[int, str]:
    """(last position of the global chain, its hash) from ``ts_meta`` (0 when none)."""
    from sqlalchemy import text

    marks = conn.execute(text("SELECT key, value FROM ts_meta WHERE key IN "
                              "('legacy_chain_end', 'legacy_chain_head')")).all()
    rows: dict[str, str] = {str(key): str(value) for key, value in marks}
    try:
        end = int(rows.get("legacy_chain_end", 0))
    except ValueError:
        end = 0
    return end, str(rows.get("legacy_chain_head", ""))


#: The append-only triggers migration 0001 creates, per dialect: (name, table).
_TRIGGERS = {
    "sqlite": [(f"{t}_no_{v}", t) for t in ("ts_events", "ts_blobs") for v in ("update",
                                                                               "delete")],
    "postgresql": [(f"{t}_no_{w}", t) for t in ("ts_events", "ts_blobs")
                   for w in ("change", "truncate")],
}
#: The read-only views migrations 0003 and 0005 create.
_VIEWS = ("ts_attempts", "ts_decisions", "ts_destinations")


def missing_schema(conn: Connection) -> tuple[str, ...]:
    """The append-only triggers and views that are absent, named (``trigger X on T``,
    ``view V``); () when all are present.  ``sqlite-utils transform ts_events`` rebuilds
    the table and silently drops its triggers: this is how verify notices."""
    from sqlalchemy import text

    dialect = conn.dialect.name
    if dialect == "sqlite":
        rows = conn.execute(text("SELECT type, name, tbl_name FROM sqlite_master "
                                 "WHERE type IN ('trigger', 'view')")).all()
        triggers = {(name, table) for kind, name, table in rows if kind == "trigger"}
        views = {name for kind, name, _ in rows if kind == "view"}
    elif dialect == "postgresql":
        triggers = {tuple(row) for row in conn.execute(text(
            "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = "
            "t.tgrelid WHERE NOT t.tgisinternal AND c.relnamespace = "
            "to_regnamespace(current_schema())::oid"))}
        views = set(conn.execute(text(
            "SELECT viewname FROM pg_views WHERE schemaname = current_schema()")).scalars())
    else:
        return ()
    gone = [f"trigger {name} on {table}" for name, table in _TRIGGERS[dialect]
            if (name, table) not in triggers]
    return tuple(gone + [f"view {name}" for name in _VIEWS if name not in views])


def verify_store(conn: Connection, *, batch_size: int = 5000,
                 expected: Expected | None = None, jobs: int | None = None) -> VerifyResult:
    """``verify_log`` (on PostgreSQL with ``jobs`` worker processes: ``verify_parallel``,
    the same result), then the schema: a chain that holds still fails when an append-only
    trigger or a view is missing (``missing`` names them)."""
    import dataclasses

    from tracestore.store.verify_parallel import choose_jobs, verify_log_parallel

    workers = choose_jobs(conn, jobs)
    if workers > 1:
        result = verify_log_parallel(conn, workers, batch_size=batch_size, expected=expected)
    else:
        result = verify_log(conn, batch_size=batch_size, expected=expected)
    missing = missing_schema(conn)
    if not missing:
        return result
    if not result.ok:
        return dataclasses.replace(result, missing=missing)
    return dataclasses.replace(
        result, ok=False, missing=missing,
        reason=f"the store is missing {', '.join(missing)} (a tool that rebuilt the table, "
               "such as sqlite-utils transform, drops them; without the triggers a DELETE "
               "of the tail succeeds and the chain alone cannot show it)")


def verify_log(conn: Connection, *, batch_size: int = 5000,
               expected: Expected | None = None) -> VerifyResult:
    """Walk the log from position 1; stop at the first break (see the module doc)."""
    walk = _Walk(conn, expected)
    while True:
        start = walk.last
        rows = walk.fast_batch(batch_size)
        if rows is None:  # undecodable text somewhere in this batch: walk it exactly
            exact = list(_rows(conn, batch_size, after=start, limit=batch_size))
            result, fetched = walk.walk_exact(exact), len(exact)
        else:
            result, fetched = walk.walk_fast(rows), len(rows)
        if result is not None:
            return result
        if fetched < batch_size:
            return walk.finish()


def verify_trace_rows(rows: Iterable[Sequence[Any]], *, legacy_end: int, as_of: int,
                      ) -> tuple[VerifyResult, tuple[int, str] | None]:
    """One trace's chain from its rows in order (``LogReads.trace_rows``), without reading
    any other trace: each version follows the last, each row after ``legacy_end`` hashes
    onto the one before it.  A row stored before per-trace chains is a link of the global
    chain, which only a whole-store ``verify`` can recompute; here its version is checked
    and its hash taken as the next row's predecessor.  Also returns the trace's head as of
    position ``as_of`` (version, hash), or None when it had no row by then."""
    have, prev, count, last = 0, GENESIS_HASH, 0, 0
    at: tuple[int, str] | None = None
    for (position, event_id, stream, version, type_name, schema_version, recorded_at,
         trace_id, payload, digest, trace_version) in rows:
        reason = None
        if trace_version != have + 1:
            reason = _version_gap(trace_id, have, trace_version, position)
        elif position > legacy_end and not isinstance(payload, str):
            reason = "payload is not text"
        elif position > legacy_end and digest != trace_chain_hash(
                prev, position, trace_version, event_id, stream, version, type_name,
                schema_version, recorded_at, trace_id, payload.encode("utf-8")):
            reason = "hash does not match the event's content and its predecessor"
        if reason is not None:
            return VerifyResult(False, count, position, reason, prev, last_position=last), at
        have, prev, count, last = trace_version, digest, count + 1, position
        if position <= as_of:
            at = (trace_version, digest)
    return VerifyResult(True, count, None, None, prev, last_position=last), at
