"""Shard-ready event rows on PostgreSQL: every uniqueness of ``ts_events`` includes the trace.

``ts_events.trace_key`` is ``coalesce(trace_id, '')`` stored as a real column (NOT NULL;
``''`` is the store's own chain): partition keys and Citus distribution columns must be
columns, not expressions.  Every unique constraint of ``ts_events`` then includes it, which
is what ``PARTITION BY HASH (trace_key)`` and ``create_distributed_table('ts_events',
'trace_key')`` require:

* primary key ``(position, trace_key)`` -- ``position`` first, so paging by position
  still reads one index;
* ``uq_ts_events_id`` on ``(id, trace_key)`` -- look-ups by id alone use its prefix;
* ``uq_ts_events_stream_version`` on ``(stream, version, trace_key)`` -- a stream's
  versions are read by its prefix;
* ``uq_ts_events_trace_version`` on ``(trace_key, trace_version)``, replacing migration
  0006's expression index.

So the database itself guarantees an id, a stream version and a trace version unique *per
trace*; uniqueness across traces is kept by the writers (ids are drawn fresh and checked
before insert, stream versions are read under the append lock).

``ts_blobs`` keeps its primary key ``sha256``: a blob is looked up by its hash alone and
stored once per store, so it is partitioned (and distributed) by ``sha256``, its own key.

SQLite is left as it was (no ``trace_key``): a file is never distributed, and a column
repeating ``trace_id`` in every row would only cost its writes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    "ALTER TABLE ts_events ADD COLUMN trace_key varchar(255)",
    # Filling existing rows is an UPDATE of an append-only table: the guard is lifted for
    # this one statement, in the migration's transaction.
    "ALTER TABLE ts_events DISABLE TRIGGER ts_events_no_change",
    "UPDATE ts_events SET trace_key = coalesce(trace_id, '')",
    "ALTER TABLE ts_events ENABLE TRIGGER ts_events_no_change",
    "ALTER TABLE ts_events ALTER COLUMN trace_key SET NOT NULL",
    "ALTER TABLE ts_events DROP CONSTRAINT ts_events_pkey",
    'ALTER TABLE ts_events ADD CONSTRAINT ts_events_pkey PRIMARY KEY ("position", trace_key)',
    "ALTER TABLE ts_events DROP CONSTRAINT ts_events_id_key",
    "ALTER TABLE ts_events ADD CONSTRAINT uq_ts_events_id UNIQUE (id, trace_key)",
    "ALTER TABLE ts_events DROP CONSTRAINT uq_ts_events_stream_version",
    "ALTER TABLE ts_events ADD CONSTRAINT uq_ts_events_stream_version "
    "UNIQUE (stream, version, trace_key)",
    "DROP INDEX uq_ts_events_trace_version",
    "ALTER TABLE ts_events ADD CONSTRAINT uq_ts_events_trace_version "
    "UNIQUE (trace_key, trace_version)",
]

DOWNGRADE = [
    "ALTER TABLE ts_events DROP CONSTRAINT uq_ts_events_trace_version",
    "CREATE UNIQUE INDEX uq_ts_events_trace_version ON ts_events "
    "((coalesce(trace_id, '')), trace_version)",
    "ALTER TABLE ts_events DROP CONSTRAINT uq_ts_events_stream_version",
    "ALTER TABLE ts_events ADD CONSTRAINT uq_ts_events_stream_version UNIQUE (stream, version)",
    "ALTER TABLE ts_events DROP CONSTRAINT uq_ts_events_id",
    "ALTER TABLE ts_events ADD CONSTRAINT ts_events_id_key UNIQUE (id)",
    "ALTER TABLE ts_events DROP CONSTRAINT ts_events_pkey",
    'ALTER TABLE ts_events ADD CONSTRAINT ts_events_pkey PRIMARY KEY ("position")',
    "ALTER TABLE ts_events DROP COLUMN trace_key",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in DOWNGRADE:
        op.execute(statement)
