"""Table definitions (SQLAlchemy Core) for the event log.

Alembic owns the schema: these objects describe it for queries and must match the newest
migration in ``migrations/versions``.  Nothing here creates tables.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# One row per event.  ``position`` is a global order for paging and export (contiguous on
# SQLite, reserved per append from a sequence on PostgreSQL, where a rolled-back append
# leaves a gap); ``trace_version`` is the trace's own contiguous order, unique per trace
# (an expression index on coalesce(trace_id, ''), migration 0006); (stream, version) is
# unique, which is what makes expected-version appends safe; ``hash`` chains each row to
# the previous row of its trace (``chain.trace_chain_hash``), or, for rows stored before
# migration 0006, to the previous row of the store (``chain.chain_hash``).  ``txid`` is the
# writing transaction on PostgreSQL (NULL on SQLite), for readers that page by position.
# On PostgreSQL (migration 0007) the table also has ``trace_key`` (NOT NULL,
# ``coalesce(trace_id, '')``, written by ``EventStore._row_sink``) and every uniqueness
# includes it -- primary key (position, trace_key), unique (id, trace_key), (stream,
# version, trace_key), (trace_key, trace_version) -- so it can be partitioned or sharded by
# trace.  It is not declared here: SQLite stores have no such column, and queries name the
# columns they read.
events = Table(
    "ts_events",
    metadata,
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("id", String(64), nullable=False, unique=True),
    Column("stream", String(255), nullable=False),
    Column("version", Integer, nullable=False),
    Column("type", String(64), nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("recorded_at", String(40), nullable=False),
    Column("trace_id", String(255), nullable=True),
    Column("payload", Text, nullable=False),
    Column("hash", String(64), nullable=False),
    Column("trace_version", Integer, nullable=False, server_default="0"),
    Column("txid", BigInteger, nullable=True),
    UniqueConstraint("stream", "version", name="uq_ts_events_stream_version"),
    Index("ix_ts_events_trace_position", "trace_id", "position"),
)

# Raw capture bytes, content-addressed.  Frames point into them by (sha256, offset, length).
blobs = Table(
    "ts_blobs",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

# A marker row proves the database is a tracestore database (and which format it holds).
store_meta = Table(
    "ts_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
)

from tracestore.store import STORE_MARKER  # noqa: E402,F401 - defined import-free there
